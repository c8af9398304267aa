"""The one dispatch of the prefetcher hook: prefetcher id `pf` (never "none": the
hierarchy asks only the ids in a level's mask) picks the module (see memmodel.prefetch).
Inlined into the hierarchy's _prefetch; the last branch takes the remaining id.

Each gets what it trains on: the missed line (next_line, the streams: with their reach),
whether it also missed the L2 (spatial), the load's ip and byte address (ip_stride)."""
from memmodel.jit import inlined
from memmodel.prefetch import PREFETCHER_IDS, ip_stride, next_line, spatial, stream, streamer

N_IDS = len(PREFETCHER_IDS)


@inlined
def train(S, pf, line, distance, degree, ip, addr, l2_missed):
    if pf == next_line.ID:
        return next_line.train(S, line, distance, degree)
    if pf == stream.ID:
        return stream.train(S, line, distance, degree, False)
    if pf == streamer.ID:
        return streamer.train(S, line, distance, degree)
    if pf == spatial.ID:
        return spatial.train(S, line, l2_missed)
    return ip_stride.train(S, ip, addr)
