"""Media backends: DRAM, NVDIMM-N and Optane DCPMM behind per-channel queues.

Time is in core cycles; channel occupancy is kept in fixed point (FP units per cycle) so
that bandwidths that are not a whole number of bytes per cycle are not rounded away.
A read starts at max(arrival, channel free), holds the channel for bytes/bandwidth and
returns after the media's idle load-to-use latency. Writes are posted: accepted into the
channel's write-pending queue (WPQ) when it has a free slot; the media drains the queue at
its write bandwidth. Optane adds a per-DIMM buffer of 256-byte XPLines (XPBuffer): reads
served from it take the buffered latency, evicting a partially written XPLine costs a
read-modify-write of the whole XPLine. A remote (other NUMA node) request also crosses the
interconnect, a shared link with its own bandwidth and latency.
"""
from memmodel.jit import compiled, inlined, ix, trailing_zeros
from memmodel.layout import H_CHAN, H_MCNT, H_MGLOB, H_MP

FP = 1024

K_DRAM, K_NVDIMM_N, K_OPTANE = 0, 1, 2
KINDS = ("dram", "nvdimm-n", "optane")
PERSISTENCE = ("none", "adr", "eadr")

# mp[media, field]
(M_KIND, M_READ_LAT, M_BUF_READ_LAT, M_ACCEPT_LAT, M_RD_OCC_FP, M_WR_OCC_FP, M_BUS_OCC_FP,
 M_CHANNELS, M_INTERLEAVE, M_CHAN0, M_WPQ, M_XPL_BYTES, M_XPBUF, M_SHARED_BUSY,
 M_PERSIST) = range(15)
N_MPARAMS = 15

# mcnt[media, counter]
(MC_READS, MC_WRITES, MC_PARTIAL_WRITES, MC_MEDIA_READS, MC_MEDIA_WRITES, MC_RMW,
 MC_BUF_HITS, MC_WPQ_STALL_CYCLES, MC_READ_QUEUE_CYCLES) = range(9)
MEDIA_COUNTER_NAMES = ("reads", "writes", "partial_writes", "media_line_reads",
                       "media_line_writes", "read_modify_writes", "xpbuffer_hits",
                       "wpq_full_stall_cycles", "read_queue_cycles")
N_MCOUNTERS = len(MEDIA_COUNTER_NAMES)

# mglob[]: interconnect and the shape of a chan row
G_LINK_BUSY_FP, G_LINK_OCC_FP, G_LINK_LAT, G_CHAN_STRIDE, G_XP0, G_XP_MAX = range(6)
# chan[channel, ...]: RD_BUSY, WR_BUSY (FP), WPQ_HEAD, WPQ slots (drain-complete cycle), then
# XPBuffer entries as four runs of G_XP_MAX: tag, written-chunk mask, loaded, LRU stamp
CH_RD_BUSY, CH_WR_BUSY, CH_WPQ_HEAD, CH_WPQ0 = range(4)
XP_TAG, XP_MASK, XP_LOADED, XP_STAMP = range(4)


def _occ_fp(nbytes, gbps, freq_ghz):
    """Channel occupancy in FP units for moving `nbytes` at `gbps` (GB/s = bytes/ns)."""
    return max(1, int(round(nbytes * freq_ghz / gbps * FP)))


def _shape(media):
    channels = sum(m["channels"] for m in media)
    max_q = max(m["wpq_entries"] for m in media)
    max_x = max([m.get("xpbuffer_entries", 1) for m in media])
    return channels, max_q, max_x


def add_sections(layout, media):
    channels, max_q, max_x = _shape(media)
    layout.add("mp", (len(media), N_MPARAMS))
    layout.add("mcnt", (len(media), N_MCOUNTERS))
    layout.add("chan", (channels, CH_WPQ0 + max_q + 4 * max_x))
    layout.add("mglob", 6)


