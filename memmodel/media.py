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
from memmodel.layout import MH, fields

FP = 1024

K_DRAM, K_NVDIMM_N, K_OPTANE = 0, 1, 2
KINDS = ("dram", "nvdimm-n", "optane")
PERSISTENCE = ("none", "adr", "eadr")

# mp[media, field] (latencies in cycles, occupancies in FP units)
MP = fields("MP", "KIND READ_LAT BUF_READ_LAT ACCEPT_LAT RD_OCC_FP WR_OCC_FP BUS_OCC_FP CHANNELS "
            "INTERLEAVE CHAN0 WPQ XPL_BYTES XPBUF SHARED_BUSY PERSIST")
N_MPARAMS = len(MP)

# mcnt[media, counter]; stats() names them in lower case
MC = fields("MC", "READS WRITES PARTIAL_WRITES MEDIA_LINE_READS MEDIA_LINE_WRITES "
            "READ_MODIFY_WRITES XPBUFFER_HITS WPQ_FULL_STALL_CYCLES READ_QUEUE_CYCLES")
MEDIA_COUNTER_NAMES = tuple(c.name.lower() for c in MC)
N_MCOUNTERS = len(MC)

# mglob[]: interconnect and the shape of a chan row
G = fields("G", "LINK_BUSY_FP LINK_OCC_FP LINK_LAT CHAN_STRIDE XP0 XP_MAX")
# chan[channel, ...]: RD_BUSY, WR_BUSY (FP), WPQ_HEAD, WPQ slots from WPQ0 (drain-complete
# cycle), then XPBuffer entries from G.XP0 as four runs of G.XP_MAX (XP): tag,
# written-chunk mask, loaded, LRU stamp
CH = fields("CH", "RD_BUSY WR_BUSY WPQ_HEAD WPQ0")
XP = fields("XP", "TAG MASK LOADED STAMP")


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
    layout.add("chan", (channels, CH.WPQ0 + max_q + len(XP) * max_x))
    layout.add("mglob", len(G))


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
        p[MP.KIND] = kind
        p[MP.READ_LAT] = cyc(m["read_latency_ns"])
        p[MP.ACCEPT_LAT] = cyc(m["write_accept_ns"])
        p[MP.CHANNELS] = ch
        p[MP.INTERLEAVE] = m["interleave_bytes"]
        p[MP.CHAN0] = chan0
        p[MP.WPQ] = m["wpq_entries"]
        p[MP.SHARED_BUSY] = 1 if m["reads_wait_for_writes"] else 0
        p[MP.PERSIST] = PERSISTENCE.index(m["persistence"])
        rd_bw, wr_bw = m["read_bw_gbps"] / ch, m["write_bw_gbps"] / ch
        if kind == K_OPTANE:
            xpl = m["xpline_bytes"]
            p[MP.BUF_READ_LAT] = cyc(m["buffer_read_latency_ns"])
            p[MP.XPL_BYTES] = xpl
            p[MP.XPBUF] = m["xpbuffer_entries"]
            p[MP.RD_OCC_FP] = _occ_fp(xpl, rd_bw, freq_ghz)
            p[MP.WR_OCC_FP] = _occ_fp(xpl, wr_bw, freq_ghz)
            # a 64-byte transfer into / out of the XPBuffer at the media's read rate
            p[MP.BUS_OCC_FP] = _occ_fp(64, rd_bw, freq_ghz)
        else:
            p[MP.BUF_READ_LAT] = p[MP.READ_LAT]
            p[MP.XPL_BYTES] = 64
            p[MP.RD_OCC_FP] = _occ_fp(64, rd_bw, freq_ghz)
            p[MP.WR_OCC_FP] = _occ_fp(64, wr_bw, freq_ghz)
            p[MP.BUS_OCC_FP] = p[MP.RD_OCC_FP]
        chan0 += ch
    g = layout.view(S, "mglob")
    g[G.LINK_OCC_FP] = _occ_fp(64, numa["remote_bw_gbps"], freq_ghz)
    g[G.LINK_LAT] = cyc(numa["remote_latency_ns"])
    g[G.CHAN_STRIDE] = CH.WPQ0 + max_q + len(XP) * max_x
    g[G.XP0] = CH.WPQ0 + max_q
    g[G.XP_MAX] = max_x
    chan = layout.view(S, "chan")
    chan[:, CH.WPQ0 + max_q:CH.WPQ0 + max_q + max_x] = -1  # XPBuffer tags: empty


