"""Random replacement from a seeded xorshift64 generator (deterministic per seed)."""
import numpy as np

from memmodel.jit import inlined, ix
from memmodel.policies import POLICY_IDS

ID = POLICY_IDS.index("random")


@inlined
def on_hit(S, r0, ways, way, stamp):
    pass


@inlined
def on_fill(S, r0, ways, way, stamp):
    pass


@inlined
def victim(S, r0, ways, rng_i):
    x = np.uint64(S[ix(rng_i)])
    x ^= x << np.uint64(13)
    x ^= x >> np.uint64(7)
    x ^= x << np.uint64(17)
    S[ix(rng_i)] = np.int64(x)
    return np.int64(x % np.uint64(ways))
