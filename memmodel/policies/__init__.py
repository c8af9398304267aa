"""Replacement policies. Each module has the same three compiled functions over one set:

    on_hit(S, r0, ways, way, stamp)      a hit on `way`
    on_fill(S, r0, ways, way, stamp)     `way` was just filled
    victim(S, r0, ways, rng_i) -> way    the way to evict from a full set

S[r0 : r0+ways] is the set's int64 replacement state (see memmodel.layout), `stamp` the
level's access counter, S[rng_i] the level's xorshift64 state.

POLICY_IDS is the one list of policy names: a profile's `policy = "..."` is a name here and
the module of that name; its id, its index here, is what compiled code dispatches on, in
memmodel.policies._dispatch (one function per hook). This module imports nothing compiled,
so that memmodel.profile can take the names from it without numba.

Adding a policy: a module NAME.py with the three functions and `ID = POLICY_IDS.index("NAME")`,
its name in POLICY_IDS, and one branch for it in each hook of _dispatch.py.
"""
POLICY_IDS = ("lru", "plru", "fifo", "random")
