"""The run profile (emu.profiler): its counts add up to the run's, the stall causes partition
each site's cycles, ops are attributed to the line that emitted them, hot lines are the
lines that missed, and profiling changes no result."""
import numpy as np
import pytest

from emu import Machine, profiler
from emu.state import STALL_CAUSES
from isa import Program
from isa.sourcelines import record_lines

NO_PREFETCH = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none",
               "cache.l1d.policy": "lru"}


def _mixed(base):
    """Every kind of op that stalls for its own cause, in three functions."""
    p = Program()
    with p.function("reader"):
        p.loads(base + np.arange(0, 1 << 15, 64))
        p.load(base + (1 << 22), dependent=True)
        p.work(300, dependent=True)
        p.lfence()
    with p.function("writer"):
        for i in range(64):
            p.store(base + (1 << 21) + 64 * i, b"abcdefgh")
            p.clflush(base + (1 << 21) + 64 * i)
        p.movnt(base + (1 << 23), b"q" * 8)
        p.sfence()
        p.mfence()
    with p.function("copier"):
        p.stac()
        p.rep_movsb(base + (1 << 24), base, 9000)
        p.clac()
        p.nt_copy(base + (1 << 25), base + 4096, 3000)
        with p.guarded(40, 16, predict_in=True):
            p.load(base + 640)
    return p


def _run(program_of, smap=True, overrides=None, **kw):
    m = Machine("skylake-ddr4", overrides, smap=smap, **kw)
    base = m.regions["dram0"]["base"]
    r = m.run(program_of(base))
    return m, r


def test_site_counts_add_up_to_the_run():
    m, r = _run(_mixed, hot_lines=1 << 12)
    p = m.run_profile()
    s = m.stats()
    assert p.cycles == r.cycles == s["cycles"]
    sites = p.sites.values()
    l1d = s["levels"]["l1d"]
    assert sum(d["loads"] for d in sites) == l1d["load_hits"] + l1d["load_misses"]
    assert sum(d["stores"] for d in sites) == l1d["store_hits"] + l1d["store_misses"]
    assert sum(d["l1d_misses"] for d in sites) == s["levels"]["l1d"]["misses"]
    assert sum(d["l1d_store_misses"] for d in sites) == s["levels"]["l1d"]["store_misses"]
    assert sum(d["llc_misses"] for d in sites) == s["levels"]["llc"]["misses"]
    assert sum(d["line_reads"] for d in sites) == sum(d["line_reads"] for d in s["media"].values())
    assert sum(d["line_writes"] for d in sites) == \
        sum(d["line_writes"] for d in s["media"].values())
    # every miss is to an address of some region, and the table held every missing line
    assert sum(d["l1d_misses"] for d in p.regions.values()) == s["levels"]["l1d"]["misses"]
    assert p.hot_dropped == 0
    assert sum(h.l1d_misses for h in p.hot.values()) == s["levels"]["l1d"]["misses"]
    assert sum(h.llc_misses for h in p.hot.values()) == s["levels"]["llc"]["misses"]


def test_stall_causes_partition_each_sites_cycles():
    m, _ = _run(_mixed)
    p = m.run_profile()
    for name, d in p.sites.items():
        assert d["busy"] >= 0, name
        assert d["busy"] + sum(d[c] for c in STALL_CAUSES) == d["cycles"], name
    f = p.functions()
    # each function's own stall is there: flushes and fences in writer, STAC/CLAC with SMAP
    # on, the mispredicted branch and the declared WORK where they were emitted
    assert f["writer"]["flush"] > 0 and f["writer"]["fence"] > 0
    assert f["copier"]["smap"] > 0 and f["copier"]["mispredict"] > 0
    assert f["reader"]["work"] >= 300 // 4 and f["reader"]["fence"] > 0
    assert f["reader"]["fill_buffer"] > 0   # 512 lines stream through 10-12 fill buffers
    # a miss outstanding covers at least the cycles of its own latency
    assert f["reader"]["l1d_pending"] >= f["reader"]["llc_pending"] > 0


def test_smap_off_charges_nothing_to_smap():
    m, _ = _run(_mixed, smap=False)
    assert m.run_profile().functions()["copier"]["smap"] == 0


def _kernel(p, base):
    with p.function("kern"):
        p.loads(base + np.arange(0, 4096, 64))   # MARK-COLD
        p.loads(base + np.arange(0, 4096, 64))   # MARK-WARM
        p.store(base + 8192, b"12345678")        # MARK-STORE
    return p


def _marks():
    lines = {}
    with open(__file__) as f:
        for no, text in enumerate(f, 1):
            if "# MARK-" in text and "p." in text:
                lines[text.split("# MARK-")[1].strip()] = no
    return lines


