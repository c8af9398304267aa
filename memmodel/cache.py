"""Set-associative cache levels, as sections of the state buffer S (memmodel.layout).

All levels share flat per-block sections (tags, repl, ready, flags): level l's blocks start
at lv[l, LV.BASE], set s at LV.BASE + s*ways (what a set keeps in repl: memmodel.policies).
Compiled phases are small functions: lookup, touch (hit), fill (victim choice + evict +
install), invalidate. The sections' set-up and Python views: memmodel.sections.cache.
"""
from memmodel.jit import equal4, equal8, host_prefetch, inlined, ix, remainder, trailing_zeros
from memmodel.layout import LV, LV_AT, MH, fields
from memmodel.policies import _dispatch as policies

# lv[level, field]: memmodel.layout.LV
N_LV = len(LV)
# Derived columns, last: LV.EMPTY, how many of the level's blocks are invalid, derived from
# the tags (a victim choice scans the set for an invalid way only while there are any: once
# a level is full, that scan would find none); LV.INV, the bits of the float64 1/sets (a set
# index without a 64-bit division, jit.remainder).

# flags[block] bits
F_DIRTY, F_PREFETCHED, F_TRANSIENT = 1, 2, 4   # F_TRANSIENT: brought from memory by a
#                                               transient load, not used architecturally since
F_PEER = 8   # (last level only) modified in another core's cache since: a PEER_WRITE
F_SHARED = 16   # another core may hold a copy: it read the line since this one last wrote
#                 it (a PEER_READ, or a core of the machine: memmodel._coherence)

# ccnt[level, counter]; stats() names them in lower case. WRITEBACK_IN_*: dirty victims
# arriving from the level above; DIRTY_WRITEBACKS: dirty evictions sent down;
# PEER_TRANSFERS: accesses that found the line modified in another core (cache-to-cache);
# PEER_UPGRADES: stores that found it shared with another core (its copy invalidated);
# PEER_HITS: misses another core's clean copy served or had to be snooped for (a snoop hit).
CC = fields("CC", "LOAD_HITS LOAD_MISSES STORE_HITS STORE_MISSES WRITEBACK_IN_HITS "
            "WRITEBACK_IN_MISSES FILLS EVICTIONS DIRTY_WRITEBACKS PREFETCH_FILLS PREFETCH_USEFUL "
            "INVALIDATIONS PEER_TRANSFERS PEER_UPGRADES PEER_HITS")
COUNTER_NAMES = tuple(c.name.lower() for c in CC)
N_COUNTERS = len(CC)

INVALID = -1

# memo: derived caches (not model state) of what was found last: the L1 block (memmodel._l1)
# and the region (MEMO.REGION, memmodel.memory's), each valid while it still holds what it
# names, which its user checks (memmodel.layout.MEMO): DERIVED, as are lv's columns from
# LV.EMPTY on, which the tags determine


@inlined
def hit_cycles(S, lvl):
    return S[ix(LV_AT + lvl * N_LV + LV.HIT)]


@inlined
def use_at(S, lvl):
    """Offset in S of the row whose LV.RNG, LV.STAMP and LV.EMPTY are level `lvl`'s: its
    own, or for the level the cores share, the socket section's (memmodel.layout.SK)."""
    return S[ix(LV_AT + lvl * N_LV + LV.USE)]


@inlined
def counters_at(S, lvl):
    """Offset in S of level `lvl`'s counters (ccnt[lvl, :])."""
    return S[MH.CCNT] + lvl * N_COUNTERS


@inlined
def count(S, lvl, counter, n):
    S[ix(counters_at(S, lvl) + counter)] += n


@inlined
def counter(S, lvl, c):
    return S[ix(counters_at(S, lvl) + c)]


@inlined
def set_start(S, lvl, line):
    """Block index of the first way of `line`'s set at `lvl`."""
    o = LV_AT + lvl * N_LV
    m = S[ix(o + LV.MASK)]
    s = (line & m) if m >= 0 else remainder(line, S[ix(o + LV.SETS)], S[ix(o + LV.INV)])
    return S[ix(o + LV.BASE)] + s * S[ix(o + LV.WAYS)]


@inlined
def _first_way(S, t, ways, x):
    """The first w < ways with S[t + w] == x, or -1. Eight ways a vector compare, then
    four, then one at a time: set scans are the hot loops of misses and bulk ops."""
    w = 0
    while w + 8 <= ways:
        m = equal8(S, ix(t + w), x)
        if m:
            return w + trailing_zeros(m)
        w += 8
    if w + 4 <= ways:
        m = equal4(S, ix(t + w), x)
        if m:
            return w + trailing_zeros(m)
        w += 4
    while w < ways:
        if S[ix(t + w)] == x:
            return w
        w += 1
    return -1


@inlined
def find(S, lvl, i0, line):
    """Block index holding `line` in the set whose first way is block `i0`, or -1."""
    w = _first_way(S, S[MH.TAGS] + i0, S[ix(LV_AT + lvl * N_LV + LV.WAYS)], line)
    return i0 + w if w >= 0 else -1


@inlined
def lookup(S, lvl, line):
    """Block index holding `line` at level `lvl`, or -1."""
    return find(S, lvl, set_start(S, lvl, line), line)


