"""The hot-line table's sections (memmodel._hotlines): declared with their roles and
emptied, at build and by Machine.reset_stats."""
import numpy as np

from memmodel._hotlines import HL, N_HL, N_HR
from memmodel.layout import COUNTER, MS, MT, PRIVATE


def _rows(S):
    """The table's rows (one, unused, when the machine keeps none)."""
    return max(int(S[MT.HOT_CAP]), 1)


def _roles(layout, S):
    """A row's event counts and miss cycles (its line, offsets and tags: EXACT), and with
    several sockets each row's remote HITM count after the rows."""
    off, n = layout.offsets["hot"], _rows(S)
    rows = off + N_HL * np.arange(n)
    out = [(rows[:, None] + np.array([HL.L1D_MISSES, HL.STORE_MISSES, HL.LLC_MISSES,
                                      HL.MISS_CYCLES, HL.HITM, HL.PEER_HITS, HL.UPGRADES]),
            COUNTER)]
    size = int(np.prod(layout.shapes["hot"]))
    if size > n * N_HL:
        out.append((np.arange(off + n * N_HL, off + size), COUNTER))
    return out


def add_sections(layout, entries, n_regions):
    if entries < 0 or entries & (entries - 1):
        raise ValueError(f"hot-line table entries must be a power of two, not {entries}")
    # per core, as the sites' tags and the misses it counts; with several sockets (and a
    # table) rows after them hold each row's remote HITM count (memmodel._hotlines
    # remote_hitm_at), so that one socket's machine keeps the table it had
    rows = max(entries, 1)
    extra = -(-rows // N_HL) if layout.sockets > 1 and entries else 0
    layout.add("hot", (rows + extra, N_HL), _roles, share=PRIVATE)
    layout.add("hot_region", (n_regions, N_HR), COUNTER, share=PRIVATE)


def table(layout, S):
    """(rows, remote HITM count of each row or None) of the table in view S."""
    n = _rows(S)
    view = layout.view(S, "hot")
    rest = view[n:].reshape(-1)
    return view[:n], (rest[:n] if len(rest) else None)


def init_sections(layout, S, entries):
    """An empty table of `entries` rows (also what Machine.reset_stats leaves)."""
    S[MT.HOT_CAP] = entries
    S[MS.HOT_USED] = S[MS.HOT_DROPPED] = 0
    layout.view(S, "hot")[...] = 0
    rows, _ = table(layout, S)
    rows[:, HL.LINE] = -1
    rows[:, HL.TAG0:] = -1
    layout.view(S, "hot_region")[...] = 0
