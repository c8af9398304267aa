"""Coherence between the cores of a machine: MESI over each core's private levels, a socket's
shared last level standing for its snoop filter, and with two sockets (Machine(sockets=2))
a snoop of the other socket's cores and last level.

A line in a core's private levels (L1D, L2) is, by its flags there (memmodel.cache),
Modified (F_DIRTY), Exclusive (neither F_DIRTY nor F_SHARED) or Shared (F_SHARED: another
core may hold a copy); absent is Invalid. Intel's parts use MESIF, whose F state names the
one sharer that forwards a clean shared line; here a shared line another core must forward
(the last level does not hold it) costs a clean transfer whichever sharer sends it, so F
needs no state of its own; across sockets the same holds (a clean line the requester's
socket lacks costs one remote clean transfer, from whichever core or LLC of the other socket
holds it). The look-up is exact: a core that misses its private levels looks the line up
in every other core's (what the snoop filter's core-valid bits say on Skylake-SP), and in
the other socket's last level. The snoop filter's capacity is modelled apart: an inclusive
last level's evictions drop its socket's copies (memmodel._hierarchy); a non-inclusive
one's extended directory (a profile's cache.llc.directory_ways) evicts, when a set is full,
an entry for a line no LLC of the socket holds, and with it that line's private copies on
the socket (memmodel._snoopfilter); without directory_ways, the directory is unbounded.

- A read that finds the line Modified in another core: a HITM transfer (MT.PEER cycles;
  from the other socket, a core's copy or its LLC's dirty line: XS.REMOTE_HITM); that copy
  turns Shared and clean, its data written back to the reader's last level.
- A read that finds it Exclusive in another core, or Shared where the last level does not
  hold it: a clean transfer (a snoop hit, MT.PEER_HIT); the copies turn Shared. Found only
  on the other socket: XS.REMOTE_HIT. A clean copy on the requester's socket serves it
  whatever the other socket holds.
- A read that finds only Shared copies the last level holds: served by the last level.
- A read for ownership (a store's, a locked op's) invalidates every other copy, on both
  sockets and in the other socket's last level: HITM if one was Modified, else a clean
  snoop round trip when any copy existed (remote when a copy was on the other socket).
- A store to its own Shared copy (an upgrade) invalidates the others (memmodel._hierarchy
  upgrade, one cache-to-cache round trip as for the peer ops; the remote HITM's when a copy
  was on the other socket).
- A flush (CLFLUSH, CLFLUSHOPT, CLWB) and a non-temporal store act on every core's copies and
  both last levels; an inclusive last level's eviction on its own socket's cores' copies.
A line's transfers are serialized: a copy still being filled (its data due after the
request) is sent once it has arrived, so N cores taking one line in turn wait for each
other's transfers, as the caching agent that tracks the line orders them. The copy is
taken at once (the tags say where the line will be, as the directory does).

Not modelled across sockets: the home agent and Skylake-SP's directory in memory (a request
goes straight to the caches that hold the line, so MLC's reader-homed remote HITM, which
consults the requester's home first, costs the writer-homed figure the profiles take), the
snoop's and the data's use of the UPI link (only memory traffic crosses numa's link), and
any caching of what the other socket holds (every miss past a socket's levels snoops it).

Core j's state is reached from core k's view S as view_at(S, (j - k) * MT.CORE_WORDS)
(memmodel.layout, "Cores"; compiled code cannot return a view it made: each function here
makes its own); the other socket's last level through the view of its first core, whose
level table points at that socket's blocks. The sockets and the remote latencies are the
socket section's words after SK (memmodel.layout XS, there with several cores); with one
core only back_invalidate is called (an inclusive last level's eviction, its own levels).
"""
from memmodel import cache as cm
from memmodel.jit import compiled, inlined, ix, view_at
from memmodel.layout import MH, MT, N_SKL, N_XC, XC, XS, XS_END

# what a snoop found in the other cores, in order of what it costs
NONE, SHARED, CLEAN, MODIFIED = 0, 1, 2, 3


# what _visit does to each copy
TO_SHARED, TO_INVALID, TO_CLEAN = 0, 1, 2


@inlined
def per_socket(S):
    """The cores a socket has (the socket section's XS, there with several cores)."""
    return S[MT.CORES] // S[ix(S[MH.SOCKET] + XS.SOCKETS)]


@inlined
def counters_at(S):
    """The offset in S of this core's XC counters (memmodel.layout XS: after the other
    sockets' shared level words; several cores)."""
    return S[MH.SOCKET] + XS_END + N_SKL * (S[ix(S[MH.SOCKET] + XS.SOCKETS)] - 1) \
        + N_XC * S[MT.CORE]