@inlined
def _prefetch_ways(S, a, ways):
    """Host-cache hints for S[a:a + ways]. The sections start a host line (8 ways) and the
    profiles' levels hold sets of 8 or 16 ways from block 0, so a set lies in the host
    lines of its first and its last way: two hints and no loop (a set's prefetch runs for
    most ops; a loop over the arrays cost more instructions a level, counted with
    benchmarks/instructions.py on lineseq)."""
    if ways <= 16:
        host_prefetch(S, a)
        host_prefetch(S, a + ways - 1)
    else:
        for w in range(0, ways + 7, 8):
            host_prefetch(S, a + min(w, ways - 1))


@inlined
def prefetch_blocks(S, lvl, i0):
    """Host-cache hint only: start loading the state (tags, flags, ready of every way, the
    replacement state's first word: all of an LRU order word) of the set at `lvl` whose
    first way is block i0, so that a later lookup/fill does not wait for it, or waits for
    its arrays at once rather than one after the other."""
    ways = S[ix(LV_AT + lvl * N_LV + LV.WAYS)]
    host_prefetch(S, S[MH.REPL] + i0)
    _prefetch_ways(S, S[MH.TAGS] + i0, ways)
    _prefetch_ways(S, S[MH.FLAGS] + i0, ways)
    _prefetch_ways(S, S[MH.READY] + i0, ways)


@inlined
def prefetch_set(S, lvl, line):
    """prefetch_blocks for `line`'s set."""
    prefetch_blocks(S, lvl, set_start(S, lvl, line))


@inlined
def prefetch_tags(S, lvl, line):
    """Host-cache hint for the tags of `line`'s set at `lvl`: all that a lookup which
    misses reads (a bulk op's lines, not cached, evicted or flushed, miss at the LLC)."""
    _prefetch_ways(S, S[MH.TAGS] + set_start(S, lvl, line), S[ix(LV_AT + lvl * N_LV + LV.WAYS)])


@inlined
def ready(S, b):
    return S[ix(S[MH.READY] + b)]


@inlined
def flags(S, b):
    return S[ix(S[MH.FLAGS] + b)]


@inlined
def set_flags(S, b, f):
    S[ix(S[MH.FLAGS] + b)] = f


@inlined
def touch(S, lvl, i0, b):
    """Replacement update for a hit on block `b` of the set starting at block `i0`."""
    u = use_at(S, lvl)
    S[ix(u + LV.STAMP)] += 1
    on_hit(S, lvl, i0, b, S[ix(u + LV.STAMP)])


@inlined
def on_hit(S, lvl, i0, b, stamp):
    """touch() with the level's use stamp already advanced to `stamp`."""
    policy_hit(S, policy(S, lvl), S[MH.REPL] + i0, ways(S, lvl), b - i0, stamp)


# policy_hit(S, p, r0, ways, way, stamp): policy `p`'s update for a hit on `way` of the set
# whose replacement state starts at r0 (a hot loop passes the level's policy, ways and
# stamp from registers)
policy_hit = policies.on_hit


@inlined
def policy(S, lvl):
    return S[ix(LV_AT + lvl * N_LV + LV.POLICY)]


@inlined
def ways(S, lvl):
    return S[ix(LV_AT + lvl * N_LV + LV.WAYS)]


@inlined
def _victim_way(S, u, r0, t, ways, policy):
    """The way a fill of the set takes (tags at S[t], replacement state at S[r0]) at the
    level whose changing words are at S[u] (use_at): an invalid way while the level has
    any, else the policy's victim."""
    if S[ix(u + LV.EMPTY)] > 0:
        w = _first_way(S, t, ways, INVALID)
        if w >= 0:
            return w
    return policies.victim(S, policy, r0, ways, u + LV.RNG)


@inlined
def fill(S, lvl, i0, line, at, flg):
    """Install `line` in its set at `lvl`, starting at block `i0` (it must not be present),
    with data ready at cycle `at` and flags `flg`. Returns (block index, evicted line or
    INVALID, whether it was dirty). The level's fields and the sections' offsets are read
    once: the compiler cannot tell that the stores into S between their uses leave them."""
    o = LV_AT + lvl * N_LV
    ways, policy, u = S[ix(o + LV.WAYS)], S[ix(o + LV.POLICY)], S[ix(o + LV.USE)]
    r0, t = S[MH.REPL] + i0, S[MH.TAGS] + i0
    way = _victim_way(S, u, r0, t, ways, policy)
    b = i0 + way
    fb = S[MH.FLAGS] + b
    c = counters_at(S, lvl)
    old = S[ix(t + way)]
    old_dirty = S[ix(fb)] & F_DIRTY
    if old != INVALID:
        S[ix(c + CC.EVICTIONS)] += 1
        if old_dirty:
            S[ix(c + CC.DIRTY_WRITEBACKS)] += 1
    else:
        S[ix(u + LV.EMPTY)] -= 1
    S[ix(t + way)] = line
    S[ix(fb)] = flg
    S[ix(S[MH.READY] + b)] = at
    S[ix(c + CC.FILLS)] += 1
    stamp = S[ix(u + LV.STAMP)] + 1
    S[ix(u + LV.STAMP)] = stamp
    policies.on_fill(S, policy, r0, ways, way, stamp)
    return b, old, old_dirty


@inlined
def invalidate(S, lvl, b):
    """Drop block `b`; returns whether it was dirty."""
    was_dirty = S[ix(S[MH.FLAGS] + b)] & F_DIRTY
    if S[ix(S[MH.TAGS] + b)] != INVALID:
        S[ix(use_at(S, lvl) + LV.EMPTY)] += 1
    S[ix(S[MH.TAGS] + b)] = INVALID
    S[ix(S[MH.FLAGS] + b)] = 0
    count(S, lvl, CC.INVALIDATIONS, 1)
    return was_dirty
