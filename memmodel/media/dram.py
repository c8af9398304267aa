"""DRAM-like media (the kinds dram and nvdimm-n: NVDIMM-N serves from its DRAM and saves it
to flash only on power loss): every access moves one 64-byte line at the channel's rate.

A kind's module declares KINDS, PROFILE_KEYS and PARAMS (literals: memmodel.media reads
them from its source, without numba; PARAMS names its own parameter columns, after the shared
ones, as memmodel.media.own_params(PARAMS) numbers them), ROW (its per-channel state, a
memmodel.media.OwnRow: its fields with their roles and the profile key that gives its
entries; None: none), REPORTS (which of memmodel.media.MEDIA_COUNTER_NAMES its media report)
and holds the same three functions:

    init_params(p, spec, freq_ghz, read_gbps, write_gbps)   the kind's values in mp row p
    read(S, p, m, row, addr, t, stamp) -> the cycle the data is back
    write(S, p, m, row, addr, nbytes, t, stamp) -> the cycle its WPQ slot is free again

init_params fills the media's parameter row from its profile table `spec` (bandwidths per
channel); read and write time an access to media `m`, whose parameters are at S[p] and
whose chan row serving `addr` is at S[row]: a read arriving at cycle t, a write accepted
into the WPQ at cycle t; `stamp` orders the accesses. The channel timing around them (the
link, the WPQ's slots, a timeline's occupancy) is memmodel.media._channels'.
"""
from memmodel.jit import inlined, ix
from memmodel.media import CH, FP, MC, MEDIA_COUNTER_NAMES, MP, occ_fp
from memmodel.media._channels import cdiv_fp, mcount, occupy_for_read, read_side

KINDS = ("dram", "nvdimm-n")
PROFILE_KEYS = {}
PARAMS = ""
ROW = None
# its media read and write 64 B lines, which line_reads and line_writes count already
REPORTS = tuple(n for n in MEDIA_COUNTER_NAMES if n not in ("xpline_reads", "xpline_writes"))


def init_params(p, spec, freq_ghz, read_gbps, write_gbps):
    p[MP.UNIT_BYTES] = 64
    p[MP.RD_OCC_FP] = occ_fp(64, read_gbps, freq_ghz)
    p[MP.WR_OCC_FP] = occ_fp(64, write_gbps, freq_ghz)
    p[MP.INTAKE_OCC_FP] = p[MP.WR_OCC_FP]   # the channel's write side is the intake


@inlined
def read(S, p, m, row, addr, t, stamp):
    """The line moves over the channel's read side (or its write side, when reads wait for
    writes) and is back the media's latency after it starts."""
    mcount(S, m, MC.MEDIA_LINE_READS, 1)
    start = occupy_for_read(S, m, read_side(S, p, row), t, t, S[ix(p + MP.RD_OCC_FP)])
    return start + S[ix(p + MP.READ_LAT)]


@inlined
def write(S, p, m, row, addr, nbytes, t, stamp):
    """The write leaves the WPQ when the channel's write side has moved it at the write
    bandwidth, after the writes before it."""
    mcount(S, m, MC.MEDIA_LINE_WRITES, 1)
    start_fp = max(t * FP, S[ix(row + CH.WR_BUSY)])
    S[ix(row + CH.WR_BUSY)] = start_fp + S[ix(p + MP.WR_OCC_FP)]
    return cdiv_fp(S[ix(row + CH.WR_BUSY)])
