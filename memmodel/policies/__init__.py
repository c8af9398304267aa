"""Replacement policies. Each module has the same three compiled functions over one set:

    on_hit(S, r0, ways, way, stamp)      a hit on `way`
    on_fill(S, r0, ways, way, stamp)     `way` was just filled
    victim(S, r0, ways, rng_i) -> way    the way to evict from a full set

S[r0 : r0+ways] is the set's int64 replacement state (see memmodel.layout; LRU's order word
is S[r0] alone), `stamp` the level's access counter, S[rng_i] the level's xorshift64 state.

POLICY_IDS is the one list of policy names: a profile's `policy = "..."` is a name here and
the module of that name; its id, its index here, is what compiled code dispatches on, in
memmodel.policies._dispatch (one function per hook). This module imports nothing compiled,
so that memmodel.profile can take the names from it without numba.

Adding a policy: a module NAME.py with the three functions and `ID = POLICY_IDS.index("NAME")`,
its name in POLICY_IDS, and one branch for it in each hook of _dispatch.py; its id in
`stamped` below if its words are stamps of the level's clock (emu.timeshift moves them with
it), in `permutable` if a way's place in the set means nothing to it.
"""
POLICY_IDS = ("lru", "plru", "fifo", "random")
PACKED_WAYS = 16   # LRU keeps a set of up to 16 ways as one word of 4-bit way numbers
# The id of LRU kept as one last-use stamp per way (no profile names it): for a set wider
# than PACKED_WAYS, and for an L1, which is hit far more often than filled: a hit there
# stores a stamp, where the order word's test and move cost an L1-hitting load 13
# instructions more (benchmarks/instructions.py; a copy's loads and stores alternate
# between two lines of one set), and an L1's victim scan is short
LRU_STAMPS = len(POLICY_IDS)


def level_policy(name, ways, level):
    """The policy id a cache level runs: its profile's policy, LRU in one of two forms."""
    if name == "lru" and (ways > PACKED_WAYS or level == 0):
        return LRU_STAMPS
    return POLICY_IDS.index(name)


def stamped(policy_id):
    """Whether a set's replacement words are stamps of its level's clock (emu.timeshift)."""
    return policy_id in (LRU_STAMPS, POLICY_IDS.index("fifo"))


def packed(policy_id):
    """Whether a set's replacement state is LRU's order word, S[r0] (memmodel.policies.lru)."""
    return policy_id == POLICY_IDS.index("lru")


def permutable(policy_id):
    """Whether a set whose lines sit in other ways behaves the same, its replacement state
    moved with them: a way's place in the set means nothing to LRU and FIFO
    (emu.fastforward matches such states)."""
    return packed(policy_id) or stamped(policy_id)
