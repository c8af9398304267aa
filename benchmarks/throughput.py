"""Throughput of the emulator against pycachesim on the same access traces, in one run.

    python benchmarks/throughput.py [--json] [--scale F] [--repeat K]

Both sides model L1 32 KiB 8-way, L2 1 MiB 16-way, L3 8 MiB 16-way, LRU, 64-byte lines,
write-back + write-allocate. The emulator runs the "skylake-ddr4" profile (whose L1 and L2
have exactly that geometry; its LLC is non-inclusive like pycachesim's) with the prefetchers
off and the LLC overridden to 8 MiB 16-way LRU; its timing model is always on.

Traces (lengths are multiplied by --scale):
  seq_read_64MiB        8M 8-byte loads reading 64 MiB sequentially; functional off.
  random_10M_256MiB     10M 8-byte loads, uniform over 256 MiB, 8-byte aligned
                        (numpy default_rng(0)); functional off.
  copy_16KiB_ring_4MiB  2048 copies of a 16 KiB source into a 4 MiB ring (the ring is
                        filled 8 times; 8M accesses): per 8-byte word, a load from the
                        source then a store to the ring. The emulator runs with functional
                        data on: its STORE ops carry the source word as IMM (DATA=-1), and
                        the ring's bytes are checked against the source afterwards.
                        Also run once more with fast-forward (one fill of the ring as the
                        body of Machine.run(repeat=fills)): its row must end at the same
                        cycle with the same counters, and says how many fills it skipped.

pycachesim is driven through its fastest interface that replays exactly the same ordered
access sequence (see PCS_INTERFACE below and measurements in the docstring of pcs_copy):
  loads only: `cs.load(list_of_int, length=8)` -> backend iterload, one C loop.
  copy:       `cs.loadstore([((src,), (dst,)), ...], length=8)` -> backend loadstore, one C
              loop; each item's loads run before its stores, so one (load, store) pair per
              item keeps the exact load/store alternation.
Its scalar `load(addr)`/`store(addr)` are not used: they parse the address with the "I"
format (32-bit, truncating) into a C long whose upper half is left uninitialised, and they
cost a Python call per access anyway (measured slower than loadstore).

Timing: the trace/Program construction (numpy op array, Program validation: the loads
trace's batch rows are checked as they are added, the copy's array by from_array; Python
int lists/tuples for pycachesim) and the simulator set-up are timed apart from the
simulation; the throughput is accesses / simulation seconds (`Machine.run`, which reads a
validated program's ops only to run them, resp. the one pycachesim call), the best of
--repeat replays (default 3), each on a fresh simulator, on both sides, the two sides'
replays taking turns (emulator, pycachesim, emulator, ...). Before anything is
timed the emulator runs a tiny warm-up program; its wall time is `compile_s` (numba compile, or load from
numba's on-disk cache when the core was compiled before).

Output: a table per trace with both throughputs and their ratio (emulator / pycachesim),
construction times, peak RSS, and the per-level hit/miss counts of both sides as a sanity
check. The emulator's counts are shown in pycachesim's counting convention (see
tests/test_pycachesim.py, point (D)): L1 HIT = load hits, MISS = load + store misses;
L2/L3 HIT = load + store (RFO) hits, MISS = load + store misses + write-back misses. For
load-only traces both sides should agree exactly; for the copy, stores that hit are not a
use in pycachesim's LRU and its write-back misses fetch lines from below, so the levels
below L1 may differ slightly.

--json prints only {"traces": {NAME: {"emu_per_s", "pycachesim_per_s", "ratio"}},
"compile_s": c} on stdout; the human-readable report then goes to stderr.
"""
import argparse
import gc
import json
import os
import resource
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (ROOT, os.path.join(ROOT, "tests")):  # tests/reference_cache.py: the pycachesim set-up
    if _p not in sys.path:
        sys.path.insert(0, _p)
from reference_cache import pcs_hierarchy  # noqa: E402

MIB = 1 << 20
LINE = 64
L1 = (32 * 1024, 8)
L2 = (1 * MIB, 16)
L3 = (8 * MIB, 16)
EMU_PROFILE = "skylake-ddr4"
EMU_OVERRIDES = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none",
                 "cache.llc.size_bytes": L3[0], "cache.llc.ways": L3[1],
                 "cache.llc.policy": "lru"}
EMU_LEVELS = ("l1d", "l2", "llc")

SEQ_BYTES = 64 * MIB
RANDOM_N = 10_000_000
RANDOM_SPAN = 256 * MIB
COPY_BYTES = 16 * 1024
RING_BYTES = 4 * MIB
COPY_ACCESSES = 8 * MIB          # ~8M accesses: 2048 copies, the ring filled 8 times
COPY_SRC = 1 << 30               # source buffer at 1 GiB, ring at 2 GiB (both in dram0)
COPY_RING = 2 << 30

