"""Least recently used: one last-use stamp per way (as ChampSim's LRU)."""
from memmodel.jit import inlined, ix


@inlined
def on_hit(S, r0, ways, way, stamp):
    S[ix(r0 + way)] = stamp


@inlined
def on_fill(S, r0, ways, way, stamp):
    S[ix(r0 + way)] = stamp


@inlined
def victim(S, r0, ways, rng_i):
    best, oldest = 0, S[ix(r0)]
    for w in range(1, ways):   # the minimum in a register: no reload through `best`
        if S[ix(r0 + w)] < oldest:
            best, oldest = w, S[ix(r0 + w)]
    return best
