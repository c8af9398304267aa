"""First in, first out: one fill stamp per way; hits do not change it. The victim is the
way with the oldest stamp, chosen as LRU's wide sets choose it (only the stamping differs)."""
from memmodel.jit import inlined
from memmodel.policies import POLICY_IDS
from memmodel.policies.lru import oldest as victim  # noqa: F401  (same signature, reused)
from memmodel.policies.lru import stamp as on_fill  # noqa: F401

ID = POLICY_IDS.index("fifo")


@inlined
def on_hit(S, r0, ways, way, stamp):
    pass
