"""Least recently used: one last-use stamp per way (as ChampSim's LRU)."""
from memmodel.jit import inlined, ix
from memmodel.policies import POLICY_IDS

ID = POLICY_IDS.index("lru")


@inlined
def on_hit(S, r0, ways, way, stamp):
    S[ix(r0 + way)] = stamp


@inlined
def on_fill(S, r0, ways, way, stamp):
    S[ix(r0 + way)] = stamp


@inlined
def victim(S, r0, ways, rng_i):
    """The way used longest ago (the first of equal stamps), chosen without a branch per
    way: which way wins varies unpredictably."""
    best, oldest = 0, S[ix(r0)]
    for w in range(1, ways):
        s = S[ix(r0 + w)]
        take = s < oldest
        best = w if take else best
        oldest = s if take else oldest
    return best
