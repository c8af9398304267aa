"""A RunProfile as a cachegrind.out file, so that valgrind's cg_annotate shows the hot
functions and annotates the Python source of the kernel paths.

The format is cachegrind's (valgrind docs, "Cachegrind: the output file"): `desc:` and
`cmd:` lines, one `events:` line, then per file (`fl=`) and function (`fn=`) one line of
counts per source line, and a `summary:` of the totals. The standard events where they
apply: Dr/Dw (L1D reads and writes, a copy's every word), D1mr/D1mw (L1D read/write misses)
and DLmr/DLmw (last-level misses); there are no instruction events (Ir), the ops are not x86
instructions. The emulator's own events: Cyc
(cycles), Ops, the stall causes and Busy (a partition of Cyc, emu.profiler), L1Pend/LLPend
(cycles a demand miss was outstanding), LineR/LineW (line_reads/line_writes: 64 B lines read
from and written to the media).
A site without a source line (a trace's, a function of a vectorised builder) is file ???
line 0, as cachegrind writes code without debug information.
"""
from emu import profiler
from emu.state import STALL_CAUSES
from emu.studies import outfiles

# (event, how to get it from a site's counters)
EVENTS = (
    ("Cyc", lambda d: d["cycles"]),
    ("Ops", lambda d: d["ops"]),
    ("Dr", lambda d: d["loads"]),
    ("D1mr", lambda d: d["l1d_misses"] - d["l1d_store_misses"]),
    ("DLmr", lambda d: d["llc_misses"] - d["llc_store_misses"]),
    ("Dw", lambda d: d["stores"]),
    ("D1mw", lambda d: d["l1d_store_misses"]),
    ("DLmw", lambda d: d["llc_store_misses"]),
    ("L1Pend", lambda d: d["l1d_pending"]),
    ("LLPend", lambda d: d["llc_pending"]),
    ("LineR", lambda d: d["line_reads"]),
    ("LineW", lambda d: d["line_writes"]),
    *((c.title().replace("_", ""), lambda d, c=c: d[c]) for c in (*STALL_CAUSES, "busy")),
)
EVENT_NAMES = tuple(e for e, _ in EVENTS)


def text(p, desc, cmd):
    """The cachegrind.out text of RunProfile `p`."""
    by_file = {}
    for name, d in p.sites.items():
        fn, file, line = profiler.split_site(name)
        by_file.setdefault(file or "???", {}).setdefault(fn, []).append((line, d))
    out = [f"desc: {desc}\n", f"cmd: {cmd}\n", f"events: {' '.join(EVENT_NAMES)}\n"]
    totals = [0] * len(EVENTS)
    for file in sorted(by_file):
        out.append(f"fl={file}\n")
        for fn in sorted(by_file[file]):
            out.append(f"fn={fn}\n")
            for line, d in sorted(by_file[file][fn], key=lambda x: x[0]):
                counts = [f(d) for _, f in EVENTS]
                totals = [a + b for a, b in zip(totals, counts)]
                out.append(f"{line} {' '.join(map(str, counts))}\n")
    out.append(f"summary: {' '.join(map(str, totals))}\n")
    return "".join(out)


def write(path, p, desc, cmd, option="--cachegrind"):
    """Write `p` to `path` whole or not at all, never onto anything but a regular file or a
    new name (emu.studies.outfiles: CliError naming `option` otherwise)."""
    with outfiles.replacing(option) as stage, open(stage(path), "w") as f:
        f.write(text(p, desc, cmd))
