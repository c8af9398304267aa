"""The way to the persistence domain: which written bytes survive a power failure.

With functional memory every write that reaches a persistent region is queued here (pq) by
the op that made it; after the op (or line of a bulk op) the queue moves on: a write
durable at once (an eviction, CLFLUSH, an eADR store) is copied into the page's durable
image, one that needs the next fence (a CLWB/CLFLUSHOPT write-back, an NT store) is
snapshot into the pending ring (pend) and applied by SFENCE/MFENCE. Stores to one line
become durable in program order, and a fence never makes the durable image older.
"""
from numba import int64

from memmodel import memory as mm
from memmodel.jit import FRAMES, ROWS, STATE, apart, compiled, inlined, ix
from memmodel.layout import MH, MS, MT, fields

FULL_MASK = -1   # all 64 bytes of a line
# pq[entry, field]: write-backs of this op on their way to the persistence domain
PQ = fields("PQ", "LINE MASK KIND")
N_PQ = len(PQ)
PQ_ENTRIES = 256
PK_NOW, PK_FENCED = 0, 1   # durable at once / at the next SFENCE or MFENCE
# pend[entry, field]: write-backs that become durable at the next fence; their bytes are
# snapshot in the core's reserved frames (memmodel.memory.SNAPSHOTS)
PE = fields("PE", "LINE MASK")
N_PE = len(PE)


@inlined
def pq_push(S, line, mask, pkind):
    """Queue a write for the persistence domain; the run loop empties the queue after
    every op (or line of a bulk op). A count above PQ_ENTRIES reports an internal error."""
    n = S[MS.PQ_COUNT]
    if n < PQ_ENTRIES:
        o = S[MH.PQ] + N_PQ * n
        S[ix(o + PQ.LINE)] = line
        S[ix(o + PQ.MASK)] = mask
        S[ix(o + PQ.KIND)] = pkind
    S[MS.PQ_COUNT] = n + 1


@inlined
def _snapshot_at(S, j):
    """(frame, offset) of pending snapshot j in the core's reserved frames."""
    return S[MT.SNAPSHOT_FRAME] + (j * 64) // mm.PAGE_BYTES, (j * 64) % mm.PAGE_BYTES


@compiled
def _apply_oldest_pending(S, pt, frames):
    h = S[MS.PEND_HEAD]
    o = S[MH.PEND] + N_PE * h
    f, off = _snapshot_at(S, h)
    mm.persist_bytes(S, pt, frames, S[ix(o + PE.LINE)], S[ix(o + PE.MASK)], f, off)
    S[MS.PEND_HEAD] = h + 1 if h + 1 < mm.SNAPSHOTS else 0
    S[MS.PEND_COUNT] -= 1


@apart(STATE, ROWS, FRAMES, int64, int64)
def persist_queue(S, pt, frames, page, row):
    """Move this op's queued writes on: durable now, or snapshot until the next fence (a
    full snapshot ring makes its oldest write durable: it has long been accepted).
    (page, row): a page and its mm.page_row, if the caller knows them (else page -1)."""
    n = min(S[MS.PQ_COUNT], PQ_ENTRIES)
    for k in range(n):   # pages keep their frames during a run
        o = S[MH.PQ] + N_PQ * k
        line, mask = S[ix(o + PQ.LINE)], S[ix(o + PQ.MASK)]
        addr = line << 6
        if addr >> mm.PAGE_SHIFT != page:
            page = addr >> mm.PAGE_SHIFT
            row = mm.page_row(S, addr)
        src_f = mm.frame_in(pt, row, addr)
        src_off = addr & (mm.PAGE_BYTES - 1)
        if S[ix(o + PQ.KIND)] == PK_NOW:
            mm.durable_move(frames, mm.durable_frame_in(pt, row, addr), src_off, mask,
                            src_f, src_off)
            if S[MS.PEND_COUNT]:
                _supersede_pending(S, line, mask)
            continue
        if S[MS.PEND_COUNT] == mm.SNAPSHOTS:
            _apply_oldest_pending(S, pt, frames)
        j = S[MS.PEND_HEAD] + S[MS.PEND_COUNT]
        if j >= mm.SNAPSHOTS:
            j -= mm.SNAPSHOTS
        f, off = _snapshot_at(S, j)
        mm.move(frames, f, off, src_f, src_off, 64)
        S[ix(S[MH.PEND] + N_PE * j + PE.LINE)] = line
        S[ix(S[MH.PEND] + N_PE * j + PE.MASK)] = mask
        S[MS.PEND_COUNT] += 1
    if S[MS.PQ_COUNT] <= PQ_ENTRIES:
        S[MS.PQ_COUNT] = 0


@compiled
def _supersede_pending(S, line, mask):
    """The bytes `mask` of `line` became durable with newer data: older copies of them still
    waiting for a fence must not be applied over it (a fence never makes the durable image
    older; stores to a line become durable in program order)."""
    j = S[MS.PEND_HEAD]
    for _ in range(S[MS.PEND_COUNT]):
        o = S[MH.PEND] + N_PE * j
        if S[ix(o + PE.LINE)] == line:
            S[ix(o + PE.MASK)] &= ~mask
        j = j + 1 if j + 1 < mm.SNAPSHOTS else 0


@compiled
def supersede_range(S, start, end):
    """_supersede_pending for the bytes [start, end) (the facade placed them durably)."""
    if S[MS.PEND_COUNT] == 0:
        return
    for line in range(start >> 6, ((end - 1) >> 6) + 1):
        lo = max(start, line << 6) - (line << 6)
        hi = min(end, (line + 1) << 6) - (line << 6)
        _supersede_pending(S, line, (-1 << lo) if hi == 64 else (-1 << lo) & ((1 << hi) - 1))


@compiled
def apply_pending(S, pt, frames):
    """A fence: every write queued for it becomes durable."""
    page, f = -1, -1    # the last page's durable frame
    while S[MS.PEND_COUNT] > 0:
        h = S[MS.PEND_HEAD]
        o = S[MH.PEND] + N_PE * h
        addr = S[ix(o + PE.LINE)] << 6
        if addr >> mm.PAGE_SHIFT != page:
            page = addr >> mm.PAGE_SHIFT
            f = mm.durable_frame_of(S, pt, addr)
        sf, soff = _snapshot_at(S, h)
        mm.durable_move(frames, f, addr & (mm.PAGE_BYTES - 1), S[ix(o + PE.MASK)], sf, soff)
        S[MS.PEND_HEAD] = h + 1 if h + 1 < mm.SNAPSHOTS else 0
        S[MS.PEND_COUNT] -= 1


@inlined
def eadr_store(S, dst, n):
    """Under eADR the caches are in the persistence domain: a cached store is durable."""
    if mm.persistence(S, dst) == mm.P_EADR:
        for line in range(dst >> 6, ((dst + n - 1) >> 6) + 1):
            pq_push(S, line, FULL_MASK, PK_NOW)
