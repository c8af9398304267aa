"""The compiled hierarchy against the reference (tests/reference_cache.py) on random inputs.

Random small geometries (1, 2 or 3 levels; L1 1-8 ways x 1-16 sets, non-powers of two
included; L2 and LLC 1-24 ways, so that LRU's sets of one order word (up to 16 ways) and
of a stamp per way are both held against the reference; each lower level at least as
large as the one above; LRU or FIFO per level;
inclusive last level or not; prefetchers off) and random traces of 1..300 loads and
stores of 1..64 bytes over 1/4 to 16 times the largest level's lines, so that sets
conflict and some accesses cross a line (strategies below). After the trace the
emulator and the reference must agree exactly on every level's counters (load/store
hits and misses, write-backs arriving, fills, evictions, dirty victims, invalidations),
the lines held in every set, the set of dirty lines per level, and the lines read from
and written back to memory. Runs in ~15 s once the core is compiled.
"""
import random
import tomllib

import pytest
from cachetools import FIFOCache, LRUCache
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from numba import config as numba_config
from reference_cache import COUNTERS, RefHierarchy

from emu.machine import Machine
from isa.program import Program
from memmodel.profile import load_profile

LEVEL_NAMES = ("l1d", "l2", "llc")
BASE_PROFILE = "skylake-ddr4"


def _base_raw():
    with open(load_profile(BASE_PROFILE).files[-1], "rb") as f:
        return tomllib.load(f)


_RAW = _base_raw()


def profile_dict(levels, inclusive):
    """Raw TOML data: the shipped profile with its cache section replaced by `levels`
    (dicts of name, size_bytes, ways, policy), prefetchers off, `inclusive` on the last."""
    raw = dict(_RAW)
    cache = {}
    for i, lv in enumerate(levels):
        entry = {
            "size_bytes": {"value": lv["size_bytes"], "assumption": "test geometry"},
            "ways": {"value": lv["ways"], "assumption": "test geometry"},
            "hit_cycles": {"value": 4 + 10 * i, "assumption": "test geometry"},
            "policy": lv["policy"],
            "prefetcher": "none",
        }
        if lv["name"] == "l2":
            entry["mshr_entries"] = {"value": 16, "assumption": "test geometry"}
        if i == len(levels) - 1:
            entry["inclusive"] = inclusive
            entry["peer_hitm_ns"] = {"value": 49.0, "assumption": "test geometry"}
            entry["peer_hit_ns"] = {"value": 49.0, "assumption": "test geometry"}
        cache[lv["name"]] = entry
    raw["cache"] = cache
    raw["profile"] = {"description": "differential test geometry"}
    return raw


def emu_dirty_lines(m, level):
    return set(m.dirty_lines(level))


def run_both(levels, inclusive, trace):
    m = Machine(profile_dict(levels, inclusive), functional=False)
    p = Program()
    for is_store, addr, size in trace:
        if is_store:
            p.store(addr, size=size)
        else:
            p.load(addr, size=size)
    m.run(p)
    ref = RefHierarchy(levels, inclusive).run(trace)
    return m, ref


def assert_same(m, ref, levels):
    """Every comparison the brief asks for; the message names level and quantity."""
    es, rs = m.stats(), ref.stats()
    assert m.level_names == [lv["name"] for lv in levels]
    for lv in levels:
        name = lv["name"]
        got = {k: es["levels"][name][k] for k in COUNTERS}
        want = {k: rs[name][k] for k in COUNTERS}
        assert got == want, f"{name} counters"
        assert m.cache_contents(name) == ref.contents(name), f"{name} contents"
        assert emu_dirty_lines(m, name) == ref.dirty_lines(name), f"{name} dirty lines"
    assert es["media"]["dram"]["line_writes"] == ref.mem_writes, "write-backs to memory"
    assert es["regions"]["dram0"]["line_writes"] == ref.mem_writes, "region line writes"
    assert es["media"]["dram"]["line_reads"] == ref.mem_reads, "line reads from memory"