def init_sections(layout, S, media, freq_ghz, numa):
    """`media`: list of resolved [media.*] dicts (order = media id)."""
    params = layout.view(S, "mp")
    channels, max_q, max_x = _shape(media)
    cyc = lambda ns: int(round(ns * freq_ghz))  # noqa: E731
    chan0 = 0
    for i, m in enumerate(media):
        kind = KINDS.index(m["kind"])
        ch = m["channels"]
        p = params[i]
        p[M_KIND] = kind
        p[M_READ_LAT] = cyc(m["read_latency_ns"])
        p[M_ACCEPT_LAT] = cyc(m["write_accept_ns"])
        p[M_CHANNELS] = ch
        p[M_INTERLEAVE] = m["interleave_bytes"]
        p[M_CHAN0] = chan0
        p[M_WPQ] = m["wpq_entries"]
        p[M_SHARED_BUSY] = 1 if m["reads_wait_for_writes"] else 0
        p[M_PERSIST] = PERSISTENCE.index(m["persistence"])
        rd_bw, wr_bw = m["read_bw_gbps"] / ch, m["write_bw_gbps"] / ch
        if kind == K_OPTANE:
            xpl = m["xpline_bytes"]
            p[M_BUF_READ_LAT] = cyc(m["buffer_read_latency_ns"])
            p[M_XPL_BYTES] = xpl
            p[M_XPBUF] = m["xpbuffer_entries"]
            p[M_RD_OCC_FP] = _occ_fp(xpl, rd_bw, freq_ghz)
            p[M_WR_OCC_FP] = _occ_fp(xpl, wr_bw, freq_ghz)
            # a 64-byte transfer into / out of the XPBuffer at the media's read rate
            p[M_BUS_OCC_FP] = _occ_fp(64, rd_bw, freq_ghz)
        else:
            p[M_BUF_READ_LAT] = p[M_READ_LAT]
            p[M_XPL_BYTES] = 64
            p[M_RD_OCC_FP] = _occ_fp(64, rd_bw, freq_ghz)
            p[M_WR_OCC_FP] = _occ_fp(64, wr_bw, freq_ghz)
            p[M_BUS_OCC_FP] = p[M_RD_OCC_FP]
        chan0 += ch
    g = layout.view(S, "mglob")
    g[G_LINK_OCC_FP] = _occ_fp(64, numa["remote_bw_gbps"], freq_ghz)
    g[G_LINK_LAT] = cyc(numa["remote_latency_ns"])
    g[G_CHAN_STRIDE] = CH_WPQ0 + max_q + 4 * max_x
    g[G_XP0] = CH_WPQ0 + max_q
    g[G_XP_MAX] = max_x
    chan = layout.view(S, "chan")
    chan[:, CH_WPQ0 + max_q:CH_WPQ0 + max_q + max_x] = -1  # XPBuffer tags: empty


@inlined
def _cdiv_fp(t_fp):
    return (t_fp + FP - 1) // FP


@inlined
def _mcount(S, m, counter, n):
    S[ix(S[H_MCNT] + m * N_MCOUNTERS + counter)] += n


