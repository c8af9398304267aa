"""The machine state's clocks, and moving a machine along them.

Every value in the state that is a point on a clock (a cycle, a cycle in media.FP units, a
uop or load sequence number, a use stamp) is declared here with its clock, from the field
tables of the modules that own them. The model is invariant under a shift of any clock: a
machine whose clocks are all moved by constants behaves exactly as the original, its
clocks moved by the same constants (tests/test_timeshift.py). Fast-forwarding repeated
work (emu/fastforward.py) rests on that: once a repetition leaves the state as
the one before, moved along its clocks, the remaining ones are a shift.

Clocks: "cycles"; "fp" (cycles x media.FP: the media channels' and the interconnect's busy
times); "uops" and "loads" (the core's sequence numbers); "lru0", "lru1", ... (a cache
level's use stamp, and its blocks' stamps where the policy keeps stamps: FIFO, and LRU in
L1 or in sets of more than 16 ways); "mem" (the memory side's use stamp of WC buffers and
XPBuffer entries); "stream" (the stream prefetcher's table clock).
"""
import numpy as np

from emu.state import SC
from memmodel import _wc as wcb
from memmodel import media as md
from memmodel.cache import N_LV
from memmodel.layout import LV, LV_AT, MS
from memmodel.policies import stamped
from memmodel.prefetch import stream

# scalars of the core (emu.state.SC) and the memory side (memmodel.layout.MS)
SCALARS = {
    SC.NOW: "cycles", SC.DONE_MAX: "cycles", SC.WORK_END: "cycles", SC.DEP_READY: "cycles",
    SC.SB_LAST: "cycles", SC.CLFLUSH_CHAIN: "cycles", SC.FLUSH_UNIT: "cycles",
    SC.SITE_START: "cycles", SC.END: "cycles", SC.UOP_SEQ: "uops", SC.LSEQ: "loads",
    MS.WB_PENDING: "cycles", MS.MEM_END: "cycles", MS.L1D_MISS_END: "cycles",
    MS.LLC_MISS_END: "cycles", MS.MEM_STAMP: "mem",
}
# whole sections on one clock
SECTIONS = {"ready": "cycles", "lfb": "cycles", "sq": "cycles", "sb": "cycles",
            "rob_done": "cycles", "rob_seq": "uops", "rob_lseq": "loads"}
CLOCKS = ("cycles", "fp", "uops", "loads", "mem", "stream")


def clock_of_level(level):
    return f"lru{level}"


def fields(m):
    """{clock: (flat indices into m.S, skip_negative)} of every value on a clock. A negative
    value of a field marked skip_negative means "none" and is no point in time."""
    S, lay = m.S, m.layout
    out = {}   # the parts of each clock's indices, joined once at the end

    def add(clock, idx, skip_negative=False):
        out.setdefault((clock, skip_negative), []).append(
            np.asarray(idx, dtype=np.int64).reshape(-1))

    for f, clock in SCALARS.items():
        add(clock, [int(f)])
    for name, clock in SECTIONS.items():
        off = lay.offsets[name]
        add(clock, np.arange(off, off + int(np.prod(lay.shapes[name]))))
    repl = lay.offsets["repl"]
    for lvl in range(len(m.level_names)):
        row = LV_AT + lvl * N_LV
        add(clock_of_level(lvl), [row + LV.STAMP])
        if stamped(S[row + LV.POLICY]):
            base, n = S[row + LV.BASE], S[row + LV.SETS] * S[row + LV.WAYS]
            add(clock_of_level(lvl), repl + np.arange(base, base + n))
    def cols(name, width, c):   # column c of every row of a section of rows of `width`
        return lay.offsets[name] + np.arange(lay.shapes[name][0]) * width + c

    add("cycles", cols("wc", wcb.N_WC, wcb.WC.BUSY))
    add("mem", cols("wc", wcb.N_WC, wcb.WC.STAMP))
    st = lay.offsets["stream"]
    add("stream", [st + stream.HEAD.CLOCK])
    add("stream", cols("stream", stream.N_ROW, stream.ROW.STAMP)[1:])
    width = lay.shapes["chan"][1]
    g = lay.offsets["mglob"]
    add("fp", [g + md.G.LINK_BUSY_FP])
    for c in (md.CH.RD_BUSY, md.CH.WR_BUSY, md.CH.MEDIA_BUSY):
        add("fp", cols("chan", width, c))
    for c in (md.CH.BG_RD_NEXT, md.CH.BG_WR_NEXT):   # the next background arrival, -1: none
        add("fp", cols("chan", width, c), True)
    x0, nmax = S[g + md.G.XP0], S[g + md.G.XP_MAX]
    for k in range(md.CH.WPQ0, x0):
        add("cycles", cols("chan", width, k))
    for field, clock, neg in ((md.XP.STAMP, "mem", False), (md.XP.READY, "cycles", False),
                              (md.XP.WB, "fp", True), (md.XP.ARRIVE, "cycles", True)):
        for s in range(nmax):
            add(clock, cols("chan", width, x0 + field * nmax + s), neg)
    return {key: np.concatenate(parts) for key, parts in out.items()}


def shift(m, deltas):
    """Move machine `m` along its clocks: {clock: delta} (cycles, fp, uops, loads, mem,
    stream, lru0, ...; a missing clock is not moved). "fp" moves with "cycles" by default
    (delta x media.FP), as the media's busy times are cycles in FP units."""
    deltas = dict(deltas)
    if "cycles" in deltas:
        deltas.setdefault("fp", deltas["cycles"] * md.FP)
    for (clock, skip_negative), idx in fields(m).items():
        d = deltas.get(clock, 0)
        if not d:
            continue
        if skip_negative:
            idx = idx[m.S[idx] >= 0]
        m.S[idx] += d
