"""The hot-line table's sections (memmodel._hotlines): declared with their roles and
emptied, at build and by Machine.reset_stats."""
import numpy as np

from memmodel._hotlines import HL, N_HL, N_HR
from memmodel.layout import COUNTER, MS, MT, PRIVATE


def _roles(layout, S):
    """A row's event counts and miss cycles (its line, offsets and tags: EXACT)."""
    rows = layout.offsets["hot"] + N_HL * np.arange(layout.shapes["hot"][0])
    return [(rows[:, None] + np.array([HL.L1D_MISSES, HL.STORE_MISSES, HL.LLC_MISSES,
                                       HL.MISS_CYCLES, HL.HITM, HL.PEER_HITS, HL.UPGRADES]),
             COUNTER)]


def add_sections(layout, entries, n_regions):
    if entries < 0 or entries & (entries - 1):
        raise ValueError(f"hot-line table entries must be a power of two, not {entries}")
    # per core, as the sites' tags and the misses it counts
    layout.add("hot", (max(entries, 1), N_HL), _roles, share=PRIVATE)
    layout.add("hot_region", (n_regions, N_HR), COUNTER, share=PRIVATE)


def init_sections(layout, S, entries):
    """An empty table of `entries` rows (also what Machine.reset_stats leaves)."""
    S[MT.HOT_CAP] = entries
    S[MS.HOT_USED] = S[MS.HOT_DROPPED] = 0
    rows = layout.view(S, "hot")
    rows[...] = 0
    rows[:, HL.LINE] = -1
    rows[:, HL.TAG0:] = -1
    layout.view(S, "hot_region")[...] = 0