@inlined
def _cdiv_fp(t_fp):
    return (t_fp + FP - 1) // FP


@inlined
def _mcount(S, m, counter, n):
    S[ix(S[MH.MCNT] + m * N_MCOUNTERS + counter)] += n


@inlined
def _channel_row(S, p, addr):
    """Offset in S of the chan row serving `addr` (p: offset of the media's params)."""
    il, n = S[ix(p + MP.INTERLEAVE)], S[ix(p + MP.CHANNELS)]
    # powers of two (the usual case; the profile keeps both positive): no 64-bit division
    if (il & (il - 1)) | (n & (n - 1)) == 0:
        c = (addr >> trailing_zeros(il)) & (n - 1)
    else:
        c = (addr // il) % n
    return S[MH.CHAN] + (S[ix(p + MP.CHAN0)] + c) * S[S[MH.MGLOB] + G.CHAN_STRIDE]


@inlined
def _cross_link(S, t):
    """A remote request crosses the interconnect: returns the cycle it leaves the link."""
    g = S[MH.MGLOB]
    start = max(t * FP, S[ix(g + G.LINK_BUSY_FP)])
    S[ix(g + G.LINK_BUSY_FP)] = start + S[ix(g + G.LINK_OCC_FP)]
    return _cdiv_fp(start) + S[ix(g + G.LINK_LAT)]


@compiled
def _xp_slot(S, p, row, xpl, m, stamp):
    """XPBuffer slot of XPLine `xpl` on the DIMM at chan row `row`, inserting it if absent.
    Returns (offset of the slot's tag, media occupancy in FP spent evicting the LRU XPLine,
    whether it was present)."""
    g = S[MH.MGLOB]
    nmax = S[ix(g + G.XP_MAX)]
    x = row + S[ix(g + G.XP0)]
    n = S[ix(p + MP.XPBUF)]
    free = -1
    lru = 0
    for s in range(n):
        t = S[ix(x + s)]
        if t == xpl:
            S[ix(x + XP.STAMP * nmax + s)] = stamp
            return x + s, 0, True
        if t == -1 and free < 0:
            free = s
        if S[ix(x + XP.STAMP * nmax + s)] < S[ix(x + XP.STAMP * nmax + lru)]:
            lru = s
    occ = 0
    slot = free
    if slot < 0:
        slot = lru
        full = (1 << (S[ix(p + MP.XPL_BYTES)] // 64)) - 1
        mask = S[ix(x + XP.MASK * nmax + slot)]
        if mask:
            if mask != full and not S[ix(x + XP.LOADED * nmax + slot)]:
                occ += S[ix(p + MP.RD_OCC_FP)]
                _mcount(S, m, MC.MEDIA_LINE_READS, 1)
                _mcount(S, m, MC.READ_MODIFY_WRITES, 1)
            occ += S[ix(p + MP.WR_OCC_FP)]
            _mcount(S, m, MC.MEDIA_LINE_WRITES, 1)
    S[ix(x + slot)] = xpl
    S[ix(x + XP.MASK * nmax + slot)] = 0
    S[ix(x + XP.LOADED * nmax + slot)] = 0
    S[ix(x + XP.STAMP * nmax + slot)] = stamp
    return x + slot, occ, False


@inlined
def read(S, m, addr, t0, remote, stamp):
    """A 64-byte read of media `m` by a load that started at cycle t0; returns the cycle
    its data is back (idle: t0 + the media's load-to-use latency)."""
    p = S[MH.MP] + m * N_MPARAMS
    row = _channel_row(S, p, addr)
    _mcount(S, m, MC.READS, 1)
    t = t0
    if remote:
        t = _cross_link(S, t0) - S[S[MH.MGLOB] + G.LINK_LAT]
    lat = S[ix(p + MP.READ_LAT)]
    occ = S[ix(p + MP.RD_OCC_FP)]
    if S[ix(p + MP.KIND)] == K_OPTANE:
        nmax = S[S[MH.MGLOB] + G.XP_MAX]
        x, evict_occ, present = _xp_slot(S, p, row, addr // S[ix(p + MP.XPL_BYTES)], m, stamp)
        chunk = 1 << ((addr % S[ix(p + MP.XPL_BYTES)]) // 64)
        if present and (S[ix(x + XP.LOADED * nmax)] or S[ix(x + XP.MASK * nmax)] & chunk):
            lat = S[ix(p + MP.BUF_READ_LAT)]
            occ = S[ix(p + MP.BUS_OCC_FP)]
            _mcount(S, m, MC.XPBUFFER_HITS, 1)
        else:
            S[ix(x + XP.LOADED * nmax)] = 1
            _mcount(S, m, MC.MEDIA_LINE_READS, 1)
        occ += evict_occ
    else:
        _mcount(S, m, MC.MEDIA_LINE_READS, 1)
    busy = row + (CH.WR_BUSY if S[ix(p + MP.SHARED_BUSY)] else CH.RD_BUSY)
    start_fp = max(t * FP, S[ix(busy)])
    S[ix(busy)] = start_fp + occ
    start = _cdiv_fp(start_fp)
    _mcount(S, m, MC.READ_QUEUE_CYCLES, start - t)
    done = start + lat
    if remote:
        done += S[S[MH.MGLOB] + G.LINK_LAT]
    return done


@inlined
def write(S, m, addr, nbytes, t0, remote, stamp):
    """A posted write of `nbytes` (<= 64, one line) issued at t0; returns the cycle the
    memory controller accepts it (enters the WPQ, the ADR persistence domain)."""
    p = S[MH.MP] + m * N_MPARAMS
    row = _channel_row(S, p, addr)
    _mcount(S, m, MC.WRITES, 1)
    if nbytes < 64:
        _mcount(S, m, MC.PARTIAL_WRITES, 1)
    t = t0
    if remote:
        t = _cross_link(S, t0)
    head = S[ix(row + CH.WPQ_HEAD)]
    slot_free = S[ix(row + CH.WPQ0 + head)]
    arrive = t + S[ix(p + MP.ACCEPT_LAT)]
    accept = max(arrive, slot_free)
    _mcount(S, m, MC.WPQ_FULL_STALL_CYCLES, accept - arrive)
    occ = S[ix(p + MP.WR_OCC_FP)]
    if S[ix(p + MP.KIND)] == K_OPTANE:
        nmax = S[S[MH.MGLOB] + G.XP_MAX]
        x, evict_occ, present = _xp_slot(S, p, row, addr // S[ix(p + MP.XPL_BYTES)], m, stamp)
        chunk = 1 << ((addr % S[ix(p + MP.XPL_BYTES)]) // 64)
        occ = S[ix(p + MP.BUS_OCC_FP)] + evict_occ
        if nbytes < 64 and not S[ix(x + XP.LOADED * nmax)] and \
                not S[ix(x + XP.MASK * nmax)] & chunk:
            occ += S[ix(p + MP.RD_OCC_FP)]
            S[ix(x + XP.LOADED * nmax)] = 1
            _mcount(S, m, MC.MEDIA_LINE_READS, 1)
            _mcount(S, m, MC.READ_MODIFY_WRITES, 1)
        S[ix(x + XP.MASK * nmax)] |= chunk
    else:
        _mcount(S, m, MC.MEDIA_LINE_WRITES, 1)
    start_fp = max(accept * FP, S[ix(row + CH.WR_BUSY)])
    S[ix(row + CH.WR_BUSY)] = start_fp + occ
    S[ix(row + CH.WPQ0 + head)] = _cdiv_fp(S[ix(row + CH.WR_BUSY)])
    # (head + 1) % wpq, head < wpq
    S[ix(row + CH.WPQ_HEAD)] = head + 1 if head + 1 < S[ix(p + MP.WPQ)] else 0
    return accept