def test_ops_are_attributed_to_the_line_that_emitted_them():
    with record_lines():
        p = _kernel(Program(), 0)
    m = Machine("skylake-ddr4", NO_PREFETCH)
    m.run(p)
    lines = {(ln, fn): d for (f, ln, fn), d in m.run_profile().lines().items()
             if f == __file__}
    marks = _marks()
    assert set(lines) == {(marks[k], "kern") for k in ("COLD", "WARM", "STORE")}
    assert lines[(marks["COLD"], "kern")]["l1d_misses"] == 64   # 64 cold lines, no prefetch
    assert lines[(marks["WARM"], "kern")]["l1d_misses"] == 0    # the same lines again
    assert lines[(marks["STORE"], "kern")]["l1d_store_misses"] == 1
    assert lines[(marks["COLD"], "kern")]["ops"] == 64
    assert [lines[(marks[k], "kern")]["loads"] for k in ("COLD", "WARM", "STORE")] == [64, 64, 0]
    assert [lines[(marks[k], "kern")]["stores"] for k in ("COLD", "WARM", "STORE")] == [0, 0, 1]


def test_reset_stats_starts_the_profile_afresh():
    m = Machine("skylake-ddr4", NO_PREFETCH, hot_lines=256)
    m.run(_kernel(Program(), 0))
    m.reset_stats()
    m.run(_kernel(Program(), 1 << 20))
    p = m.run_profile()
    assert p.functions()["kern"]["loads"] == 128 and p.functions()["kern"]["stores"] == 1
    assert sum(h.l1d_misses for h in p.hot.values()) == 64 + 1   # the second run's only
    assert all(h.addr >= 1 << 20 for h in p.hot.values())


def _spectre_like(base):
    p = Program()
    with p.function("g"):
        p.load(base + 4096, 8)
        with p.guarded(3, 16, predict_in=True, dependent=True):
            p.load(base + 3, 1)
            p.load_indexed(base + 65536, 4096, 1)
        p.index_mask(3, 16)
        p.load_masked(base + 3, base, 1)
        p.load_indexed(base + 65536, 4096, 1)
    return p


@pytest.mark.parametrize("build", [_mixed, _spectre_like])
def test_profiling_changes_no_result(build):
    plain_m, plain = _run(build)
    with profiler.capture() as c:
        m, r = _run(build)
    assert r.cycles == plain.cycles
    a, b = plain_m.stats(), m.stats()
    assert a["levels"] == b["levels"] and a["media"] == b["media"]
    assert plain_m.transient_lines() == m.transient_lines()
    (prof,) = c.profiles().values()
    assert prof.cycles == r.cycles and prof.lines()   # with source lines


def test_hot_lines_of_a_conflict_pattern():
    # 9 lines of one L1D set (4 KiB apart) round-robin in an 8-way LRU set: every access
    # misses; 20 other lines are touched once
    conflict = [(1 << 20) + k * 4096 for k in range(9)]
    once = [(1 << 24) + 64 * k for k in range(20)]
    m = Machine("skylake-ddr4", NO_PREFETCH, hot_lines=1 << 10)
    m.run(Program().loads(np.array(once + conflict * 10)))
    hot = m.run_profile().hot_lines(9)
    assert sorted(h.addr for h in hot) == conflict
    assert all(h.l1d_misses == 10 and h.l1d_store_misses == 0 for h in hot)


def test_a_full_table_counts_what_it_left_out():
    m = Machine("skylake-ddr4", NO_PREFETCH, hot_lines=16)
    m.run(Program().loads(np.arange(100) * 64))
    p = m.run_profile()
    assert len(p.hot) == 12   # three quarters of 16
    assert p.hot_dropped == 100 - 12
    assert sum(h.l1d_misses for h in p.hot.values()) + p.hot_dropped == 100


def test_profiles_add_per_label():
    with profiler.capture() as c:
        for lab in ("a", "a", "b"):
            profiler.label(lab)
            _run(_spectre_like)
    got = c.profiles()
    assert list(got) == ["a", "b"] and got["a"].machines == 2
    assert got["a"].cycles == 2 * got["b"].cycles


@pytest.mark.parametrize("n", [3, -4, 1 << 23])
def test_bad_hot_line_sizes(n):
    with pytest.raises(ValueError, match="hot_lines"):
        Machine("skylake-ddr4", hot_lines=n)


def test_hot_lines_of_equal_misses_rank_by_miss_cycles():
    # two lines miss L1D once each: the lower one is served by L2 (it was loaded, then
    # evicted from its 8-way L1D set by 8 lines 4 KiB apart, before the counts were reset),
    # the higher one by DRAM; the DRAM line's miss is the longer, so it ranks first
    l2_line, dram_line = 1 << 20, 1 << 26
    m = Machine("skylake-ddr4", NO_PREFETCH, hot_lines=1 << 10)
    m.run(Program().load(l2_line).loads(np.array([l2_line + k * 4096 for k in range(1, 9)])))
    m.reset_stats()
    m.run(Program().load(l2_line, dependent=True).load(dram_line, dependent=True))
    top = m.run_profile().hot_lines(2)
    assert [h.addr for h in top] == [dram_line, l2_line]
    assert [h.l1d_misses for h in top] == [1, 1] and [h.llc_misses for h in top] == [1, 0]
    # hand bounds: an L2 hit is 14 cycles (the profile's cache.l2.hit_cycles) and no more
    # than twice that from the L1D miss; DRAM at least its 90 ns at 2.5 GHz (the profile's
    # media.dram.read_latency_ns and core.freq_ghz)
    assert 14 <= top[1].miss_cycles <= 28
    assert top[0].miss_cycles >= 90 * 2.5
