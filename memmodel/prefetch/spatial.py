"""L2 spatial prefetcher (the BIOS's "adjacent cache line prefetch"): a demand miss of the
L2 fetches the other line of its 128-byte-aligned pair.

Source (memmodel.prefetch._manual.MANUAL), "Data Prefetch to the L2 and Last Level Cache":
"Spatial Prefetcher: This prefetcher strives to complete every cache line fetched to the L2
cache with the pair line that completes it to a 128-byte aligned chunk."

Model: it runs after each L1 demand miss that also missed the L2 (a line fetched to the L2
by a demand access); lines the other prefetchers fetch do not trigger it (a simplification).
The pair line is line ^ 1; the hierarchy skips it when the level holds it already.
"""
from memmodel.jit import inlined
from memmodel.prefetch import PREFETCHER_IDS

ID = PREFETCHER_IDS.index("spatial")


@inlined
def train(S, line, l2_missed):
    return line ^ 1, 1 if l2_missed else 0, 1