PCS_INTERFACE = {
    "seq_read_64MiB": "cs.load(list_of_int, length=8) (backend iterload)",
    "random_10M_256MiB": "cs.load(list_of_int, length=8) (backend iterload)",
    "copy_16KiB_ring_4MiB": "cs.loadstore([((src,), (dst,)), ...], length=8) "
                            "(backend loadstore, one load+store pair per item)",
}


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # Linux: KiB


class Timer:
    def __enter__(self):
        self.t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.s = time.perf_counter() - self.t


REPEAT = 3   # --repeat


def best_of(*sides):
    """Each side, (setup, replay), sets up a fresh simulator (`setup()`) and replays the
    trace on it (`replay(sim)`, the timed part) --repeat times, the sides in turn (A B A B
    ...): a burst of the machine's other guests then falls on both sides' replays rather
    than on one side's. The best time of each side is kept, as timeit does: the other
    guests only ever add time, and a simulation of a few hundred milliseconds moves by tens
    of percent with them. Returns per side (setup_s, sim_s, the last simulator, replay's
    last result); results are the same every time (deterministic)."""
    best, last = [None] * len(sides), [None] * len(sides)
    for _ in range(REPEAT):
        for k, (setup, replay) in enumerate(sides):
            last[k] = None   # the side's previous simulator goes before its next is made
            with Timer() as setup_t:
                sim = setup()
            with Timer() as sim_t:
                out = replay(sim)
            best[k] = sim_t.s if best[k] is None else min(best[k], sim_t.s)
            last[k] = (setup_t.s, sim, out)
            del sim, out
    return [(setup_s, b, sim, out) for (setup_s, sim, out), b in zip(last, best)]


def measure(*sides):
    """Run the sides, each (build_s, setup, replay, finish), with best_of; returns per side
    the dict of its times and finish(simulator, replay's result)."""
    runs = best_of(*[(setup, replay) for _, setup, replay, _ in sides])
    return [dict(build_s=build_s, setup_s=setup_s, sim_s=sim_s, **finish(sim, out))
            for (build_s, _, _, finish), (setup_s, sim_s, sim, out) in zip(sides, runs)]


