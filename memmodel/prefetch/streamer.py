"""L2 streamer as Intel documents it: ascending and descending streams within a 4 KiB page
(memmodel.prefetch.stream's table and train(), with descending streams on).

Source (memmodel.prefetch._manual.MANUAL), "Data Prefetch to the L2 and Last Level Cache":
"Streamer: This prefetcher monitors read requests from the L1 cache for ascending and
descending sequences of addresses. [...] When a forward or backward stream of requests is
detected, the anticipated cache lines are prefetched. Prefetched cache lines must be in the
same 4K page." Its reach is the profile's [prefetch] values, sourced there from the same
text: "The streamer may issue two prefetch requests on every L2 lookup. The streamer can
run up to 20 lines ahead of the load request." (stream_degree_lines, stream_distance_lines)
and "Detects and maintains up to 32 streams of data accesses. For each 4K byte page, you
can maintain one forward and one backward stream" (stream_entries).

Not modelled: the lookups it monitors are the L1's demand misses (not the L1 prefetchers'
requests nor code fetches); it does not adjust its distance to the outstanding requests
nor prefetch far lines to the LLC only, as the manual says it does; a page holds one
stream at a time (memmodel.prefetch.stream).
"""
from memmodel.jit import inlined
from memmodel.prefetch import PREFETCHER_IDS, stream

ID = PREFETCHER_IDS.index("streamer")


@inlined
def train(S, line, distance, degree):
    return stream.train(S, line, distance, degree, True)
