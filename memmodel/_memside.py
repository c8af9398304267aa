"""The memory side of the hierarchy: a line read from its media, a posted write to it.

Each request looks up its region, goes to the region's media channel (memmodel.media) and
counts per region; a write to a persistent region is queued for the persistence domain
(memmodel._persist) when memory is functional.
"""
from memmodel import _persist as persist
from memmodel import memory as mm
from memmodel.jit import compiled, inlined, ix
from memmodel.layout import MH, MS, MT, SK
from memmodel.media import _dispatch as media
from memmodel.memory import N_RCOUNT, RCTR

FULL_MASK = -1   # all 64 bytes of a line


@inlined
def popcount(x):
    """Set bits of the 64-bit x: the sign bit, then SWAR over the other 63. No step may
    overflow: LLVM assumes signed arithmetic does not, and folds comparisons of the result
    accordingly (a multiply-and-shift sum of the bytes made popcount < 64 false)."""
    n = 1 if x < 0 else 0
    x &= 0x7FFFFFFFFFFFFFFF
    x -= (x >> 1) & 0x5555555555555555
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    x += x >> 8
    x += x >> 16
    x += x >> 32
    return n + (x & 0x7F)


@inlined
def next_use(S):
    """The next stamp of media and WC use: the socket's, as the cores share the media."""
    a = ix(S[MH.SOCKET] + SK.MEM_STAMP)
    S[a] += 1
    return S[a]


@inlined
def _write(S, r, line, mask, t, pkind):
    addr = line << 6
    if r < 0:
        r = mm.find_region(S, addr)
    nbytes = 64 if mask == FULL_MASK else popcount(mask)
    acc, ack, hold = media.write(S, mm.reg(S, r, mm.RG.MEDIA), addr, nbytes, t,
                                 mm.reg(S, r, mm.RG.NODE) != S[MT.NODE], next_use(S))
    S[ix(S[MH.REGION_CTR] + r * N_RCOUNT + RCTR.LINE_WRITES)] += 1
    S[MS.MEDIA_WRITES] += 1
    if acc > S[MS.MEM_END]:
        S[MS.MEM_END] = acc
    if S[MT.FUNCTIONAL] and mm.reg(S, r, mm.RG.PERSIST) != mm.P_NONE:
        persist.pq_push(S, line, mask, pkind)
    return acc, ack, hold


@compiled
def mem_write(S, r, line, mask, t, pkind):
    """Posted write of the bytes of `line` selected by `mask`; returns the WPQ accept cycle.
    `r`: the line's region, if the caller knows it (a bulk op looks it up once a page),
    else -1. With functional memory, a write to a persistent region is queued for the
    persistence domain: durable at once (PK_NOW) or at the next fence (PK_FENCED)."""
    return _write(S, r, line, mask, t, pkind)[0]


@compiled
def mem_post(S, r, line, mask, t, pkind):
    """mem_write for a write-combining buffer's line: returns (the WPQ accept cycle, the
    cycle the buffer learns the line was taken, the cycle the buffer is free again)."""
    return _write(S, r, line, mask, t, pkind)


@inlined
def mem_read(S, line, t):
    """A demand or prefetch read of `line` from its media at cycle t; returns when its data
    is back."""
    addr = line << 6
    r = mm.find_region(S, addr)
    done = media.read(S, mm.reg(S, r, mm.RG.MEDIA), addr, t,
                      mm.reg(S, r, mm.RG.NODE) != S[MT.NODE], next_use(S))
    S[ix(S[MH.REGION_CTR] + r * N_RCOUNT + RCTR.LINE_READS)] += 1
    S[MS.MEDIA_READS] += 1
    return done
