"""Optane DCPMM: the media moves XPLines (256 bytes), and each DIMM (chan row) keeps a buffer of
them (XPBuffer, replaced least recently used) between its bus and its media.

A DIMM has two timelines: its bus (the chan row's write side: 64-byte writes taken in at the
rate of the DIMM's channel, bus_gbps, and, for reads served from the XPBuffer, 64-byte
transfers out at the media's read rate per channel) and its media (XPLine reads and writes).
Every write (NT line, write-back, eviction) is taken off the WPQ when the DIMM has taken its
64 bytes into the XPBuffer; the media write happens later. An XPLine the buffer holds whole
(all its chunks written) is written to the media at once, in the background, behind the
media's earlier work ([YA20] Fig. 9: a hot region that fits the buffer is written to the
media about once per write, write amplification ~1.0, so the buffer combines writes into
XPLines rather than keeping them until evicted); rewritten whole again before that write has
begun, it joins it. A partially written XPLine goes to the media when it is evicted (a
read-modify-write if the buffer never loaded it), and a partial write to a chunk the buffer
holds neither loaded nor written first reads the XPLine. An entry is reused only when its
media work is done, so a DIMM takes a burst of writes at its bus rate while its buffer has
room and then at its media write rate, once the buffer is full of XPLines waiting for the
media (a one-DIMM stream sustains write_bw_gbps / channels).

A read served from the buffer takes the buffered latency and the bus, and no less than the
read that is loading its XPLine from the media, if one is; a read that misses
it reads the whole XPLine from the media, behind the writes queued there when reads wait
for writes (`reads_wait_for_writes`; else reads have their own timeline, the read side).
The functions are those of every kind (memmodel.media.dram).
"""
from memmodel.jit import compiled, inlined, ix
from memmodel.layout import MH, clock, fields
from memmodel.media import (CH, FP, KIND_IDS, MC, MEDIA_COUNTER_NAMES, MP, G, OwnRow, cycles,
                            occ_fp, own_params)
from memmodel.media._channels import cdiv_fp, mcount, occupy_for_read, read_side

# the kind's declarations (literals, which memmodel.media reads without numba): an XPLine's
# written-chunk mask is one int64 (a bit per 64 bytes), and the XPBuffer is scanned per
# access
KINDS = ("optane",)
PROFILE_KEYS = {
    "buffer_read_latency_ns": ("num", True, 0, 1_000_000),
    "xpline_bytes": ("int", True, 64, 2048),
    "xpbuffer_entries": ("int", True, 1, 1024),
    "bus_gbps": ("num", True, 1e-3, 10_000),   # one DIMM's bus: its write intake
}
# its own parameter columns: a read served from the XPBuffer's latency, a 64-byte move over
# the DIMM's bus (FP), the XPBuffer's entries
PARAMS = "BUF_READ_LAT BUS_OCC_FP XPBUF"
OP = own_params(PARAMS)
KIND = KIND_IDS.index(KINDS[0])
REPORTS = MEDIA_COUNTER_NAMES   # its media's own accesses are XPLines: xpline_reads, _writes
# a DIMM's XPBuffer entry: tag (the XPLine, -1: empty), written-chunk mask, loaded, LRU
# stamp, the cycle its media work is done (READY), the FP start of its media write not yet
# begun (WB; -1: none), the cycle the read that loaded it from the media delivers its data
# (ARRIVE; -1: none)
XP = fields("XP", "TAG MASK LOADED STAMP READY WB ARRIVE")
ROW = OwnRow(XP, "xpbuffer_entries",
             {XP.STAMP: clock("mem"), XP.READY: clock("cycles"), XP.WB: clock("fp", none=True),
              XP.ARRIVE: clock("cycles", none=True)},
             {XP.TAG: -1})


def init_params(p, spec, freq_ghz, read_gbps, write_gbps):
    xpl = spec["xpline_bytes"]
    p[OP.BUF_READ_LAT] = cycles(spec["buffer_read_latency_ns"], freq_ghz)
    p[MP.UNIT_BYTES] = xpl
    p[OP.XPBUF] = spec["xpbuffer_entries"]
    p[MP.RD_OCC_FP] = occ_fp(xpl, read_gbps, freq_ghz)
    p[MP.WR_OCC_FP] = occ_fp(xpl, write_gbps, freq_ghz)
    # a 64-byte read out of the XPBuffer at the media's read rate; a write taken in at the
    # rate of the DIMM's bus
    p[OP.BUS_OCC_FP] = occ_fp(64, read_gbps, freq_ghz)
    p[MP.INTAKE_OCC_FP] = occ_fp(64, spec["bus_gbps"], freq_ghz)


@inlined
def _media(S, row, t, occ):
    """Media work of `occ` FP units from cycle t, after the DIMM's earlier media work;
    returns (its FP start, the cycle it is done)."""
    start = max(t * FP, S[ix(row + CH.MEDIA_BUSY)])
    S[ix(row + CH.MEDIA_BUSY)] = start + occ
    return start, cdiv_fp(start + occ)


