"""Replacement policies. Each module has the same three compiled functions over one set:

    on_hit(S, r0, ways, way, stamp)      a hit on `way`
    on_fill(S, r0, ways, way, stamp)     `way` was just filled
    victim(S, r0, ways, rng_i) -> way    the way to evict from a full set

S[r0 : r0+ways] is the set's int64 replacement state (see memmodel.layout), `stamp` the
level's access counter, S[rng_i] the level's xorshift64 state.
The id of a policy is its index in POLICY_IDS; compiled code dispatches on that id.
"""
POLICY_IDS = ("lru", "plru", "fifo", "random")
