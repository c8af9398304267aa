"""Hardware prefetchers. Each module has the same compiled function

    train(S, line, distance, degree) -> (first, count)

called with every demand miss of the level it serves; it updates its own state in S and
returns the run of lines [first, first+count) to prefetch (count 0: none). The core fills
them like demand misses, skipping lines already present or unmapped.

PREFETCHER_IDS is the one list of prefetcher names: a cache level's `prefetcher = "..."`
is a name here and the module of that name, except "none" (no prefetcher, no module). Its
id, its index here, is what compiled code dispatches on, in memmodel.prefetch._dispatch.
This module imports nothing compiled, so that memmodel.profile can take the names from it
without numba.

Adding a prefetcher: a module NAME.py with train() and `ID = PREFETCHER_IDS.index("NAME")`,
its name in PREFETCHER_IDS, and one branch for it in _dispatch.train.
"""
PREFETCHER_IDS = ("none", "next_line", "stream")
PF_NONE = PREFETCHER_IDS.index("none")