# ------------------------------------------------------------------ strategies
@st.composite
def geometries(draw, small=False):
    """L1 1-8 ways x 1-16 sets (1-4 x 1-4 when `small`); L2 and LLC 1-24 ways, at least as
    large as the level above, up to 8 (2 when `small`) sets more; 1-3 levels (2-3 when
    `small`)."""
    n_levels = draw(st.integers(2 if small else 1, 3))
    l1_ways = draw(st.integers(1, 4 if small else 8))
    l1_sets = draw(st.integers(1, 4 if small else 16))
    levels = [{"name": "l1d", "ways": l1_ways, "size_bytes": 64 * l1_ways * l1_sets,
               "policy": draw(st.sampled_from(["lru", "fifo"]))}]
    lines_above = l1_ways * l1_sets
    for name in LEVEL_NAMES[1:n_levels]:
        ways = draw(st.integers(1, 24))
        min_sets = -(-lines_above // ways)                    # at least as large as above
        sets = draw(st.integers(min_sets, min_sets + (2 if small else 8)))
        levels.append({"name": name, "ways": ways, "size_bytes": 64 * ways * sets,
                       "policy": draw(st.sampled_from(["lru", "fifo"]))})
        lines_above = ways * sets
    inclusive = draw(st.booleans())
    return levels, inclusive


@st.composite
def short_traces(draw, capacity_lines):
    """1..40 ops, each drawn by hypothesis (shrinks op by op): address below 1/4 to 4x
    the largest level's lines, size 1..64 (some cross a line), load or store."""
    span = 64 * max(1, int(capacity_lines * draw(st.sampled_from([0.25, 1, 4]))))
    base = draw(st.sampled_from([0, 4096, 1 << 20]))
    return draw(st.lists(st.tuples(st.booleans(), st.integers(base, base + span - 1),
                                   st.integers(1, 64)), min_size=1, max_size=40))


@st.composite
def long_traces(draw, capacity_lines, pressure=False):
    """100..300 ops from a seeded generator, op i depending only on the seed and i, so
    that shrinking `n` keeps a prefix of the same trace. Addresses over 1/4 to 16x the
    largest level's lines, uniform or a sweep (i*stride plus a jitter below 64, modulo
    the span); in half of the examples a quarter of the ops go to 4 hot lines, which
    stay in L1 while an inclusive LLC evicts them. A drawn share of stores (`pressure`:
    at least 30 % stores and a span of at least the largest level)."""
    factors = [1, 4, 16] if pressure else [0.25, 1, 4, 16]
    span = 64 * max(1, int(capacity_lines * draw(st.sampled_from(factors))))
    base = draw(st.sampled_from([0, 4096, 1 << 20]))
    store_tenths = draw(st.sampled_from([3, 7, 10] if pressure else [0, 3, 7, 10]))
    stride = draw(st.sampled_from([0, 0, 8, 64, 72, 192, 448]))   # 0: uniform
    hot = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(100, 300))
    rnd = random.Random(seed)
    trace = []
    for i in range(n):
        k, pick, size = rnd.randrange(10), rnd.randrange(4), rnd.randint(1, 64)
        if hot and pick == 0:
            a = rnd.randrange(4 * 64)
        elif stride:
            a = (i * stride + rnd.randrange(64)) % span
        else:
            a = rnd.randrange(span)
        trace.append((k >= 10 - store_tenths, base + a, size))
    return trace