# ------------------------------------------------------------------ traces
def seq_trace(scale):
    n = max(1, round(SEQ_BYTES // 8 * scale))
    return np.arange(n, dtype=np.int64) * 8


def random_trace(scale):
    n = max(1, round(RANDOM_N * scale))
    return np.random.default_rng(0).integers(0, RANDOM_SPAN // 8, n, dtype=np.int64) * 8


def copy_trace(scale):
    """(src_addrs, dst_addrs, src_words): pair k loads src_addrs[k] then stores dst_addrs[k]."""
    words = COPY_BYTES // 8
    copies = max(1, round(COPY_ACCESSES // (2 * words) * scale))
    k = np.arange(copies * words, dtype=np.int64)
    src = COPY_SRC + (k % words) * 8
    dst = COPY_RING + (k * 8) % RING_BYTES
    src_words = (np.arange(words, dtype=np.int64) * 0x0101010101010101) ^ 0x5A5A5A5A5A5A5A5A
    return src, dst, src_words


# ------------------------------------------------------------------ emulator
def emu_machine(functional):
    from emu.machine import Machine
    return Machine(EMU_PROFILE, dict(EMU_OVERRIDES), functional=functional)


def emu_warmup():
    """Tiny runs touching the load and store paths, functional off and on."""
    from isa.program import Program
    for functional in (False, True):
        m = emu_machine(functional)
        p = Program()
        p.loads(np.arange(0, 4096, 8, dtype=np.int64), 8)
        p.stores(np.arange(8192, 8192 + 4096, 8, dtype=np.int64), 8)
        p.store(64, value=7)
        m.run(p)
        m.stats()


def emu_stats(m):
    s = m.stats()["levels"]
    out = []
    for i, name in enumerate(EMU_LEVELS):
        e = s[name]
        if i == 0:
            hit = e["load_hits"]
            miss = e["load_misses"] + e["store_misses"]
        else:
            hit = e["load_hits"] + e["store_hits"]
            miss = e["load_misses"] + e["store_misses"] + e["writeback_in_misses"]
        out.append({"hit": hit, "miss": miss, "raw_hits": e["hits"], "raw_misses": e["misses"],
                    "dirty_writebacks": e["dirty_writebacks"]})
    return out


def emu_loads(addrs):
    """The loads trace's side on the emulator (measure's (build_s, setup, replay, finish))."""
    from isa.program import Program
    with Timer() as build:
        p = Program(capacity=len(addrs)).loads(addrs, 8)
    return (build.s, lambda: emu_machine(functional=False), lambda m: m.run(p),
            lambda m, _: {"levels": emu_stats(m)})


def copy_ops(src, dst, src_words):
    """The copy trace's op array: each source word loaded, then stored to its destination."""
    from isa.ops import COL_ADDR, COL_DATA, COL_IMM, COL_OP, COL_SIZE, N_COLS, Op
    ops = np.zeros((2 * len(src), N_COLS), dtype=np.int64)
    ops[0::2, COL_OP] = int(Op.LOAD)
    ops[0::2, COL_ADDR] = src
    ops[1::2, COL_OP] = int(Op.STORE)
    ops[1::2, COL_ADDR] = dst
    ops[1::2, COL_IMM] = np.resize(src_words, len(dst))   # store the word just loaded
    ops[:, COL_SIZE] = 8
    ops[:, COL_DATA] = -1
    return ops


def emu_copy(src, dst, src_words, fast_forward=False):
    """The copy trace's side on the emulator (measure's (build_s, setup, replay, finish));
    with fast_forward, one fill of the ring as a body run with Machine.run(repeat=fills)
    (emu.fastforward: the same result), the rest after it."""
    from isa.program import Program
    words = len(src_words)
    fill = 2 * words * (RING_BYTES // COPY_BYTES)   # ops of one pass over the ring
    fills = len(src) * 2 // fill if fast_forward else 0
    with Timer() as build:
        ops = copy_ops(src, dst, src_words)
        body = Program.from_array(ops[:fill]) if fills else None
        p = Program.from_array(ops[fills * fill:])
        del ops
    def setup():
        m = emu_machine(functional=True)
        m.write(COPY_SRC, src_words)                           # the source, placed untimed
        return m

    def replay(m):
        skipped = m.run(body, repeat=fills, drain=False).fast_forwarded if fills else 0
        if len(p):
            m.run(p)
        else:
            m.drain()
        return skipped

    def finish(m, skipped):
        # functional check: the first and the last copy's destination hold the source bytes
        copies = len(src) // words
        payload = src_words.tobytes()
        for c in {0, copies - 1}:
            at = COPY_RING + (c * COPY_BYTES) % RING_BYTES
            if m.read(at, COPY_BYTES) != payload:
                raise RuntimeError(f"copy {c}: ring bytes at {at:#x} differ from the source")
        return {"levels": emu_stats(m), "functional_check": "ok", "end_cycle": m.cycles,
                "fast_forwarded": skipped}

    return build.s, setup, replay, finish


# ------------------------------------------------------------------ pycachesim
def pcs_stats(caches):
    return [{"hit": c.HIT_count, "miss": c.MISS_count, "loads": c.LOAD_count,
             "stores": c.STORE_count, "evicts": c.EVICT_count} for c in caches]


def _pcs_side(make_trace, replay, geometry=(L1, L2, L3)):
    """A trace's side on pycachesim (measure's (build_s, setup, replay, finish))."""
    with Timer() as build:
        trace = make_trace()
    return (build.s, lambda: pcs_hierarchy(list(geometry)), lambda h: replay(h[0], trace),
            lambda h, _: {"levels": pcs_stats(h[1])})


def pcs_loads(addrs):
    return _pcs_side(addrs.tolist, lambda cs, t: cs.load(t, length=8))


def pcs_copy(src, dst):
    """Interfaces that replay the exact order, measured on 420k load/store pairs
    (M accesses/s of the simulation call; all gave identical counters):
      loadstore, one ((src,), (dst,)) item per pair      6.7   <- used
      loadstore, one ([src], [dst]) item per pair        4.6
      loadstore, one item per access ([a], None)/(None, [a])  5.6
      backend iterload((a,)) / iterstore((b,)) per access 1.9 (a Python call per access)
      backend load(a) / store(b) per access              2.6 (also unfaithful, see top)
      CacheSimulator.load(a) / .store(b) per access      0.3
    Separate load and store chunks would reorder the accesses, so they are not an option."""
    return _pcs_side(
        lambda: list(zip(((a,) for a in src.tolist()), ((b,) for b in dst.tolist()))),
        lambda cs, t: cs.loadstore(t, length=8))


# ------------------------------------------------------------------ driver
def run_trace(name, scale):
    gc.collect()
    gc.disable()     # no container garbage is made in the timed calls; keeps builds fair
    try:
        if name == "copy_16KiB_ring_4MiB":
            src, dst, words = copy_trace(scale)
            n = 2 * len(src)
            emu, pcs = measure(emu_copy(src, dst, words), pcs_copy(src, dst))
            emu["peak_rss_mib"] = peak_rss_mib()
            gc.collect()
            ff, = measure(emu_copy(src, dst, words, fast_forward=True))
            ff["per_s"] = n / ff["sim_s"]
            # exact: the same end cycle and counters as the plain run, or this row is void
            ff["same_as_plain"] = (ff["end_cycle"], ff["levels"]) == (emu["end_cycle"], emu["levels"])
            emu["fast_forward"] = ff
        else:
            addrs = seq_trace(scale) if name == "seq_read_64MiB" else random_trace(scale)
            n = len(addrs)
            emu, pcs = measure(emu_loads(addrs), pcs_loads(addrs))
            emu["peak_rss_mib"] = peak_rss_mib()
        pcs["peak_rss_mib"] = peak_rss_mib()
    finally:
        gc.enable()
    emu["per_s"] = n / emu["sim_s"]
    pcs["per_s"] = n / pcs["sim_s"]
    return {"accesses": n, "emu": emu, "pcs": pcs, "ratio": emu["per_s"] / pcs["per_s"]}


def report(results, compile_s, import_s, scale, out):
    p = lambda *a: print(*a, file=out)  # noqa: E731
    p(f"cacheline-emu vs pycachesim throughput (scale {scale:g}); geometry L1 32KiB/8w, "
      f"L2 1MiB/16w, L3 8MiB/16w, LRU, 64B lines")
    p(f"emulator warm-up (compile or cache load): compile_s = {compile_s:.2f} s "
      f"(imports before it: {import_s:.2f} s)")
    for name, r in results.items():
        e, c = r["emu"], r["pcs"]
        p("")
        p(f"== {name}: {r['accesses']:,} accesses")
        p(f"   {'':12s} {'accesses/s':>14s} {'sim s':>8s} {'build s':>8s} {'setup s':>8s} "
          f"{'peak RSS MiB':>13s}")
        for label, d in (("emulator", e), ("pycachesim", c)):
            p(f"   {label:12s} {d['per_s']:14,.0f} {d['sim_s']:8.2f} {d['build_s']:8.2f} "
              f"{d['setup_s']:8.2f} {d['peak_rss_mib']:13,.0f}")
        p(f"   ratio emulator/pycachesim: {r['ratio']:.2f}")
        p(f"   pycachesim interface: {PCS_INTERFACE[name]}")
        if "functional_check" in e:
            p(f"   emulator functional data on; ring bytes == source: {e['functional_check']}")
        if "fast_forward" in e:
            f = e["fast_forward"]
            p(f"   emulator with fast-forward (one ring fill repeated, {f['fast_forwarded']} of "
              f"them applied, not run): {f['per_s']:,.0f} accesses/s, "
              f"{f['per_s'] / c['per_s']:.2f}x pycachesim; same end cycle and counters as "
              f"without: {f['same_as_plain']}")
        p(f"   {'level':6s} {'emu hit':>12s} {'pcs hit':>12s} {'emu miss':>12s} "
          f"{'pcs miss':>12s}   emu dirty wb / pcs evict")
        for lv, ee, cc in zip(("L1", "L2", "L3"), e["levels"], c["levels"]):
            p(f"   {lv:6s} {ee['hit']:12,} {cc['hit']:12,} {ee['miss']:12,} {cc['miss']:12,}"
              f"   {ee['dirty_writebacks']:,} / {cc['evicts']:,}")
    p("")
    p(f"peak RSS of the whole run: {peak_rss_mib():,.0f} MiB (ru_maxrss; per-trace figures "
      f"above are the process peak so far)")


TRACES = ("seq_read_64MiB", "random_10M_256MiB", "copy_16KiB_ring_4MiB")


def main(argv=None):
    global REPEAT
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print only a JSON summary on stdout")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the trace lengths")
    ap.add_argument("--repeat", type=int, default=REPEAT,
                    help=f"replays of each trace per side, the best kept (default {REPEAT})")
    args = ap.parse_args(argv)
    if args.scale <= 0:
        ap.error("--scale must be positive")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    REPEAT = args.repeat

    with Timer() as imp:
        import cachesim  # noqa: F401

        import emu.machine  # noqa: F401
    with Timer() as warm:
        emu_warmup()
    results = {name: run_trace(name, args.scale) for name in TRACES}

    report(results, warm.s, imp.s, args.scale, sys.stderr if args.json else sys.stdout)
    if args.json:
        summary = {n: {"emu_per_s": r["emu"]["per_s"], "pycachesim_per_s": r["pcs"]["per_s"],
                       "ratio": r["ratio"]} for n, r in results.items()}
        for n, r in results.items():
            if "fast_forward" in r["emu"]:
                f = r["emu"]["fast_forward"]
                summary[n]["fast_forward"] = {"emu_per_s": f["per_s"],
                                              "ratio": f["per_s"] / r["pcs"]["per_s"],
                                              "fast_forwarded": f["fast_forwarded"],
                                              "same_as_plain": f["same_as_plain"]}
        print(json.dumps({"traces": summary, "compile_s": warm.s}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
