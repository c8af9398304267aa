"""Least recently used, in one of two forms (memmodel.policies.level_policy picks it).
A set of at most PACKED_WAYS ways below L1 keeps its recency order in one word, S[r0]:
nibble p (bits 4p..4p+3) is the way at position p, 0 the most recently used, ways - 1 the
victim. A hit or fill moves its way to the front: a few shifts and masks, no scan, and a
hit on the front way changes nothing; the victim is one shift. Otherwise a set keeps one
last-use stamp per way (as ChampSim's LRU; id LRU_STAMPS), the victim the oldest. Both
choose the same ways: every way of a full set has been filled, so its place in the order
is the order of the stamps (which are distinct: the level's stamp counts every use)."""
import numpy as np

from memmodel.jit import equal8, inlined, ix, min8, trailing_zeros
from memmodel.policies import POLICY_IDS

ID = POLICY_IDS.index("lru")
NIBBLES = 0x1111111111111111   # bit 4p of every nibble p
LOW15 = 0x0111111111111111     # ... of the lower 15 (15 times it does not overflow)


def first_order(ways):
    """The order word of a set before any use: way p at position p (any order of the ways
    would do: no victim is chosen before every way was filled)."""
    return np.uint64(sum(p << (4 * p) for p in range(ways))).view(np.int64)


@inlined
def to_front(S, r0, way):
    """Move `way` to the front of the order word S[r0]. Shifts and masks only: numba's
    signed subtraction may not overflow (LLVM folds on it), a shift may."""
    x = S[ix(r0)]
    if x & 15 != way:
        w = np.int64(way)
        y = x ^ (w * LOW15 | w << 60)   # the nibble holding `way` is 0, the only 0 below it
        y |= y >> 1
        y |= y >> 2
        at = trailing_zeros(~y & NIBBLES)   # its first bit: 4 x its position
        below = (1 << at) - 1
        above = ~(((1 << at) << 4) - 1)      # 0 when `way` was the last of 16
        S[ix(r0)] = (x & above) | ((x & below) << 4) | w


@inlined
def stamp(S, r0, ways, way, stamp):
    S[ix(r0 + way)] = stamp


@inlined
def oldest(S, r0, ways, rng_i):
    """The way with the oldest stamp (the first of equal stamps), chosen without a branch
    per way: which way wins varies unpredictably. An 8-way set (an L1's): the least stamp
    by one vector reduction, and the first way that holds it."""
    if ways == 8:
        return trailing_zeros(equal8(S, ix(r0), min8(S, ix(r0))))
    best, old = 0, S[ix(r0)]
    for w in range(1, ways):
        s = S[ix(r0 + w)]
        take = s < old
        best = w if take else best
        old = s if take else old
    return best


@inlined
def on_hit(S, r0, ways, way, stamp):
    to_front(S, r0, way)


@inlined
def on_fill(S, r0, ways, way, stamp):
    """A full set fills its victim, the way at the back: every position moves up by one
    and the victim goes in front, a rotation (no scan for its place); a set with an
    invalid way fills that, wherever it is in the order."""
    x = S[ix(r0)]
    back = 4 * (ways - 1)
    if (x >> back) & 15 == way:
        w = np.int64(way)
        S[ix(r0)] = (x ^ (w << back)) << 4 | w
    else:
        to_front(S, r0, way)


@inlined
def victim(S, r0, ways, rng_i):
    return (S[ix(r0)] >> (4 * (ways - 1))) & 15
