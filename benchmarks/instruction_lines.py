"""Where the compiled core's instructions go, by source line, counted by callgrind.

    python benchmarks/instruction_lines.py TRACE [--ops N] [--top K] [--within FILE]
                                         [--cache-dir DIR] [--cpu NAME]

TRACE is one of benchmarks/instructions.py's traces. The core is compiled with debug line
tables (NUMBA_DEBUGINFO=1) for a generic x86-64 (`--cpu NAME`: that LLVM CPU, as for
instructions.py), outside valgrind first, into DIR (a fresh temporary one unless --cache-dir
names one to keep: the debug build's cold compile takes a few minutes). A child then runs N
ops of the trace under `callgrind --dump-instr=yes` and writes the object code of each
compiled library as numba loads it from its cache, with the address it loaded each one at;
each executed instruction's count is mapped to its chain of inlined source frames by
`addr2line -i`. Printed per op: the JIT code's instructions in all, then the K lines of
source that cost most, each the innermost frame (`--within FILE`: the outermost frame in
FILE instead, e.g. emu/_fast.py, so that a call's inlined helpers count at its line). Only
JIT code is counted: the child's Python, numpy and the validator's own work before the run
are outside it, the validator's compiled pass inside it.

The debug build runs other code than the one of instructions.py (its counts are of the
same order, not equal). It reads numba's object cache through two private names
(`CPUCodeLibrary._object_getbuffer_hook` and the module's library attribute), checked at
the start. Needs valgrind and binutils (addr2line, nm, objdump).
"""
import argparse
import bisect
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def child(kind, n, out):
    """Run the trace, catching each object numba loads from its cache; write them and the
    load address of one defined function of each (syms.json: [object, symbol, offset,
    address])."""
    from numba.core import codegen
    caught = []
    plain = codegen.CPUCodeLibrary._object_getbuffer_hook.__func__

    def hook(cls, ll_module):
        buf = plain(cls, ll_module)
        if buf:
            caught.append((getattr(ll_module, "_CPUCodeLibrary__library"), bytes(buf)))
        return buf

    codegen.CPUCodeLibrary._object_getbuffer_hook = classmethod(hook)
    from benchmarks import instructions
    instructions.child(kind, n, True)
    rows = []
    for k, (lib, buf) in enumerate(caught):
        path = os.path.join(out, f"o{k}.o")
        with open(path, "wb") as f:
            f.write(buf)
        nm = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True,
                            check=True).stdout
        for line in nm.splitlines():
            value, kind_, name = line.split(maxsplit=2)
            if kind_ == "T":   # a global function: the library can say where it lies
                rows.append((path, name, int(value, 16), lib.get_pointer_to_function(name)))
                break
    with open(os.path.join(out, "syms.json"), "w") as f:
        json.dump(rows, f)


def self_costs(path):
    """{instruction address: self count} of a callgrind file written with --dump-instr=yes
    (its position columns `instr line`, compressed as +/- offsets or *)."""
    cost = collections.Counter()
    addr, after_call = 0, False
    with open(path) as f:
        for raw in f:
            if not raw[:1] or raw[0] not in "0123456789+-*":
                after_call = raw.startswith("calls=")
                continue
            parts = raw.split()
            if parts[0].startswith("0x"):
                addr = int(parts[0], 16)
            elif parts[0][0] in "+-":
                addr += int(parts[0])
            if after_call:   # the line after calls= is the call's inclusive cost
                after_call = False
                continue
            cost[addr] += int(parts[-1])
    return cost


def object_ranges(out):
    """[(start, end, object path)] of the loaded objects' code sections."""
    with open(os.path.join(out, "syms.json")) as f:
        rows = json.load(f)
    ranges = []
    for path, _name, offset, address in rows:
        h = subprocess.run(["objdump", "-h", path], capture_output=True, text=True,
                           check=True).stdout
        size = max(int(m.group(1), 16) for m in re.finditer(r"\.l?text\S*\s+([0-9a-f]+)", h))
        ranges.append((address - offset, address - offset + size, path))
    return sorted(ranges)


def by_line(cost, ranges, within):
    """{source line: count}: innermost frames, or the outermost one in file `within`."""
    starts = [r[0] for r in ranges]
    offsets = collections.defaultdict(list)
    for a, c in cost.items():
        k = bisect.bisect_right(starts, a) - 1
        if k >= 0 and a < ranges[k][1]:
            offsets[ranges[k][2]].append((a - ranges[k][0], c))
    lines = collections.Counter()
    for path, rows in offsets.items():
        text = subprocess.run(["addr2line", "-e", path, "-i", "-a"] +
                              [hex(o) for o, _ in rows], capture_output=True, text=True,
                              check=True).stdout
        frames, cur = {}, None
        for ln in text.splitlines():
            if ln.startswith("0x"):
                cur = frames.setdefault(int(ln, 16), [])
            else:
                cur.append(os.path.relpath(ln.split(" (")[0], ROOT) if ln.startswith("/")
                           else ln)
        for o, c in rows:
            chain = frames.get(o) or ["?"]
            mine = [f for f in chain if within and f.startswith(within + ":")]
            lines[mine[-1] if mine else chain[0]] += c
    return lines


def main(argv=None):
    from benchmarks.instructions import TRACES, callgrind_env
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", choices=TRACES)
    ap.add_argument("--ops", type=int, default=400_000)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--within", default=None, help="count at the outermost frame in FILE")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--cpu", default="generic",
                    help="LLVM CPU to build for, as instructions.py --cpu (vector code shows "
                         "only in a build for a CPU that has it)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, n, out = args.child
        child(kind, int(n), out)
        return
    if not args.trace:
        ap.error("a trace is required")
    for tool in ("valgrind", "addr2line", "nm", "objdump"):
        if not shutil.which(tool):
            sys.exit(f"instruction_lines.py needs {tool}")
    from numba.core import codegen
    if not hasattr(codegen.CPUCodeLibrary, "_object_getbuffer_hook"):
        sys.exit("this numba has no CPUCodeLibrary._object_getbuffer_hook: see the docstring")
    with tempfile.TemporaryDirectory() as tmp:
        env = callgrind_env(args.cpu, NUMBA_DEBUGINFO="1",
                            NUMBA_CACHE_DIR=args.cache_dir or os.path.join(tmp, "cache"))
        me = [sys.executable, os.path.abspath(__file__), "--child", args.trace]
        os.makedirs(os.path.join(tmp, "warm"))
        subprocess.run(me + ["64", os.path.join(tmp, "warm")], env=env, check=True)
        out = os.path.join(tmp, "run")
        os.makedirs(out)
        r = subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes",
                            f"--callgrind-out-file={tmp}/cg"] + me + [str(args.ops), out],
                           env=env, capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"callgrind failed:\n{r.stderr[-2000:]}")
        lines = by_line(self_costs(f"{tmp}/cg"), object_ranges(out), args.within)
    total = sum(lines.values())
    print(f"{args.trace}: {total / args.ops:.1f} JIT instructions per op ({args.ops} ops)")
    for where, c in lines.most_common(args.top):
        print(f"{c / args.ops:8.1f}  {where}")


if __name__ == "__main__":
    main()
