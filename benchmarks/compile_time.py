"""Cold compile time of the core, per compiled entry point, and the time to load it cached.

    python benchmarks/compile_time.py [--json] [--budget SECONDS] [--functions K] [--record]

In a child process with a fresh, empty NUMBA_CACHE_DIR, a workload that uses every op
kind, a fault, poison, a crash image and the statistics is run twice: the first time
compiles everything (numba's compile events attribute the seconds to the entry point that
Python called, the callees compiled for it included), the second must find nothing left to
compile. A second child loads the same workload from that cache. Exit status 1 when the
cold compile exceeds --budget.

`--functions K` also prints the K functions whose own compile took longest (their nested
compiles left out: numba compiles a callee while it types its caller), marked `inlined`
for the helpers LLVM inlines into their callers: each of those is still typed, optimised
and compiled to machine code on its own once, besides its copies in its callers.

`--record` writes the cold compile's seconds, the host (/proc/cpuinfo's model name, the
core count, LLVM's name for the CPU), the date and numba's version to emu/cold_compile.json:
the one source of the figure, which the first-run notice reads and README.md and
docs/performance.md quote (tests/test_cold_compile.py holds them to it).
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join(ROOT, "emu", "cold_compile.json")

CHILD = r"""
import json, sys, time
t_start = time.perf_counter()
from numba.core import event
entries, own, stack = {}, {}, []
class Top(event.Listener):
    def on_start(self, ev):
        stack.append([time.perf_counter(), 0.0])   # [start, seconds in nested compiles]
    def on_end(self, ev):
        t, nested = stack.pop()
        s = time.perf_counter() - t
        d = ev.data["dispatcher"]
        name = f"{d.py_func.__module__}.{d.py_func.__name__}"
        if stack:
            stack[-1][1] += s
        else:
            entries[name] = entries.get(name, 0.0) + s
        own[name] = [own.get(name, [0.0])[0] + s - nested,
                     bool(d.targetoptions.get("forceinline"))]
sys.path.insert(0, sys.argv[1])
with event.install_listener("numba:compile", Top()):
    from benchmarks.compile_time import workload
    t0 = time.perf_counter()
    workload()
    first = time.perf_counter() - t0
    n = len(entries)
    workload()
    assert len(entries) == n, "the second run compiled again"
print(json.dumps({"entries": entries, "functions": own, "first_run_s": first,
                  "process_s": time.perf_counter() - t_start}))
"""


def workload():
    """Every op kind on the shipped profiles' media kinds, the scheduler of one program per
    core, a fault, poison and a crash."""
    from emu import Machine, UnmappedAccess
    from isa import Op, Program
    m = Machine("cascadelake-optane")
    d, pm = m.regions["dram0"]["base"] + (1 << 20), m.regions["pmem0"]["base"] + (1 << 20)
    m.write(d, bytes(range(256)) * 16)
    m.write(d + 16384, (3).to_bytes(8, "little"))   # an index for load_indexed
    p = Program()
    p.load(d).load(d + 60, 8).load(d, dependent=True).store(pm, b"x" * 8).movnt(pm + 64, b"y" * 8)
    p.clflush(pm).clflushopt(pm + 64).clwb(pm + 128).sfence().lfence().mfence().stac().clac()
    p.rep_movsb(pm + 4096, d, 3000).nt_copy(pm + 8192, d, 3000).careful_copy(d + 8192, d, 300)
    p.flush_range(pm + 4096, 3000, Op.CLWB).work(10).site("f").peer_write(d + 4096, b"z" * 8)
    p.peer_read(d + 4096, 8).index_mask(1, 4).load_masked(d + 8, d)
    with p.guarded(7, 4):
        p.load(d + 512)
    p.load(d + 16384).load_indexed(d, 64, 1)
    m.run(p)
    m.run([Program().load(d)])   # the scheduler of one program per core
    m.poison(pm + 4096)
    try:
        m.run(Program().load(pm + 4096))
    except Exception:   # MachineCheck: the point is the compiled fault path
        pass
    try:
        m.run(Program().load(1 << 50))
    except UnmappedAccess:
        pass
    m.crash().read(pm, 64)
    m.read(d, 64)
    m.stats()
    m.cached(d)


def child(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", CHILD, ROOT], env=env, capture_output=True,
                       text=True, cwd=ROOT)
    if r.returncode:
        sys.exit(f"compile_time: child failed:\n{r.stderr}")
    out = json.loads(r.stdout.splitlines()[-1])
    out["wall_s"] = time.perf_counter() - t
    return out


def host():
    """This machine as the record names it: the CPU's model name and core count."""
    try:
        with open("/proc/cpuinfo") as f:
            models = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
    except OSError:   # not Linux
        models = []
    from llvmlite import binding
    model = models[0] if models else platform.processor() or platform.machine()
    return f"{model}, {os.cpu_count()} cores, LLVM CPU {binding.get_host_cpu_name()}"


def record(seconds, path=RECORD):
    """Write the cold compile's figure with where and when it was measured."""
    import numba
    rec = {"seconds": round(seconds, 1), "host": host(),
           "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
           "numba": numba.__version__,
           "measured_by": "python benchmarks/compile_time.py --record"}
    with open(path, "w") as f:
        f.write(json.dumps(rec, indent=1) + "\n")
    return rec


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds (default 60)")
    ap.add_argument("--functions", type=int, default=0, metavar="K",
                    help="list the K functions with the longest own compile")
    ap.add_argument("--record", action="store_true",
                    help=f"write the figure to {os.path.relpath(RECORD, ROOT)}")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="emu-numba-cache-") as cache:
        cold = child(cache)
        warm = child(cache)
    res = {"cold_compile_s": sum(cold["entries"].values()), "cold_entries_s": cold["entries"],
           "cold_functions_s": cold["functions"], "cold_first_run_s": cold["first_run_s"],
           "cached_first_run_s": warm["first_run_s"],
           "cached_entries_compiled": len(warm["entries"]),
           "cached_process_s": warm["process_s"], "budget_s": args.budget}
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print(f"cold compile: {res['cold_compile_s']:.1f} s (budget {args.budget:g} s); "
              f"first run with a warm cache: {res['cached_first_run_s']:.2f} s "
              f"({res['cached_entries_compiled']} entries compiled; whole process "
              f"{res['cached_process_s']:.2f} s)")
        for name, s in sorted(cold["entries"].items(), key=lambda kv: -kv[1]):
            print(f"  {s:7.2f} s  {name}")
        if args.functions:
            fs = cold["functions"]
            inl = [s for s, inlined in fs.values() if inlined]
            print(f"own compile of {len(fs)} functions: {sum(s for s, _ in fs.values()):.1f} s; "
                  f"of the {len(inl)} inlined helpers: {sum(inl):.1f} s")
            top = sorted(fs.items(), key=lambda kv: -kv[1][0])[:args.functions]
            for name, (s, inlined) in top:
                print(f"  {s:7.2f} s  {name}{'  inlined' if inlined else ''}")
    if args.record:
        rec = record(res["cold_compile_s"])
        print(f"recorded {rec['seconds']} s ({rec['host']}, {rec['date']}) in "
              f"{os.path.relpath(RECORD, ROOT)}: the figures README.md and docs/performance.md "
              f"quote must follow (tests/test_cold_compile.py)", file=sys.stderr)
    return 1 if res["cold_compile_s"] > args.budget else 0


if __name__ == "__main__":
    sys.exit(main())
