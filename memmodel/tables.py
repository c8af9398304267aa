"""The memory side's sections that no single model owns, from the profile (Python only).

mt holds the switches the hierarchy, the media side and the persistence domain read (see
memmodel.layout); the line fill buffers, the L2's miss entries, write-combining buffers,
per-region counters and the persistence queue get their sizes here.
"""
import numpy as np

from memmodel._persist import N_PE, N_PQ, PQ_ENTRIES
from memmodel._wc import N_WC, WC
from memmodel.layout import (COUNTER, EXACT, MH, MS, MS_ROLES, MT, PRIVATE, SF_DIRECTORY, SHARED,
                             XS, clock, ring)
from memmodel.memory import N_RCOUNT, RESERVED_FRAMES, SNAPSHOTS
from memmodel.prefetch import PF_NONE, mask
from memmodel.profile_schema import CACHE_LEVELS
from memmodel.sections.cache import directory_ways

MAX_WC_BUFFERS = 64   # a WC buffer's byte mask is one int64


def l2_miss_entries(values):
    """The L2's outstanding-miss entries; 0 when the profile has no L2."""
    return values["cache"].get(CACHE_LEVELS[1], {}).get("mshr_entries", 0)


def _wc_roles(layout, S):
    """A buffer's busy time and its use stamp."""
    rows = layout.offsets["wc"] + N_WC * np.arange(layout.shapes["wc"][0])
    return [(rows + WC.BUSY, clock("cycles")), (rows + WC.STAMP, clock("mem"))]


def add_sections(layout, values, n_regions):
    core = values["core"]
    # per core: the switches (a copy each), the scalars, the fill buffers, the L2's miss
    # entries, the WC buffers, and the persistence queue and pending ring (an op's and a
    # fence's own); shared: the regions' counts of media traffic, as the media's
    layout.add("mt", len(MT), EXACT, share=PRIVATE)
    layout.add("ms", len(MS), MS_ROLES, share=PRIVATE, signature=True)
    layout.add("lfb", core["lfb_entries"], clock("cycles"), share=PRIVATE, signature=True)
    layout.add("sq", l2_miss_entries(values), clock("cycles"), share=PRIVATE, signature=True)
    layout.add("wc", (core["wc_buffers"], N_WC), _wc_roles, share=PRIVATE, signature=True)
    layout.add("region_ctr", (n_regions, N_RCOUNT), COUNTER, share=SHARED)
    layout.add("pq", (PQ_ENTRIES, N_PQ), EXACT, share=PRIVATE)
    layout.add("pend", (SNAPSHOTS, N_PE), ring(MS.PEND_HEAD, None), share=PRIVATE)


def init_sections(layout, S, values, functional, node):
    core, pf = values["core"], values["prefetch"]
    levels = list(values["cache"].values())
    if core["wc_buffers"] > MAX_WC_BUFFERS:
        raise ValueError(f"at most {MAX_WC_BUFFERS} write-combining buffers are modelled")
    for lvl in levels[2:]:
        if lvl["prefetcher"]:
            raise ValueError("prefetchers are modelled at l1d and l2 only")
    mt = {
        MT.LEVELS: len(levels), MT.INCLUSIVE: 1 if levels[-1].get("inclusive") else (
            SF_DIRECTORY if directory_ways(layout, levels) else 0),
        MT.PEER: int(round(levels[-1]["peer_hitm_ns"] * core["freq_ghz"])), MT.NODE: node,
        MT.PEER_HIT: int(round(levels[-1]["peer_hit_ns"] * core["freq_ghz"])),
        MT.CORES: layout.cores, MT.CORE_WORDS: layout.fixed_words,
        MT.FUNCTIONAL: 1 if functional else 0,
        MT.PF_L1: mask(levels[0]["prefetcher"]),
        MT.PF_L2: mask(levels[1]["prefetcher"]) if len(levels) > 1 else PF_NONE,
        MT.STREAM_DIST: pf["stream_distance_lines"], MT.STREAM_DEG: pf["stream_degree_lines"],
        MT.LFB: core["lfb_entries"], MT.SQ: l2_miss_entries(values), MT.WC: core["wc_buffers"],
    }
    for k, v in mt.items():
        S[k] = v
    layout.view(S, "wc")[:, WC.LINE] = -1
    if layout.cores > 1:   # the sockets, and a transfer from the other's caches (cycles)
        llc, at = levels[-1], S[MH.SOCKET]
        S[at + XS.SOCKETS] = layout.sockets
        for x, key in ((XS.REMOTE_HITM, "remote_hitm_ns"), (XS.REMOTE_HIT, "remote_hit_ns")):
            S[at + x] = int(round(llc.get(key, 0) * core["freq_ghz"]))


def spread(layout, S):
    """Core k's pending snapshots in its own reserved frames, once S's private words are
    copied from core 0's (Layout.spread): a fence applies the bytes its core snapshot. With
    several sockets, each core's NUMA node is its socket."""
    for k in range(layout.cores):
        layout.core(S, k)[MT.SNAPSHOT_FRAME] = k * RESERVED_FRAMES
        layout.core(S, k)[MT.CORE] = k
        if layout.sockets > 1:
            layout.core(S, k)[MT.NODE] = layout.socket_of(k)
