"""The cache levels' sections (memmodel.cache): declared with their roles, set from the
profile's [cache.*] tables, and read back as Python lists for tests and reports."""
import numpy as np

from memmodel.cache import INVALID, N_COUNTERS, N_LV
from memmodel.jit import reciprocal_bits
from memmodel.layout import (COUNTER, DERIVED, EXACT, LV, LV_AT, LV_ROWS, MEMO, MH, N_SKL,
                             PRIVATE, SHARED, SK, XC, XS, clock)
from memmodel.policies import level_policy, packed, stamped
from memmodel.policies.lru import first_order


def clock_of_level(level):
    """The clock of a level's use stamps (emu.timeshift)."""
    return f"lru{level}"


def _shared_level(layout):
    """The level the cores share (its changing words in the socket section), or None."""
    return layout.shapes["lv"][0] - 1 if layout.shared_words["tags"] else None


def _lv_roles(layout, S):
    """Each private level's use stamp, and the DERIVED columns (the shared level's RNG,
    STAMP and EMPTY are unused, 0: _socket_roles)."""
    rows = LV_AT + N_LV * np.arange(layout.shapes["lv"][0])
    return [(rows[:, None] + np.arange(LV.EMPTY, N_LV), DERIVED)] + [
        (np.array([r + LV.STAMP]), clock(clock_of_level(lvl), own=True))
        for lvl, r in enumerate(rows) if lvl != _shared_level(layout)]


def socket_words(layout, levels=()):
    """The socket section's words: SK, and with several cores XS, the other sockets' shared
    level words, the cores' counters and each socket's extended directory (memmodel.layout
    XS)."""
    if layout.cores == 1:
        return len(SK)
    return directory_at(layout) + layout.sockets * directory_words(layout, levels)


def directory_at(layout):
    """The offset in the socket section of socket 0's extended directory (several cores):
    after the cores' counters."""
    return counters_at(layout, layout.cores)


def directory_ways(layout, levels):
    """The ways of each set of the snoop filter's extended directory (memmodel._snoopfilter):
    the last level's `directory_ways`, with several cores, a non-inclusive last level shared
    below a private one; else 0, none modelled."""
    if layout.cores == 1 or len(levels) < 2 or levels[-1].get("inclusive"):
        return 0
    return int(levels[-1].get("directory_ways", 0))


def directory_words(layout, levels):
    """One socket's extended directory's words: a line (or INVALID) a way of each of the
    last level's sets."""
    ways = directory_ways(layout, levels)
    return ways and levels[-1]["size_bytes"] // (64 * levels[-1]["ways"]) * ways


def level_words_at(layout, socket):
    """The offset in the socket section of socket `socket`'s shared level RNG (then STAMP,
    EMPTY)."""
    return SK.RNG if socket == 0 else len(SK) + len(XS) + N_SKL * (socket - 1)


def counters_at(layout, k):
    """The offset in the socket section of core k's XC counters."""
    return len(SK) + len(XS) + N_SKL * (layout.sockets - 1) + len(XC) * k


def _socket_roles(layout, S):
    """The memory side's use stamp, and each socket's shared level's use stamp and empty-way
    count (unused, 0, without one); the cores' counts of transfers from the other socket."""
    off = layout.offsets["socket"]
    out = [(np.array([off + SK.MEM_STAMP]), clock("mem", own=True))]
    lvl = _shared_level(layout)
    if lvl is not None:
        for s in range(layout.sockets):
            at = off + level_words_at(layout, s) - SK.RNG
            out += [(np.array([at + SK.STAMP]), clock(clock_of_level(lvl), own=True)),
                    (np.array([at + SK.EMPTY]), DERIVED)]
    if layout.cores > 1:
        out.append((off + counters_at(layout, 0) + np.arange(len(XC) * layout.cores),
                    COUNTER))
    return out


def _repl_roles(layout, S):
    """The blocks' use stamps of the levels whose policy keeps stamps (FIFO, and LRU in L1
    or in sets of more than 16 ways), on their level's clock."""
    out = []
    for lvl in range(layout.shapes["lv"][0]):
        row = LV_AT + lvl * N_LV
        if stamped(S[row + LV.POLICY]):
            base, n = S[row + LV.BASE], S[row + LV.SETS] * S[row + LV.WAYS]
            out.append((layout.offsets["repl"] + np.arange(base, base + n),
                        clock(clock_of_level(lvl))))
    return out