@st.composite
def cases(draw, small=False):
    levels, inclusive = draw(geometries(small))
    cap = max(lv["size_bytes"] // 64 for lv in levels)
    if small:
        trace = draw(long_traces(cap, pressure=True))
    else:
        trace = draw(st.one_of(short_traces(cap), long_traces(cap), long_traces(cap)))
    return levels, inclusive, trace


def check_and_label(case):
    levels, inclusive, trace = case
    m, ref = run_both(levels, inclusive, trace)
    assert_same(m, ref, levels)
    # what the examples exercised (pytest --hypothesis-show-statistics)
    rs = ref.stats()
    event(f"{len(levels)} level(s), inclusive={inclusive}")
    event("write-backs reach memory" if ref.mem_writes else "no write-back to memory")
    if any(rs[lv["name"]]["invalidations"] for lv in levels):
        event("back-invalidations")
    if any(rs[lv["name"]]["writeback_in_hits"] for lv in levels):
        event("write-back hits below L1")
    if any(rs[lv["name"]]["writeback_in_misses"] for lv in levels):
        event("write-back misses below L1 (cascading installs)")
    if any(lv["policy"] == "fifo" for lv in levels):
        event("some level FIFO")
    if any((a >> 6) != ((a + n - 1) >> 6) for _, a, n in trace):
        event("line-crossing accesses")


# As plain Python (NUMBA_DISABLE_JIT=1, CI's second pass) an example costs ~50x more: a fifth
# of them there, the same derandomized first ones.
SHARE = 5 if numba_config.DISABLE_JIT else 1


@settings(max_examples=500 // SHARE, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_random_geometry_and_trace(case):
    check_and_label(case)


@settings(max_examples=300 // SHARE, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases(small=True))
def test_random_small_hierarchies(case):
    """2-3 levels of at most ~100 lines and long store-heavy traces that overflow the
    LLC: victim cascades, write-backs to memory and (inclusive) back-invalidations."""
    check_and_label(case)


# ------------------------------------------------------------------ fixed cases
def test_cachetools_behaviour_the_reference_relies_on():
    """`in` is no use; `[k]` is a use for LRU only; popitem() returns the LRU / first
    inserted key; re-setting an existing key would reorder FIFO (so the reference never
    does it)."""
    lru, fifo = LRUCache(maxsize=3), FIFOCache(maxsize=3)
    for c in (lru, fifo):
        for k in (1, 2, 3):
            c[k] = True
        assert 1 in c
        c[1]
    assert lru.popitem()[0] == 2 and fifo.popitem()[0] == 1
    fifo[4] = True                     # fifo order now 2, 3, 4
    fifo[2] = True                     # an existing key: moved to the end
    assert fifo.popitem()[0] == 3



def _geo(*specs):
    return [{"name": n, "size_bytes": 64 * w * s, "ways": w, "policy": p}
            for n, (s, w, p) in zip(LEVEL_NAMES, specs)]


@pytest.mark.parametrize("inclusive", [False, True])
def test_dirty_cascade_and_back_invalidation(inclusive):
    """One set per level (L1 2 ways LRU, L2 2 ways LRU, LLC 3 ways FIFO): stores push
    dirty victims down the chain to memory; then line 0 stays hot (and dirty) in L1 while
    the FIFO LLC evicts it, which with an inclusive LLC invalidates it above and makes
    the write-back dirty. Ends with a load crossing lines 0 and 1."""
    levels = _geo((1, 2, "lru"), (1, 2, "lru"), (1, 3, "fifo"))
    trace = [(True, 64 * k, 8) for k in (0, 1, 2, 3, 0, 4, 5, 1, 6)] + \
            [(i % 2 == 0, 64 * k, 8) for i, k in enumerate((0, 7, 0, 8, 0, 9, 0))] + \
            [(False, 62, 4)]
    m, ref = run_both(levels, inclusive, trace)
    assert_same(m, ref, levels)
    rs = ref.stats()
    assert ref.mem_writes > 0 and rs["l2"]["writeback_in_misses"] > 0
    if inclusive:
        assert rs["l1d"]["invalidations"] > 0 and rs["l2"]["invalidations"] > 0
    else:
        assert rs["llc"]["writeback_in_misses"] > 0


def test_listed_contents_after_short_trace():
    """Tiny caches whose full contents are listed (docs/style.md item 9, third kind):
    L1 2 sets x 2 ways LRU, L2 3 sets x 2 ways FIFO, no LLC.

    line (L1 set, L2 set)  L1 after                L2 after
    ld 0 (0, 0)            s0 [0]                  s0 [0]
    ld 1 (1, 1)            s1 [1]                  s1 [1]
    ld 2 (0, 2)            s0 [0 2]                s2 [2]
    ld 0                   hit: s0 LRU order 2, 0
    ld 4 (0, 1)            s0 evicts 2 -> [0 4]    s1 [1 4]
    st 6 (0, 0)            s0 evicts 0 -> [4 6*]   s0 [0 6] (store miss)
    ld 0                   s0 evicts 4 -> [6* 0]   s0 hit (FIFO order stays 0, 6)
    ld 8 (0, 2)            s0 evicts 6* -> [0 8]   s2 [2 8]; then 6 written back: hit, 6*
    ld 3 (1, 0)            s1 [1 3]                s0 evicts 0 (oldest fill) -> [3 6*]
    """
    levels = _geo((2, 2, "lru"), (3, 2, "fifo"))
    trace = [(False, 64 * k, 8) for k in (0, 1, 2, 0, 4)] + [(True, 6 * 64, 8)] + \
            [(False, 64 * k, 8) for k in (0, 8, 3)]
    m, ref = run_both(levels, False, trace)
    assert_same(m, ref, levels)
    assert m.cache_contents("l1d") == [[0, 8], [1, 3]]
    assert m.cache_contents("l2") == [[3, 6], [1, 4], [2, 8]]
    assert emu_dirty_lines(m, "l1d") == set() and emu_dirty_lines(m, "l2") == {6}
    s = m.stats()["levels"]
    assert [s["l1d"][k] for k in ("load_hits", "load_misses", "store_hits", "store_misses")] \
        == [1, 7, 0, 1]
    assert [s["l2"][k] for k in ("load_hits", "load_misses", "store_hits", "store_misses",
                                 "writeback_in_hits", "writeback_in_misses")] == [1, 6, 0, 1, 1, 0]
    assert m.stats()["media"]["dram"]["line_writes"] == 0
