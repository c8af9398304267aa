"""Instructions the compiled core executes per op, counted by valgrind's callgrind.

    python benchmarks/instructions.py [--ops N] [--traces l1hit,lineseq,seq,rand] [--cpu NAME]
                                      [--json]

Wall time on a shared 2-core machine moves by 30-50% between runs; an instruction count
does not move at all for the same code and input, so it shows small changes to the core
that wall time cannot (it is not a time: host-cache misses and branch mispredictions are
not in it). Per trace, two runs under callgrind: one builds, validates and runs N plain
8-byte loads, one only builds and validates them; the difference over N is the core's
instructions per load. The two processes' fixed work differs by a few million
instructions from run to run, so N is large (2M: repeated counts agree to about 10
instructions per load; at 200k they differed by up to 250).

The core is compiled for a generic x86-64 (NUMBA_CPU_NAME=generic), first outside valgrind:
numba keys its on-disk cache on the CPU, and valgrind's CPU differs from the host's, so
without this the core would be compiled inside valgrind (hours). `--cpu NAME` builds for
another LLVM CPU instead (`host`: this machine's, as the benchmarks run it), so that code
the generic build cannot show (AVX2 compares) is counted too; valgrind must execute that
CPU's instructions (it runs AVX2, not AVX-512). Needs valgrind.

Traces (emulator set-up of benchmarks/throughput.py, functional data off):
  l1hit    loads cycling through 16 KiB (every load hits L1)
  chase    l1hit's loads, each dependent on the one before (FLAG_DEPENDENT: a pointer
           chase, as dmapool-test's list walks)
  lineseq  one load per line, sequential (every load misses every level)
  seq      sequential 8-byte loads (trace (a) of throughput.py)
  rand     uniform random 8-byte loads over 256 MiB (trace (b))
  copy     trace (c): 16 KiB copies into a 4 MiB ring, a load and a store of 8 bytes per
           word, functional data on (counted per op: a load or a store)
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
TRACES = ("l1hit", "chase", "lineseq", "seq", "rand", "copy")


def trace(kind, n):
    from benchmarks import throughput as tb
    if kind == "copy":
        return copy_trace(n)[0]
    if kind in ("l1hit", "chase"):
        return (np.arange(n, dtype=np.int64) * 8) % 16384
    if kind == "lineseq":
        return np.arange(n, dtype=np.int64) * 64
    if kind == "seq":
        return np.arange(n, dtype=np.int64) * 8
    if kind == "rand":
        return np.random.default_rng(0).integers(0, tb.RANDOM_SPAN // 8, n, dtype=np.int64) * 8
    raise ValueError(f"unknown trace {kind!r}: one of {', '.join(TRACES)}")


def copy_trace(n):
    """(trace (c)'s first n ops (n // 2 words copied), the source's words)."""
    from benchmarks import throughput as tb
    src, dst, words = tb.copy_trace(1.0)
    return tb.copy_ops(src[:n // 2], dst[:n // 2], words), words


def child(kind, n, execute):
    from benchmarks import throughput as tb
    from isa.program import Program
    tb.emu_warmup()
    m = tb.emu_machine(functional=kind == "copy")
    if kind == "copy":
        ops, words = copy_trace(n)
        p = Program.from_array(ops)
        if execute:
            m.write(tb.COPY_SRC, words)
    else:
        p = Program(capacity=max(n, 1)).loads(trace(kind, n), 8, dependent=kind == "chase")
    if execute:
        m.run(p)
    else:
        p.validate()


def callgrind_env(cpu="generic", **extra):
    """The environment of a counted child: the core built for LLVM CPU `cpu` (valgrind's CPU
    is not the host's, and numba keys its cache on the CPU: a named one is the same inside
    and outside); hash randomisation and idle OpenBLAS threads change the processes' fixed
    work from run to run, so both are pinned and counts repeat exactly."""
    features = ""   # the CPU model's own: numba would read CPUID, which valgrind reports otherwise
    if cpu == "host":   # this machine's name and features, read here: the benchmarks' build
        from llvmlite import binding
        from numba.core.codegen import get_host_cpu_features
        cpu, features = binding.get_host_cpu_name(), get_host_cpu_features()
    return dict(os.environ, NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES=features, PYTHONHASHSEED="0",
                OPENBLAS_NUM_THREADS="1", **extra)


def callgrind(kind, n, execute, env):
    with tempfile.TemporaryDirectory() as d:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/out",
               sys.executable, os.path.abspath(__file__), "--child", kind, str(n),
               "run" if execute else "build"]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        m = re.search(r"Collected : (\d+)", r.stderr)
        if r.returncode or not m:
            raise RuntimeError(f"callgrind failed for {kind}:\n{r.stderr[-2000:]}")
        return int(m.group(1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=2_000_000)
    ap.add_argument("--traces", default=",".join(TRACES))
    ap.add_argument("--cpu", default="generic",
                    help="LLVM CPU to build the core for (host: this machine's)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, n, mode = args.child
        child(kind, int(n), mode == "run")
        return
    kinds = args.traces.split(",")
    for k in kinds:
        trace(k, 1)   # an unknown name fails here, before anything runs
    if not shutil.which("valgrind"):
        sys.exit("instructions.py needs valgrind (apt-get install valgrind)")
    env = callgrind_env(args.cpu)
    for k in kinds:   # compile (or load) the core outside valgrind, for every trace
        subprocess.run([sys.executable, os.path.abspath(__file__), "--child", k, "64", "run"],
                       env=env, check=True)
    out = {}
    for k in kinds:
        full = callgrind(k, args.ops, True, env)
        build = callgrind(k, args.ops, False, env)
        out[k] = (full - build) / args.ops
        if not args.json:
            print(f"{k:8s} {out[k]:8.0f} instructions per op", flush=True)
    if args.json:
        print(json.dumps({"ops": args.ops, "instructions_per_op": out}, indent=2))


if __name__ == "__main__":
    main()
