"""The cost per op of a machine of N cores against one core, in one run.

    python benchmarks/cores.py [--ops N] [--cores 1,2,4,8] [--repeat K] [--json]

Each core runs the same kind of program over its own 64 MiB of the skylake-ddr4 profile
(prefetchers on, timing on, functional memory off): --ops 8-byte accesses a core, a mix of random
loads (70%), random stores (20%) and, every tenth, a locked op or a store to one of 64 lines
every core shares (10%: coherence traffic: HITM transfers, upgrades, invalidations). The
same programs (numpy default_rng(k) for core k) run on Machine(cores=N) for each N; the
figure is wall seconds of Machine.run per op of all cores, the best of --repeat fresh
machines, the Ns taking turns. The ratio to N = 1 is what a core's op costs with N - 1
others: the scheduler's choice of the next core (a scan of N clocks an op), the runs'
entry per op, and the coherence work (snoops of N - 1 cores on each private miss).
Before anything is timed every N runs a tiny program (the compile or the cache load).
"""
import argparse
import json
import sys
import time

import numpy as np

from emu import Machine
from isa import Program

PROFILE = "skylake-ddr4"
SPAN = 64 << 20      # each core's own bytes
SHARED_LINES = 64


def program(k, ops, base, shared):
    rng = np.random.default_rng(k)
    own = base + k * SPAN + rng.integers(0, SPAN // 8, ops) * 8
    kind = rng.random(ops)
    p = Program(capacity=ops + 1)
    for a, x in zip(own.tolist(), kind.tolist()):
        if x < 0.7:
            p.load(a)
        elif x < 0.9:
            p.store(a, size=8, value=1)
        elif x < 0.95:
            p.lock_rmw(shared + 64 * int(x * 1e6 % SHARED_LINES), size=8, value=1)
        else:
            p.store(shared + 64 * int(x * 1e6 % SHARED_LINES) + 8 * k % 64, size=8, value=1)
    return p


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", type=int, default=200_000, help="ops a core (default: %(default)s)")
    ap.add_argument("--cores", default="1,2,4,8", help="the Ns (default: %(default)s)")
    ap.add_argument("--repeat", type=int, default=3, help="fresh machines an N (default: 3)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    ns = [int(x) for x in a.cores.split(",")]
    base = Machine(PROFILE).regions["dram0"]["base"]
    shared = base + max(ns) * SPAN
    programs = {n: [program(k, a.ops, base, shared) for k in range(n)] for n in ns}
    t = time.perf_counter()
    for n in ns:
        Machine(PROFILE, cores=n).run([Program().load(base)] * n if n > 1
                                      else Program().load(base))
    compile_s = time.perf_counter() - t
    best = dict.fromkeys(ns, float("inf"))
    hitm = {}
    for _ in range(a.repeat):
        for n in ns:
            m = Machine(PROFILE, functional=False, cores=n)
            t = time.perf_counter()
            m.run(programs[n] if n > 1 else programs[n][0])
            best[n] = min(best[n], (time.perf_counter() - t) / (n * a.ops))
            hitm[n] = m.stats()["levels"]["llc"]["peer_transfers"]
    out = {n: {"ns_per_op": best[n] * 1e9, "vs_one_core": best[n] / best[ns[0]],
               "hitm": hitm[n]} for n in ns}
    if a.json:
        print(json.dumps({"compile_s": compile_s, "cores": out}))
        return
    print(f"{PROFILE}, {a.ops} ops a core, best of {a.repeat} (compile or load: "
          f"{compile_s:.1f} s)", file=sys.stderr)
    print(f"{'cores':>5} {'ns/op':>8} {'vs ' + str(ns[0]):>7} {'HITM':>8}")
    for n, d in out.items():
        print(f"{n:>5} {d['ns_per_op']:>8.1f} {d['vs_one_core']:>7.2f} {d['hitm']:>8}")


if __name__ == "__main__":
    main()
