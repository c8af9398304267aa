"""The one dispatch per policy hook: the level's policy id `p` picks the module (see
memmodel.policies). Each is inlined into its caller: on the hit path a policy update costs
its compares and the policy's own code, no call. The last branch takes the remaining id
(the profile admits only POLICY_IDS; LRU_STAMPS is
memmodel.policies.level_policy's)."""
from memmodel.jit import inlined
from memmodel.policies import LRU_STAMPS, fifo, lru, plru
from memmodel.policies import random as rnd


@inlined
def on_hit(S, p, r0, ways, way, stamp):
    if p == LRU_STAMPS:
        lru.stamp(S, r0, ways, way, stamp)
    elif p == lru.ID:
        lru.on_hit(S, r0, ways, way, stamp)
    elif p == plru.ID:
        plru.on_hit(S, r0, ways, way, stamp)
    elif p == fifo.ID:
        fifo.on_hit(S, r0, ways, way, stamp)
    else:
        rnd.on_hit(S, r0, ways, way, stamp)


@inlined
def on_fill(S, p, r0, ways, way, stamp):
    if p == LRU_STAMPS:
        lru.stamp(S, r0, ways, way, stamp)
    elif p == lru.ID:
        lru.on_fill(S, r0, ways, way, stamp)
    elif p == plru.ID:
        plru.on_fill(S, r0, ways, way, stamp)
    elif p == fifo.ID:
        fifo.on_fill(S, r0, ways, way, stamp)
    else:
        rnd.on_fill(S, r0, ways, way, stamp)


@inlined
def victim(S, p, r0, ways, rng_i):
    if p == LRU_STAMPS:
        return lru.oldest(S, r0, ways, rng_i)
    if p == lru.ID:
        return lru.victim(S, r0, ways, rng_i)
    if p == plru.ID:
        return plru.victim(S, r0, ways, rng_i)
    if p == fifo.ID:
        return fifo.victim(S, r0, ways, rng_i)
    return rnd.victim(S, r0, ways, rng_i)
