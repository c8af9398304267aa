"""Tree pseudo-LRU for a power-of-two number of ways.

The set's ways-1 tree nodes live in S[r0 : r0+ways-1]; node n has children 2n+1 and
2n+2, and its bit names the half (0 left, 1 right) that holds the next victim.
"""
from memmodel.jit import inlined, ix
from memmodel.policies import POLICY_IDS

ID = POLICY_IDS.index("plru")


@inlined
def _point_away(S, r0, ways, way):
    node = 0
    half = ways >> 1
    lo = 0
    while half >= 1:
        right = way >= lo + half
        S[ix(r0 + node)] = 0 if right else 1
        if right:
            lo += half
            node = 2 * node + 2
        else:
            node = 2 * node + 1
        half >>= 1


@inlined
def on_hit(S, r0, ways, way, stamp):
    _point_away(S, r0, ways, way)


@inlined
def on_fill(S, r0, ways, way, stamp):
    _point_away(S, r0, ways, way)


@inlined
def victim(S, r0, ways, rng_i):
    node = 0
    way = 0
    half = ways >> 1
    while half >= 1:
        if S[ix(r0 + node)]:
            way += half
            node = 2 * node + 2
        else:
            node = 2 * node + 1
        half >>= 1
    return way
