"""First in, first out: one fill stamp per way; hits do not change it. The victim is the
way with the oldest stamp, chosen exactly as LRU chooses (only the stamping differs)."""
from memmodel.jit import inlined
from memmodel.policies import POLICY_IDS
from memmodel.policies.lru import on_fill, victim  # noqa: F401  (same signature, reused)

ID = POLICY_IDS.index("fifo")


@inlined
def on_hit(S, r0, ways, way, stamp):
    pass
