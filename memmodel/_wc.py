"""Write-combining buffers: non-temporal stores gather per line and leave as posted writes.

A buffer holds the bytes of one line; a full line leaves as one posted write. Two times
follow its sending (memmodel.media._dispatch.write): the acknowledgement, what SFENCE waits
for (the media's wc_ack_ns, calibrated on a lone line's NT store + SFENCE), and the end of
the buffer's hold, when it can take another line (wc_hold_ns, calibrated on a single
thread's NT-store stream); each later for a remote line and by any wait for the
interconnect or a WPQ slot. A lone line is acknowledged sooner than a stream turns its
buffers over, and the two are measured apart on the same machine.
These functions return the cycle an issue stall would end; they never touch the core's
issue state.
"""
from memmodel import _hierarchy as hier
from memmodel import _memside as mside
from memmodel._memside import FULL_MASK
from memmodel._persist import PK_FENCED, PK_NOW
from memmodel.jit import compiled, inlined, ix
from memmodel.layout import MH, MS, MT, fields

# wc[buffer, field]
WC = fields("WC", "LINE MASK BUSY STAMP")
N_WC = len(WC)


@inlined
def _wc_send(S, i, line, mask, t, r):
    """Send WC buffer i's bytes (it holds `mask` of `line`) to memory as one (possibly
    partial) posted write (r: the region of the line, or -1)."""
    o = S[MH.WC] + N_WC * i
    _, ack, hold = mside.mem_post(S, r, line, mask, t, PK_FENCED)
    S[ix(o + WC.BUSY)] = hold
    S[ix(o + WC.LINE)] = -1
    S[ix(o + WC.MASK)] = 0
    if ack > S[MS.WB_PENDING]:
        S[MS.WB_PENDING] = ack
    if ack > S[MS.MEM_END]:   # the run has completed when the line is acknowledged
        S[MS.MEM_END] = ack
    return hold


@inlined
def _wc_drain(S, i, t, r):
    o = S[MH.WC] + N_WC * i
    return _wc_send(S, i, S[ix(o + WC.LINE)], S[ix(o + WC.MASK)], t, r)


NEVER = (1 << 63) - 1   # a cycle later than any


@inlined
def movnt_bytes(S, addr, size, r, now):
    """Non-temporal store of `size` bytes within one line through a WC buffer, issued at
    `now` (r: the region of addr, or -1). Returns the cycle issue may go on: later than
    `now` when it had to wait for a buffer."""
    line = addr >> 6
    if hier.evict_everywhere(S, line, False):
        mside.mem_write(S, r, line, FULL_MASK, now, PK_NOW)
    n = S[MT.WC]
    wc = S[MH.WC]
    slot = -1
    # a free buffer, the one available first (wanted if none holds the line), chosen
    # without a branch: which one it is varies unpredictably
    best, best_busy = -1, NEVER
    for i in range(n):
        o = wc + N_WC * i
        li = S[ix(o + WC.LINE)]
        if li == line:
            slot = i
            break
        busy = S[ix(o + WC.BUSY)]
        take = (li == -1) & (busy < best_busy)
        best = i if take else best
        best_busy = busy if take else best_busy
    if slot < 0:
        if best < 0:  # all hold data: the oldest leaves partially filled
            best = 0
            for i in range(1, n):
                if S[ix(wc + N_WC * i + WC.STAMP)] < S[ix(wc + N_WC * best + WC.STAMP)]:
                    best = i
            _wc_drain(S, best, now, -1)
        now = max(now, S[ix(wc + N_WC * best + WC.BUSY)])
        slot = best
        S[ix(wc + N_WC * slot + WC.LINE)] = line
        S[ix(wc + N_WC * slot + WC.STAMP)] = mside.next_use(S)
    mask = S[ix(wc + N_WC * slot + WC.MASK)] | (
        FULL_MASK if size == 64 else ((1 << size) - 1) << (addr & 63))
    S[ix(wc + N_WC * slot + WC.MASK)] = mask
    if mask == FULL_MASK:   # the line and mask just written: not read back from S
        _wc_send(S, slot, line, mask, now, r)
    return now


@compiled
def wc_drain_all(S, now):
    """Drain every WC buffer holding data at `now`; returns when the last line sent is
    acknowledged (what SFENCE waits for, not the buffers' hold)."""
    wc = S[MH.WC]
    for i in range(S[MT.WC]):
        if S[ix(wc + N_WC * i + WC.LINE)] != -1:
            _wc_drain(S, i, now, -1)
    return S[MS.WB_PENDING]
