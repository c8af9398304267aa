"""Hardware prefetchers. Each module has the same compiled function

    train(S, line, distance, degree) -> (first, count)

called with every demand miss of the level it serves; it updates its own state in S and
returns the run of lines [first, first+count) to prefetch (count 0: none). The core fills
them like demand misses, skipping lines already present or unmapped. The config string of
a cache level (`prefetcher = "stream"`) is the module name; compiled code dispatches on
the id, the index in PREFETCHER_IDS.
"""
PREFETCHER_IDS = ("none", "next_line", "stream")
PF_NONE, PF_NEXT_LINE, PF_STREAM = range(3)
