"""The one dispatch of the prefetcher hook: prefetcher id `pf` (never "none": the
hierarchy asks only the ids in a level's mask) picks the module (see memmodel.prefetch).
Inlined into the hierarchy's _prefetch; the last branch takes the remaining id."""
from memmodel.jit import inlined
from memmodel.prefetch import PREFETCHER_IDS, next_line, stream

N_IDS = len(PREFETCHER_IDS)


@inlined
def train(S, pf, line, distance, degree):
    if pf == next_line.ID:
        return next_line.train(S, line, distance, degree)
    return stream.train(S, line, distance, degree)