@inlined
def _channel_row(S, p, addr):
    """Offset in S of the chan row serving `addr` (p: offset of the media's params)."""
    il, n = S[ix(p + M_INTERLEAVE)], S[ix(p + M_CHANNELS)]
    # powers of two (the usual case; the profile keeps both positive): no 64-bit division
    if (il & (il - 1)) | (n & (n - 1)) == 0:
        c = (addr >> trailing_zeros(il)) & (n - 1)
    else:
        c = (addr // il) % n
    return S[H_CHAN] + (S[ix(p + M_CHAN0)] + c) * S[S[H_MGLOB] + G_CHAN_STRIDE]


@inlined
def _cross_link(S, t):
    """A remote request crosses the interconnect: returns the cycle it leaves the link."""
    g = S[H_MGLOB]
    start = max(t * FP, S[ix(g + G_LINK_BUSY_FP)])
    S[ix(g + G_LINK_BUSY_FP)] = start + S[ix(g + G_LINK_OCC_FP)]
    return _cdiv_fp(start) + S[ix(g + G_LINK_LAT)]


@compiled
def _xp_slot(S, p, row, xpl, m, stamp):
    """XPBuffer slot of XPLine `xpl` on the DIMM at chan row `row`, inserting it if absent.
    Returns (offset of the slot's tag, media occupancy in FP spent evicting the LRU XPLine,
    whether it was present)."""
    g = S[H_MGLOB]
    nmax = S[ix(g + G_XP_MAX)]
    x = row + S[ix(g + G_XP0)]
    n = S[ix(p + M_XPBUF)]
    free = -1
    lru = 0
    for s in range(n):
        t = S[ix(x + s)]
        if t == xpl:
            S[ix(x + XP_STAMP * nmax + s)] = stamp
            return x + s, 0, True
        if t == -1 and free < 0:
            free = s
        if S[ix(x + XP_STAMP * nmax + s)] < S[ix(x + XP_STAMP * nmax + lru)]:
            lru = s
    occ = 0
    slot = free
    if slot < 0:
        slot = lru
        full = (1 << (S[ix(p + M_XPL_BYTES)] // 64)) - 1
        mask = S[ix(x + XP_MASK * nmax + slot)]
        if mask:
            if mask != full and not S[ix(x + XP_LOADED * nmax + slot)]:
                occ += S[ix(p + M_RD_OCC_FP)]
                _mcount(S, m, MC_MEDIA_READS, 1)
                _mcount(S, m, MC_RMW, 1)
            occ += S[ix(p + M_WR_OCC_FP)]
            _mcount(S, m, MC_MEDIA_WRITES, 1)
    S[ix(x + slot)] = xpl
    S[ix(x + XP_MASK * nmax + slot)] = 0
    S[ix(x + XP_LOADED * nmax + slot)] = 0
    S[ix(x + XP_STAMP * nmax + slot)] = stamp
    return x + slot, occ, False


@inlined
def read(S, m, addr, t0, remote, stamp):
    """A 64-byte read of media `m` by a load that started at cycle t0; returns the cycle
    its data is back (idle: t0 + the media's load-to-use latency)."""
    p = S[H_MP] + m * N_MPARAMS
    row = _channel_row(S, p, addr)
    _mcount(S, m, MC_READS, 1)
    t = t0
    if remote:
        t = _cross_link(S, t0) - S[S[H_MGLOB] + G_LINK_LAT]
    lat = S[ix(p + M_READ_LAT)]
    occ = S[ix(p + M_RD_OCC_FP)]
    if S[ix(p + M_KIND)] == K_OPTANE:
        nmax = S[S[H_MGLOB] + G_XP_MAX]
        x, evict_occ, present = _xp_slot(S, p, row, addr // S[ix(p + M_XPL_BYTES)], m, stamp)
        chunk = 1 << ((addr % S[ix(p + M_XPL_BYTES)]) // 64)
        if present and (S[ix(x + XP_LOADED * nmax)] or S[ix(x + XP_MASK * nmax)] & chunk):
            lat = S[ix(p + M_BUF_READ_LAT)]
            occ = S[ix(p + M_BUS_OCC_FP)]
            _mcount(S, m, MC_BUF_HITS, 1)
        else:
            S[ix(x + XP_LOADED * nmax)] = 1
            _mcount(S, m, MC_MEDIA_READS, 1)
        occ += evict_occ
    else:
        _mcount(S, m, MC_MEDIA_READS, 1)
    busy = row + (CH_WR_BUSY if S[ix(p + M_SHARED_BUSY)] else CH_RD_BUSY)
    start_fp = max(t * FP, S[ix(busy)])
    S[ix(busy)] = start_fp + occ
    start = _cdiv_fp(start_fp)
    _mcount(S, m, MC_READ_QUEUE_CYCLES, start - t)
    done = start + lat
    if remote:
        done += S[S[H_MGLOB] + G_LINK_LAT]
    return done


@inlined
def write(S, m, addr, nbytes, t0, remote, stamp):
    """A posted write of `nbytes` (<= 64, one line) issued at t0; returns the cycle the
    memory controller accepts it (enters the WPQ, the ADR persistence domain)."""
    p = S[H_MP] + m * N_MPARAMS
    row = _channel_row(S, p, addr)
    _mcount(S, m, MC_WRITES, 1)
    if nbytes < 64:
        _mcount(S, m, MC_PARTIAL_WRITES, 1)
    t = t0
    if remote:
        t = _cross_link(S, t0)
    head = S[ix(row + CH_WPQ_HEAD)]
    slot_free = S[ix(row + CH_WPQ0 + head)]
    arrive = t + S[ix(p + M_ACCEPT_LAT)]
    accept = max(arrive, slot_free)
    _mcount(S, m, MC_WPQ_STALL_CYCLES, accept - arrive)
    occ = S[ix(p + M_WR_OCC_FP)]
    if S[ix(p + M_KIND)] == K_OPTANE:
        nmax = S[S[H_MGLOB] + G_XP_MAX]
        x, evict_occ, present = _xp_slot(S, p, row, addr // S[ix(p + M_XPL_BYTES)], m, stamp)
        chunk = 1 << ((addr % S[ix(p + M_XPL_BYTES)]) // 64)
        occ = S[ix(p + M_BUS_OCC_FP)] + evict_occ
        if nbytes < 64 and not S[ix(x + XP_LOADED * nmax)] and \
                not S[ix(x + XP_MASK * nmax)] & chunk:
            occ += S[ix(p + M_RD_OCC_FP)]
            S[ix(x + XP_LOADED * nmax)] = 1
            _mcount(S, m, MC_MEDIA_READS, 1)
            _mcount(S, m, MC_RMW, 1)
        S[ix(x + XP_MASK * nmax)] |= chunk
    else:
        _mcount(S, m, MC_MEDIA_WRITES, 1)
    start_fp = max(accept * FP, S[ix(row + CH_WR_BUSY)])
    S[ix(row + CH_WR_BUSY)] = start_fp + occ
    S[ix(row + CH_WPQ0 + head)] = _cdiv_fp(S[ix(row + CH_WR_BUSY)])
    # (head + 1) % wpq, head < wpq
    S[ix(row + CH_WPQ_HEAD)] = head + 1 if head + 1 < S[ix(p + M_WPQ)] else 0
    return accept