@compiled
def _visit(S, line, act, everywhere):
    """Every other core's copies of `line` (in their private levels; unless `everywhere`,
    only those of this core's socket; with `everywhere`, the other sockets' last levels
    too), each turned Shared and clean (TO_SHARED), dropped (TO_INVALID) or cleaned
    (TO_CLEAN). Returns what this socket's held and what the other sockets' held
    (MODIFIED, CLEAN (Exclusive), SHARED or NONE), the cycle the last of their data arrived
    or arrives (0: none held) and 1 if one was dirty."""
    here, there, busy, dirty = NONE, NONE, 0, 0
    me = S[MT.CORE]
    per = per_socket(S)
    mine = me // per
    last = S[MT.LEVELS] - 1
    for j in range(S[MT.CORES]):
        if j == me:
            continue
        other = j // per != mine
        if other and not everywhere:
            continue
        V = view_at(S, (j - me) * S[MT.CORE_WORDS])   # core j's view
        # the first core of another socket stands for its socket's last level too
        for lvl in range(last + 1 if other and j % per == 0 else last):
            b = cm.lookup(V, lvl, line)
            if b < 0:
                continue
            f = cm.flags(V, b)
            held = MODIFIED if f & cm.F_DIRTY else SHARED if f & cm.F_SHARED else CLEAN
            if other:
                there = max(there, held)
            else:
                here = max(here, held)
            busy = max(busy, cm.ready(V, b))
            dirty |= f & cm.F_DIRTY
            if act == TO_INVALID:
                cm.invalidate(V, lvl, b)
            elif act == TO_CLEAN:
                cm.set_flags(V, b, f & ~cm.F_DIRTY)
            else:
                cm.set_flags(V, b, (f & ~cm.F_DIRTY) | cm.F_SHARED)
    return here, there, busy, dirty


@inlined
def snoop(S, line, own):
    """The other cores' copies of `line` for this core's miss, on every socket: with `own`
    (a read for ownership) invalidated, else turned Shared and clean. Returns what they
    held, the cycle the last of their data arrives (_visit) and 1 if the transfer is from
    the other socket: a modified copy there, or no copy on this socket but one there, or a
    read for ownership that must invalidate copies there."""
    here, there, busy, _ = _visit(S, line, TO_INVALID if own else TO_SHARED, True)
    if there == MODIFIED or (there != NONE and (here == NONE or own)):
        return max(here, there), busy, 1
    return here, busy, 0


@inlined
def transfer_cycles(S, found, own, in_llc, remote):
    """The latency of a miss whose snoop found `found` (0: none beyond the last level's or
    memory's; `remote`: from the other socket): a HITM transfer, a clean one, or none when
    the last level serves it."""
    if found == MODIFIED:
        return S[ix(S[MH.SOCKET] + XS.REMOTE_HITM)] if remote else S[MT.PEER]
    if found == CLEAN or (found == SHARED and (own or not in_llc)):
        return S[ix(S[MH.SOCKET] + XS.REMOTE_HIT)] if remote else S[MT.PEER_HIT]
    return 0


@inlined
def upgrade_cycles(S, remote):
    """An upgrade's invalidation round trip: peer_hitm_ns within the socket, remote_hitm_ns
    when copies on the other socket had to be invalidated."""
    return S[ix(S[MH.SOCKET] + XS.REMOTE_HITM)] if remote else S[MT.PEER]


@inlined
def count_remote(S, found):
    """This core's count of a miss served from (or invalidating) the other socket: a remote
    HITM if `found` is MODIFIED, else a remote snoop hit (memmodel.layout XC)."""
    S[ix(counters_at(S) + (XC.REMOTE_HITM if found == MODIFIED else XC.REMOTE_HITS))] += 1


@compiled
def back_invalidate(S, line):
    """`line` dropped from the private levels of every core of this core's socket, this
    core's included (a last level's eviction: an inclusive one's, or its snoop filter's,
    memmodel._snoopfilter); returns 1 if a copy was dirty. With one core, its own levels."""
    dirty = 0
    for lvl in range(S[MT.LEVELS] - 1):
        b = cm.lookup(S, lvl, line)
        if b >= 0:
            dirty |= cm.invalidate(S, lvl, b)
    if S[MT.CORES] > 1:   # this socket's cores: the other sockets have their own LLC
        dirty |= drop_others(S, line, False, False)
    return dirty


@inlined
def drop_others(S, line, keep, everywhere):
    """Every other core's private copies of `line` dropped (with `keep`, cleaned): with
    `everywhere` (a flush, a non-temporal store) on every socket and in the other sockets'
    last levels, else on this socket (its inclusive last level's eviction). Returns 1 if one
    was dirty."""
    return _visit(S, line, TO_CLEAN if keep else TO_INVALID, everywhere)[3]
