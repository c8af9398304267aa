"""DRAM-like media (the kinds dram and nvdimm-n: NVDIMM-N serves from its DRAM and saves it
to flash only on power loss): every access moves one 64-byte line at the channel's rate.

A kind's module holds the same three functions:

    init_params(p, spec, freq_ghz, read_gbps, write_gbps)   the kind's columns of mp row p
    read(S, p, m, row, addr, stamp) -> (latency, occupancy in FP units)
    write(S, p, m, row, addr, nbytes, stamp) -> occupancy of the write side in FP units

init_params fills the media's parameter row from its profile table `spec` (bandwidths per
channel); read and write time an access to media `m`, whose parameters are at S[p] and
whose chan row serving `addr` is at S[row]; `stamp` orders the accesses. The channel
timing around them is memmodel.media._channels'.
"""
from memmodel.jit import inlined, ix
from memmodel.media import MC, MP, occ_fp
from memmodel.media._channels import mcount


def init_params(p, spec, freq_ghz, read_gbps, write_gbps):
    p[MP.BUF_READ_LAT] = p[MP.READ_LAT]
    p[MP.XPL_BYTES] = 64
    p[MP.RD_OCC_FP] = occ_fp(64, read_gbps, freq_ghz)
    p[MP.WR_OCC_FP] = occ_fp(64, write_gbps, freq_ghz)
    p[MP.BUS_OCC_FP] = p[MP.RD_OCC_FP]


@inlined
def read(S, p, m, row, addr, stamp):
    mcount(S, m, MC.MEDIA_LINE_READS, 1)
    return S[ix(p + MP.READ_LAT)], S[ix(p + MP.RD_OCC_FP)]


@inlined
def write(S, p, m, row, addr, nbytes, stamp):
    mcount(S, m, MC.MEDIA_LINE_WRITES, 1)
    return S[ix(p + MP.WR_OCC_FP)]