def add_sections(layout, levels):
    """Declare the cache sections for `levels` (dicts with size_bytes, ways, ...)."""
    if len(levels) > LV_ROWS:
        raise ValueError(f"at most {LV_ROWS} cache levels are modelled, not {len(levels)}")
    total = sum(lv["size_bytes"] // 64 for lv in levels)
    layout.add("memo", len(MEMO), DERIVED, share=PRIVATE)
    # each core's level table: its shared level's BASE is the distance to the shared blocks
    layout.add("lv", (len(levels), N_LV), _lv_roles, share=PRIVATE, signature=True)
    for name, role in (("tags", EXACT), ("repl", _repl_roles), ("ready", clock("cycles")),
                       ("flags", EXACT)):   # a set of 8 ways is one host line
        layout.add(name, total, role, share=PRIVATE, on_line=True,
                   shared_words=_shared_blocks(levels))
    layout.add("ccnt", (len(levels), N_COUNTERS), COUNTER, share=PRIVATE)   # by the core counting
    # the socket's changing words: the shared level's and the memory side's (memmodel.layout)
    # (the extended directories, EXACT, are left out of fast-forward's signature: large)
    layout.add("socket", socket_words(layout, levels), _socket_roles, share=SHARED,
               signature=True if layout.cores == 1 else np.arange(directory_at(layout)))


def _shared_blocks(levels):
    """The blocks of the level the cores share: the last, below a private one."""
    last = levels[-1]
    return last["size_bytes"] // 64 if len(levels) > 1 else 0


def init_sections(layout, S, levels, seed=0):
    lv = layout.view(S, "lv")
    base = 0
    shared = _shared_level(layout)
    for i, lvl in enumerate(levels):
        sets = lvl["size_bytes"] // (64 * lvl["ways"])
        lv[i, LV.SETS] = sets
        lv[i, LV.MASK] = sets - 1 if sets & (sets - 1) == 0 else -1
        lv[i, LV.WAYS] = lvl["ways"]
        lv[i, LV.BASE] = layout.tail_at(S, "tags") if i == shared else base
        lv[i, LV.HIT] = lvl["hit_cycles"]
        lv[i, LV.POLICY] = level_policy(lvl["policy"], lvl["ways"], i)
        # xorshift must not start at 0; distinct per level, fixed by the seed
        x = (seed * 0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D * (i + 1)) % 2**64 or 1
        lv[i, LV.USE] = _use_at(layout, S, i == shared, i)
        for s in range(layout.sockets if i == shared else 1):   # each socket's LLC alike
            changing = (layout.view(S, "socket")[level_words_at(layout, s) - SK.RNG:]
                        if i == shared else lv[i, LV.RNG:])
            changing[SK.RNG] = np.uint64(x).view(np.int64)
            changing[SK.EMPTY] = sets * lvl["ways"]
        lv[i, LV.INV] = reciprocal_bits(sets)
        if packed(lv[i, LV.POLICY]):
            layout.view(S, "repl")[base:base + sets * lvl["ways"]:lvl["ways"]] = \
                first_order(lvl["ways"])
        base += sets * lvl["ways"]
    layout.view(S, "tags")[:] = INVALID
    if layout.cores > 1:   # the extended directories: empty (memmodel._snoopfilter)
        sk = layout.view(S, "socket")
        sk[XS.SF_WAYS], sk[XS.SF_AT] = directory_ways(layout, levels), directory_at(layout)
        sk[directory_at(layout):] = INVALID


def _use_at(layout, S, shared, i):
    """lv[i, LV.USE] in view S: the socket section's words for the shared level (its
    socket's, which mirror LV.RNG, LV.STAMP, LV.EMPTY); else row i's own."""
    if shared:
        k = layout._core_of(S)
        return S[MH.SOCKET] + level_words_at(layout, layout.socket_of(k)) - LV.RNG
    return LV_AT + i * N_LV


def spread(layout, S):
    """Point every core's shared level (its lv row's BASE and USE) at its socket's shared
    blocks and words, once S's private words are copied from core 0 (Layout.spread)."""
    lvl = _shared_level(layout)
    if lvl is not None:
        for k in range(1, layout.cores):
            S_k = layout.core(S, k)
            layout.view(S_k, "lv")[lvl, LV.BASE] = layout.tail_at(S_k, "tags")
            layout.view(S_k, "lv")[lvl, LV.USE] = _use_at(layout, S_k, True, lvl)


def contents(layout, S, lvl):
    """Python view for tests and reports: list of sets, each a sorted list of lines."""
    lv = layout.view(S, "lv")[lvl]
    n_sets, ways, b = int(lv[LV.SETS]), int(lv[LV.WAYS]), int(lv[LV.BASE])
    tags = layout.view(S, "tags")[b:b + n_sets * ways].reshape(n_sets, ways)
    return [sorted(int(t) for t in row if t != INVALID) for row in tags]


def lines_with_flag(layout, S, lvl, flag):
    """Sorted list of the lines held at `lvl` with `flag` (F_DIRTY, F_TRANSIENT) set."""
    lv = layout.view(S, "lv")[lvl]
    b, n = int(lv[LV.BASE]), int(lv[LV.SETS] * lv[LV.WAYS])
    tags = layout.view(S, "tags")[b:b + n]
    fl = layout.view(S, "flags")[b:b + n]
    return sorted(int(t) for t, f in zip(tags, fl) if t != INVALID and f & flag)