@compiled
def _xp_slot(S, p, row, xpl, m, t, stamp):
    """XPBuffer slot of XPLine `xpl` on the DIMM at chan row `row`, for an access reaching it
    at cycle t, inserting the XPLine if absent. Returns (offset of the slot's tag, the cycle
    the slot can take the access: when the evicted XPLine's media work is done, 0 if it
    need not wait; whether the XPLine was present)."""
    n = S[ix(p + OP.XPBUF)]
    x = row + S[ix(S[MH.MGLOB] + G.OWN0)]
    free = -1
    lru = 0
    for s in range(n):
        tag = S[ix(x + s)]
        if tag == xpl:
            S[ix(x + XP.STAMP * n + s)] = stamp
            return x + s, 0, True
        if tag == -1 and free < 0:
            free = s
        if S[ix(x + XP.STAMP * n + s)] < S[ix(x + XP.STAMP * n + lru)]:
            lru = s
    ready = 0
    slot = free
    if slot < 0:
        slot = lru
        ready = S[ix(x + XP.READY * n + slot)]
        full = (1 << (S[ix(p + MP.UNIT_BYTES)] // 64)) - 1
        mask = S[ix(x + XP.MASK * n + slot)]
        if mask:
            occ = S[ix(p + MP.WR_OCC_FP)]
            mcount(S, m, MC.MEDIA_LINE_WRITES, 1)
            if mask != full and not S[ix(x + XP.LOADED * n + slot)]:
                occ += S[ix(p + MP.RD_OCC_FP)]
                mcount(S, m, MC.MEDIA_LINE_READS, 1)
                mcount(S, m, MC.READ_MODIFY_WRITES, 1)
            ready = max(ready, _media(S, row, t, occ)[1])
    S[ix(x + slot)] = xpl
    S[ix(x + XP.MASK * n + slot)] = 0
    S[ix(x + XP.LOADED * n + slot)] = 0
    S[ix(x + XP.STAMP * n + slot)] = stamp
    S[ix(x + XP.READY * n + slot)] = ready
    S[ix(x + XP.WB * n + slot)] = -1
    S[ix(x + XP.ARRIVE * n + slot)] = -1
    return x + slot, ready, False


@inlined
def read(S, p, m, row, addr, t, stamp):
    n = S[ix(p + OP.XPBUF)]
    xpl = S[ix(p + MP.UNIT_BYTES)]
    x, ready, present = _xp_slot(S, p, row, addr // xpl, m, t, stamp)
    chunk = 1 << ((addr % xpl) // 64)
    written = S[ix(x + XP.MASK * n)] & chunk
    if present and (S[ix(x + XP.LOADED * n)] or written):
        mcount(S, m, MC.XPBUFFER_HITS, 1)
        start = occupy_for_read(S, m, read_side(S, p, row), t, t, S[ix(p + OP.BUS_OCC_FP)])
        done = start + S[ix(p + OP.BUF_READ_LAT)]
        # the buffer cannot send bytes the media has not delivered yet: a chunk of an XPLine
        # still being read leaves with the read that loads it (nothing added: the way back
        # to the core is the same, and the 64 B move on the DDR-T bus is a few ns)
        return done if written else max(done, S[ix(x + XP.ARRIVE * n)])
    S[ix(x + XP.LOADED * n)] = 1
    mcount(S, m, MC.MEDIA_LINE_READS, 1)
    busy = row + (CH.MEDIA_BUSY if S[ix(p + MP.SHARED_BUSY)] else CH.RD_BUSY)
    occ = S[ix(p + MP.RD_OCC_FP)]
    start = occupy_for_read(S, m, busy, t, ready, occ)
    # the entry holds the XPLine once it is read (an eviction waits for that)
    S[ix(x + XP.READY * n)] = max(S[ix(x + XP.READY * n)], cdiv_fp(start * FP + occ))
    S[ix(x + XP.ARRIVE * n)] = start + S[ix(p + MP.READ_LAT)]
    return S[ix(x + XP.ARRIVE * n)]


@inlined
def write(S, p, m, row, addr, nbytes, t, stamp):
    n = S[ix(p + OP.XPBUF)]
    xpl = S[ix(p + MP.UNIT_BYTES)]
    # the DIMM takes the 64 bytes in when its intake is free, into the XPLine's entry once
    # that entry is free of the XPLine it evicts
    start = max(t * FP, S[ix(row + CH.WR_BUSY)])
    x, ready, _ = _xp_slot(S, p, row, addr // xpl, m, cdiv_fp(start), stamp)
    start = max(start, ready * FP)
    S[ix(row + CH.WR_BUSY)] = start + S[ix(p + MP.INTAKE_OCC_FP)]
    done = cdiv_fp(S[ix(row + CH.WR_BUSY)])
    chunk = 1 << ((addr % xpl) // 64)
    loaded, mask, rdy, wb = x + XP.LOADED * n, x + XP.MASK * n, x + XP.READY * n, \
        x + XP.WB * n
    if nbytes < 64 and not S[ix(loaded)] and not S[ix(mask)] & chunk:
        # the rest of the chunk comes from the media: read the XPLine
        S[ix(rdy)] = max(S[ix(rdy)], _media(S, row, done, S[ix(p + MP.RD_OCC_FP)])[1])
        S[ix(loaded)] = 1
        mcount(S, m, MC.MEDIA_LINE_READS, 1)
        mcount(S, m, MC.READ_MODIFY_WRITES, 1)
    S[ix(mask)] |= chunk
    if S[ix(mask)] == (1 << (xpl // 64)) - 1:
        # the whole XPLine is buffered: written to the media, unless a media write of it
        # that has not begun yet takes these bytes too
        if S[ix(wb)] <= done * FP:
            wb_start, wb_done = _media(S, row, done, S[ix(p + MP.WR_OCC_FP)])
            S[ix(wb)] = wb_start
            S[ix(rdy)] = max(S[ix(rdy)], wb_done)
            mcount(S, m, MC.MEDIA_LINE_WRITES, 1)
        S[ix(mask)] = 0
        S[ix(loaded)] = 1
    return done
