"""Coherence between the cores of a socket: MESI over each core's private levels, the
shared last level standing for the snoop filter.

A line in a core's private levels (L1D, L2) is, by its flags there (memmodel.cache),
Modified (F_DIRTY), Exclusive (neither F_DIRTY nor F_SHARED) or Shared (F_SHARED: another
core may hold a copy); absent is Invalid. Intel's parts use MESIF, whose F state names the
one sharer that forwards a clean shared line; here a shared line another core must forward
(the last level does not hold it) costs a clean transfer whichever sharer sends it, so F
needs no state of its own. The directory is exact: a core that misses its private levels
looks the line up in every other core's (what the snoop filter's core-valid bits say on
Skylake-SP; its capacity and its own back-invalidations are not modelled).

- A read that finds the line Modified in another core: a HITM transfer (MT.PEER cycles);
  that copy turns Shared and clean, its data written back to the last level.
- A read that finds it Exclusive in another core, or Shared where the last level does not
  hold it: a clean transfer (a snoop hit, MT.PEER_HIT); the copies turn Shared.
- A read that finds only Shared copies the last level holds: served by the last level.
- A read for ownership (a store's, a locked op's) invalidates every other copy: HITM if one
  was Modified, else a clean snoop round trip when any copy existed.
- A store to its own Shared copy (an upgrade) invalidates the others (memmodel._hierarchy
  upgrade, one cache-to-cache round trip as for the peer ops).
- A flush (CLFLUSH, CLFLUSHOPT, CLWB), a non-temporal store and an inclusive last level's
  eviction act on every core's copies.
A line's transfers are serialized: a copy still being filled (its data due after the
request) is sent once it has arrived, so N cores taking one line in turn wait for each
other's transfers, as the caching agent that tracks the line orders them. The copy is
taken at once (the tags say where the line will be, as the directory does).

Core j's state is reached from core k's view S as view_at(S, (j - k) * MT.CORE_WORDS)
(memmodel.layout, "Cores"; compiled code cannot return a view it made: each function here
makes its own); with one core no function here is called.
"""
from memmodel import cache as cm
from memmodel.jit import compiled, inlined, view_at
from memmodel.layout import MT

# what a snoop found in the other cores, in order of what it costs
NONE, SHARED, CLEAN, MODIFIED = 0, 1, 2, 3


# what _visit does to each copy
TO_SHARED, TO_INVALID, TO_CLEAN = 0, 1, 2


@compiled
def _visit(S, line, act):
    """Every other core's copies of `line` (in their private levels), each turned Shared and
    clean (TO_SHARED), dropped (TO_INVALID) or cleaned (TO_CLEAN). Returns what they held
    (MODIFIED, CLEAN (Exclusive), SHARED or NONE), the cycle the last of their data arrived
    or arrives (0: none held) and 1 if one was dirty."""
    found, busy, dirty = NONE, 0, 0
    me = S[MT.CORE]
    for j in range(S[MT.CORES]):
        if j == me:
            continue
        V = view_at(S, (j - me) * S[MT.CORE_WORDS])   # core j's view
        for lvl in range(S[MT.LEVELS] - 1):
            b = cm.lookup(V, lvl, line)
            if b < 0:
                continue
            f = cm.flags(V, b)
            found = max(found, MODIFIED if f & cm.F_DIRTY else
                        SHARED if f & cm.F_SHARED else CLEAN)
            busy = max(busy, cm.ready(V, b))
            dirty |= f & cm.F_DIRTY
            if act == TO_INVALID:
                cm.invalidate(V, lvl, b)
            elif act == TO_CLEAN:
                cm.set_flags(V, b, f & ~cm.F_DIRTY)
            else:
                cm.set_flags(V, b, (f & ~cm.F_DIRTY) | cm.F_SHARED)
    return found, busy, dirty


@inlined
def snoop(S, line, own):
    """The other cores' copies of `line` for this core's miss: with `own` (a read for
    ownership) invalidated, else turned Shared and clean. Returns what they held and the
    cycle the last of their data arrives (_visit)."""
    found, busy, _ = _visit(S, line, TO_INVALID if own else TO_SHARED)
    return found, busy


@inlined
def transfer_cycles(S, found, own, in_llc):
    """The latency of a miss whose snoop found `found` (0: none beyond the last level's or
    memory's): a HITM transfer, a clean one, or none when the last level serves it."""
    if found == MODIFIED:
        return S[MT.PEER]
    if found == CLEAN or (found == SHARED and (own or not in_llc)):
        return S[MT.PEER_HIT]
    return 0


@inlined
def drop_others(S, line, keep):
    """Every other core's private copies of `line` dropped (with `keep`, cleaned): a
    flush's or an inclusive last level's eviction. Returns 1 if one was dirty."""
    return _visit(S, line, TO_CLEAN if keep else TO_INVALID)[2]
