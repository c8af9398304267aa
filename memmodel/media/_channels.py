"""What every media kind shares: the channel an address interleaves to, the NUMA link, a
read's hold on its channel and a write's slot in the channel's write-pending queue (the
fields are declared in memmodel.media)."""
from memmodel.jit import inlined, ix, remainder, trailing_zeros
from memmodel.layout import MH
from memmodel.media import CH, FP, MC, MP, N_MCOUNTERS, G


@inlined
def cdiv_fp(t_fp):
    return (t_fp + FP - 1) // FP


@inlined
def mcount(S, m, counter, n):
    S[ix(S[MH.MCNT] + m * N_MCOUNTERS + counter)] += n


@inlined
def channel_row(S, p, addr):
    """Offset in S of the chan row serving `addr` (p: offset of the media's params)."""
    il, n = S[ix(p + MP.INTERLEAVE)], S[ix(p + MP.CHANNELS)]
    # no 64-bit division where the interleave is a power of two (the profile keeps both
    # positive): 6 channels a socket are common
    if il & (il - 1) == 0:
        x = addr >> trailing_zeros(il)
        c = x & (n - 1) if n & (n - 1) == 0 else remainder(x, n, S[ix(p + MP.CH_INV)])
    else:
        c = (addr // il) % n
    return S[MH.CHAN] + (S[ix(p + MP.CHAN0)] + c) * S[S[MH.MGLOB] + G.CHAN_STRIDE]


@inlined
def link_lat(S):
    return S[S[MH.MGLOB] + G.LINK_LAT]


@inlined
def remote_hold(S):
    return S[S[MH.MGLOB] + G.REMOTE_HOLD]


@inlined
def cross_link(S, t):
    """A remote request crosses the interconnect: returns the cycle it leaves the link."""
    g = S[MH.MGLOB]
    start = max(t * FP, S[ix(g + G.LINK_BUSY_FP)])
    S[ix(g + G.LINK_BUSY_FP)] = start + S[ix(g + G.LINK_OCC_FP)]
    return cdiv_fp(start) + S[ix(g + G.LINK_LAT)]


@inlined
def occupy_for_read(S, m, busy, t, ready, occ):
    """A read arriving at cycle t holds the timeline at S[busy] (FP units: a channel's read
    or write side, an Optane DIMM's media) for `occ` from when it is free, and not before
    cycle `ready`; returns the cycle it starts. The wait counts as read queueing."""
    start_fp = max(max(t, ready) * FP, S[ix(busy)])
    S[ix(busy)] = start_fp + occ
    start = cdiv_fp(start_fp)
    mcount(S, m, MC.READ_QUEUE_CYCLES, start - t)
    return start


@inlined
def read_side(S, p, row):
    """Offset of the timeline a read of the channel at `row` holds: the write side too when
    reads wait for writes, else the read side."""
    return row + (CH.WR_BUSY if S[ix(p + MP.SHARED_BUSY)] else CH.RD_BUSY)


@inlined
def wpq_accept(S, p, m, row, t):
    """A write arriving at cycle t: (its WPQ slot, the cycle the slot takes it)."""
    head = S[ix(row + CH.WPQ_HEAD)]
    arrive = t + S[ix(p + MP.ACCEPT_LAT)]
    accept = max(arrive, S[ix(row + CH.WPQ0 + head)])
    mcount(S, m, MC.WPQ_FULL_STALL_CYCLES, accept - arrive)
    return head, accept


@inlined
def wpq_release(S, p, row, head, free):
    """WPQ slot `head` is free again at cycle `free`, when its write has left for the media
    (the kind's write() says when)."""
    S[ix(row + CH.WPQ0 + head)] = free
    # (head + 1) % wpq, head < wpq
    S[ix(row + CH.WPQ_HEAD)] = head + 1 if head + 1 < S[ix(p + MP.WPQ)] else 0


@inlined
def _closed_form(busy_fp, a0, k, period, occ):
    """A timeline free at `busy_fp` after k arrivals at a0, a0 + period, ..., each holding
    it for `occ` from when it is free: max over j of (arrival j's time, or busy) + the
    holds from j on; the latest start is the first arrival's when arrivals come faster
    than they are served, else the last one's."""
    last = a0 + k * occ if period < occ else a0 + (k - 1) * period + occ
    return max(busy_fp + k * occ, last)


@inlined
def _after(x, b0, j, per):
    """How many of j arrivals at b0, b0 + per, ... come at or after x."""
    if x <= b0:
        return j
    return j - min(j, (x - b0 + per - 1) // per)


@inlined
def _merged_form(busy_fp, a0, k, per, occ, b0, j, per2, occ2):
    """_closed_form for two periodic streams on one timeline (k arrivals from a0 every per,
    j from b0 every per2, each holding it for its occ): the latest start is at the first
    arrival when the two together come faster than they are served, else at one stream's
    last arrival, followed by the other's arrivals from then on (exact for either alone; with
    both, within a hold of each). Applying one stream's closed form after the other's would
    queue all of the second's arrivals behind the first's last: a DIMM not visited for long
    would gain the window's whole write work at once."""
    if j == 0:
        return _closed_form(busy_fp, a0, k, per, occ)
    if k == 0:
        return _closed_form(busy_fp, b0, j, per2, occ2)
    best = max(busy_fp, min(a0, b0)) + k * occ + j * occ2
    la = a0 + (k - 1) * per
    best = max(best, la + occ + _after(la, b0, j, per2) * occ2)
    lb = b0 + (j - 1) * per2
    return max(best, lb + occ2 + _after(lb, a0, k, per) * occ)


@inlined
def background(S, p, row, t, optane):
    """Other cores' traffic on the channel at `row` (memmodel.media CH.BG_*): the periodic
    arrivals of its background streams up to cycle t take the timelines they use, in O(1),
    before a request of the emulated core at t does. A read stream holds what a read that
    misses every buffer holds (the media's read unit); a write stream the channel's write
    side for the unit's lines and, on Optane, the media for an XPLine write (whole
    XPLines: no XPBuffer state, no read-modify-write, no WPQ slot: what it takes is
    bandwidth). Where reads and writes share a timeline (Optane's media; a channel whose
    reads wait for writes) the two streams are merged on it (_merged_form). Without
    background (both periods 0) it costs one compare."""
    if not (S[ix(row + CH.BG_RD_PERIOD)] | S[ix(row + CH.BG_WR_PERIOD)]):
        return
    t_fp = t * FP
    per, a0 = S[ix(row + CH.BG_RD_PERIOD)], S[ix(row + CH.BG_RD_NEXT)]
    k = (t_fp - a0) // per + 1 if per > 0 and a0 <= t_fp else 0
    per2, b0 = S[ix(row + CH.BG_WR_PERIOD)], S[ix(row + CH.BG_WR_NEXT)]
    j = (t_fp - b0) // per2 + 1 if per2 > 0 and b0 <= t_fp else 0
    if k == 0 and j == 0:
        return
    lines = S[ix(p + MP.UNIT_BYTES)] // 64
    # the write side takes a write stream's lines (on Optane its bus, else the channel)
    wr_occ = lines * S[ix(p + MP.INTAKE_OCC_FP)]
    if j:
        S[ix(row + CH.BG_WR_NEXT)] = b0 + j * per2
    if k:
        S[ix(row + CH.BG_RD_NEXT)] = a0 + k * per
    rd_occ = S[ix(p + MP.RD_OCC_FP)]
    if optane:
        if j:
            S[ix(row + CH.WR_BUSY)] = _closed_form(S[ix(row + CH.WR_BUSY)], b0, j, per2, wr_occ)
        S[ix(row + CH.MEDIA_BUSY)] = _merged_form(S[ix(row + CH.MEDIA_BUSY)], a0, k, per,
                                                  rd_occ, b0, j, per2, S[ix(p + MP.WR_OCC_FP)])
    elif S[ix(p + MP.SHARED_BUSY)]:
        S[ix(row + CH.WR_BUSY)] = _merged_form(S[ix(row + CH.WR_BUSY)], a0, k, per, rd_occ,
                                               b0, j, per2, wr_occ)
    else:
        if k:
            S[ix(row + CH.RD_BUSY)] = _closed_form(S[ix(row + CH.RD_BUSY)], a0, k, per, rd_occ)
        if j:
            S[ix(row + CH.WR_BUSY)] = _closed_form(S[ix(row + CH.WR_BUSY)], b0, j, per2, wr_occ)
