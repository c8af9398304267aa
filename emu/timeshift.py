"""The machine state's clocks, and moving a machine along them.

Every value in the state that is a point on a clock (a cycle, a cycle in media.FP units, a
uop or load sequence number, a use stamp) declares its clock where it is declared (its
role, memmodel.layout). The model is invariant under a shift of any clock: a
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

from memmodel import media as md

CLOCKS = ("cycles", "fp", "uops", "loads", "mem", "stream")


def fields(m):
    """{(clock, skip_negative): flat indices into m.S} of every value on a clock: the words
    whose role (memmodel.layout) is a clock or a ring's slot on one. A negative value of a
    field marked skip_negative means "none" and is no point in time."""
    out = {}   # the parts of each clock's indices, joined once at the end
    for idx, role in m.layout.words(m.S):
        if role.kind in ("clock", "ring") and role.clock is not None:
            out.setdefault((role.clock, role.none), []).append(np.asarray(idx).reshape(-1))
    return {key: np.concatenate(parts) for key, parts in out.items()}


def shift(m, deltas):
    """Move machine `m` along its clocks: {clock: delta} (cycles, fp, uops, loads, mem,
    stream, memmodel.sections.cache.clock_of_level's lru0, ...; a missing clock is not moved). "fp"
    moves with "cycles" by default (delta x media.FP), as the media's busy times are cycles
    in FP units."""
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
