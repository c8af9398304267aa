"""The one dispatch of the prefetcher hook: the level's prefetcher id `pf` (never PF_NONE:
the hierarchy asks only levels that have one) picks the module (see memmodel.prefetch).
Inlined into the miss path's caller; the last branch takes the remaining id."""
from memmodel.jit import inlined
from memmodel.prefetch import next_line, stream


@inlined
def train(S, pf, line, distance, degree):
    if pf == next_line.ID:
        return next_line.train(S, line, distance, degree)
    return stream.train(S, line, distance, degree)
