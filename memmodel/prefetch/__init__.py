"""Hardware prefetchers. Each module has a compiled function train(S, ...) (its arguments
in memmodel.prefetch._dispatch) called after the demand misses of the level it serves; it
updates its own state in S and returns the lines to prefetch as (first, count, step): the
lines first, first + step, ... (count of them; count 0: none). The core fills them like
demand misses, skipping lines already present or unmapped.

PREFETCHER_IDS is the one list of prefetcher names: a cache level's `prefetcher` names
any of them (a list, or one name; "none": no prefetcher, no module), each the module of
that name. A level's prefetchers are one bit mask in compiled code, bit `ID - 1` for the
prefetcher of index ID here (`mask`), 0 for none: a level with none costs one test per
miss, and one dispatch per level asks its prefetchers in the order of PREFETCHER_IDS.
This module imports nothing compiled, so that memmodel.profile can take the names from it
without numba.

Adding a prefetcher: a module NAME.py with train() and `ID = PREFETCHER_IDS.index("NAME")`,
its name in PREFETCHER_IDS, and one branch for it in _dispatch.train.
"""
PREFETCHER_IDS = ("none", "next_line", "stream", "streamer", "spatial", "ip_stride")
PF_NONE = 0   # the mask of a level with no prefetcher


def bit(pf):
    """The mask bit of prefetcher id `pf` (not "none")."""
    return 1 << (pf - 1)


def mask(names):
    """The mask of a level running the prefetchers `names`."""
    return sum(bit(PREFETCHER_IDS.index(n)) for n in names)
