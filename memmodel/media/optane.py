"""Optane DCPMM: the media moves XPLines (256 bytes), and each DIMM (chan row) keeps a buffer of
them (XPBuffer, replaced least recently used). A read served from the buffer takes the
buffered latency and only the 64-byte transfer; a miss reads the whole XPLine. A write
merges its 64-byte chunk into the buffered XPLine (a partial write to a chunk the buffer
holds neither loaded nor written first reads the XPLine: a read-modify-write), and evicting
a partially written XPLine that was never loaded costs a read-modify-write of the whole
XPLine. The functions are those of every kind (memmodel.media.dram)."""
from memmodel.jit import compiled, inlined, ix
from memmodel.layout import MH
from memmodel.media import KIND_IDS, MC, MP, XP, G, cycles, occ_fp
from memmodel.media._channels import mcount

KIND = KIND_IDS.index("optane")


def init_params(p, spec, freq_ghz, read_gbps, write_gbps):
    xpl = spec["xpline_bytes"]
    p[MP.BUF_READ_LAT] = cycles(spec["buffer_read_latency_ns"], freq_ghz)
    p[MP.XPL_BYTES] = xpl
    p[MP.XPBUF] = spec["xpbuffer_entries"]
    p[MP.RD_OCC_FP] = occ_fp(xpl, read_gbps, freq_ghz)
    p[MP.WR_OCC_FP] = occ_fp(xpl, write_gbps, freq_ghz)
    # a 64-byte transfer into / out of the XPBuffer at the media's read rate
    p[MP.BUS_OCC_FP] = occ_fp(64, read_gbps, freq_ghz)


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
                mcount(S, m, MC.MEDIA_LINE_READS, 1)
                mcount(S, m, MC.READ_MODIFY_WRITES, 1)
            occ += S[ix(p + MP.WR_OCC_FP)]
            mcount(S, m, MC.MEDIA_LINE_WRITES, 1)
    S[ix(x + slot)] = xpl
    S[ix(x + XP.MASK * nmax + slot)] = 0
    S[ix(x + XP.LOADED * nmax + slot)] = 0
    S[ix(x + XP.STAMP * nmax + slot)] = stamp
    return x + slot, occ, False


@inlined
def _xp_chunk(S, p, row, addr, m, stamp):
    """The XPBuffer entry of the XPLine holding `addr` (_xp_slot) and addr's 64-byte chunk
    in it: (offset of the entry's loaded flag, offset of its written-chunk mask, the chunk's
    bit, occupancy in FP spent evicting, whether the XPLine was buffered)."""
    nmax = S[S[MH.MGLOB] + G.XP_MAX]
    x, evict_occ, present = _xp_slot(S, p, row, addr // S[ix(p + MP.XPL_BYTES)], m, stamp)
    chunk = 1 << ((addr % S[ix(p + MP.XPL_BYTES)]) // 64)
    return x + XP.LOADED * nmax, x + XP.MASK * nmax, chunk, evict_occ, present


@inlined
def read(S, p, m, row, addr, stamp):
    loaded, mask, chunk, evict_occ, present = _xp_chunk(S, p, row, addr, m, stamp)
    if present and (S[ix(loaded)] or S[ix(mask)] & chunk):
        mcount(S, m, MC.XPBUFFER_HITS, 1)
        return S[ix(p + MP.BUF_READ_LAT)], S[ix(p + MP.BUS_OCC_FP)] + evict_occ
    S[ix(loaded)] = 1
    mcount(S, m, MC.MEDIA_LINE_READS, 1)
    return S[ix(p + MP.READ_LAT)], S[ix(p + MP.RD_OCC_FP)] + evict_occ


@inlined
def write(S, p, m, row, addr, nbytes, stamp):
    loaded, mask, chunk, evict_occ, present = _xp_chunk(S, p, row, addr, m, stamp)
    occ = S[ix(p + MP.BUS_OCC_FP)] + evict_occ
    if nbytes < 64 and not S[ix(loaded)] and not S[ix(mask)] & chunk:
        occ += S[ix(p + MP.RD_OCC_FP)]
        S[ix(loaded)] = 1
        mcount(S, m, MC.MEDIA_LINE_READS, 1)
        mcount(S, m, MC.READ_MODIFY_WRITES, 1)
    S[ix(mask)] |= chunk
    return occ
