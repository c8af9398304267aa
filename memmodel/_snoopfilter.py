"""The snoop filter's extended directory of a non-inclusive last level, with several cores:
its capacity and its back-invalidations (docs/hardware.md §3.1).

Skylake-SP's (and Cascade Lake-SP's) LLC is not inclusive; each slice keeps a directory of
the lines the cores hold: entries for lines the LLC holds (Yan et al.'s "traditional
directory": here the LLC's own tags, which memmodel._coherence's exact look-up stands for)
and an "extended directory" (ED) for lines some core holds in its private levels and the
LLC does not, with its own ways in each of the LLC's sets. Here each socket's ED has
`cache.llc.directory_ways` ways for each of the LLC's sets, indexed as the LLC is
(memmodel.cache set_start), kept in the socket section after its counters (memmodel.layout
XS; with one core there is none: memmodel.sections.cache directory_ways says why).

- A line takes an entry when it leaves the socket's LLC (an LLC eviction: a non-inclusive
  level does not drop the cores' copies) while a core of the socket holds it privately, or
  when a core takes it without the LLC (a fast-string store's own_line, which drops the
  LLC's copy).
- An entry is needed while a core of the socket holds its line and the LLC does not: a line
  that left every core, or that the LLC holds again, needs none. The exact look-up of the
  cores (memmodel._coherence) does not read the ED, so an entry is checked only when its set
  is full: those that are no longer needed are dropped then, which leaves the set as a
  directory told of every change would hold it.
- A full set's oldest entry (the first allocated; an allocation of a line already there
  makes it the newest) is evicted: its line is back-invalidated in every core of the socket,
  the caller's included, a dirty copy's data written to memory, at no cycles to the access
  that caused it: as an inclusive LLC's back-invalidations (memmodel._coherence
  back_invalidate, which drops them here too), and counted as the calling core's `sf_back_invalidations` (XC), each
  copy dropped also as its core's level's `invalidations`.

A set's entries are its lines, oldest first, INVALID after the last (EXACT state: no clock).
Compiled code cannot return a view it made, so each function makes its own (memmodel.layout
"Cores"). `track` is apart (memmodel.jit): its callers, the hierarchy's eviction and
own_line, which every core's miss path links, keep their code as it was without it.
"""
from numba import int64

from memmodel import _coherence as coh
from memmodel import _memside as mside
from memmodel import cache as cm
from memmodel._memside import FULL_MASK
from memmodel._persist import PK_NOW
from memmodel.jit import STATE, apart, compiled, inlined, ix, remainder, view_at
from memmodel.layout import LV, LV_AT, MH, MT, XC, XS

N_LV = len(LV)


@inlined
def _sk(S, x):
    """Word x of the socket section."""
    return S[ix(S[MH.SOCKET] + x)]


@inlined
def _set_at(S, line):
    """The offset in S of the first way of `line`'s ED set on this core's socket: the set
    of the last level's index (memmodel.cache set_start)."""
    o = LV_AT + (S[MT.LEVELS] - 1) * N_LV
    m = S[ix(o + LV.MASK)]
    sets = S[ix(o + LV.SETS)]
    s = (line & m) if m >= 0 else remainder(line, sets, S[ix(o + LV.INV)])
    ways = _sk(S, XS.SF_WAYS)
    socket = S[MT.CORE] // coh.per_socket(S)
    return S[MH.SOCKET] + _sk(S, XS.SF_AT) + (socket * sets + s) * ways


@compiled
def _held(S, line):
    """1 if a core of this core's socket holds `line` in its private levels, else 0."""
    me = S[MT.CORE]
    per = coh.per_socket(S)
    first = me // per * per
    for j in range(first, first + per):
        V = view_at(S, (j - me) * S[MT.CORE_WORDS])   # core j's view
        for lvl in range(S[MT.LEVELS] - 1):
            if cm.lookup(V, lvl, line) >= 0:
                return 1
    return 0


@compiled
def _purge(S, at, ways):
    """Drop the entries of the full set at S[at] whose lines need none (no core of the
    socket holds them, or the LLC does), keeping the others' order; returns how many are
    left."""
    llc = S[MT.LEVELS] - 1
    n = 0
    for w in range(ways):
        x = S[ix(at + w)]
        if _held(S, x) and cm.lookup(S, llc, x) < 0:
            S[ix(at + n)] = x
            n += 1
    for w in range(n, ways):
        S[ix(at + w)] = cm.INVALID
    return n


@apart(STATE, int64, int64)
def track(S, line, t):
    """`line` is not (or no longer) in this core's socket's LLC: if a core of the socket
    holds it privately, it takes (or renews) an entry of its ED set; a full set first drops
    its entries no longer needed, then evicts its oldest (the module docstring), at `t`."""
    if not _held(S, line):
        return
    at = _set_at(S, line)
    ways = _sk(S, XS.SF_WAYS)
    n = 0
    while n < ways and S[ix(at + n)] != cm.INVALID:
        n += 1
    for w in range(n):   # already there: it becomes the newest
        if S[ix(at + w)] == line:
            for v in range(w + 1, n):
                S[ix(at + v - 1)] = S[ix(at + v)]
            S[ix(at + n - 1)] = line
            return
    if n == ways:
        n = _purge(S, at, ways)
    if n == ways:
        victim = S[ix(at)]
        for v in range(1, ways):
            S[ix(at + v - 1)] = S[ix(at + v)]
        n -= 1
        if coh.back_invalidate(S, victim):
            mside.mem_write(S, -1, victim, FULL_MASK, t, PK_NOW)
        S[ix(coh.counters_at(S) + XC.SF_BACK_INVALIDATIONS)] += 1
    S[ix(at + n)] = line
