"""Machine.reset_stats.

reset_stats zeroes the counters stats() reports and nothing of the model, so a run after it
counts exactly what the same run counts on a machine that was not reset (the difference of
two stats()).
"""
import numpy as np

from emu import Machine
from isa import Program

def workload(m):
    """Loads that miss to DRAM, stores written back to Optane, loads of them: every counter
    section (levels, media, regions, sites) moves."""
    pm = m.regions["pmem0"]["base"]
    p = Program()
    with p.function("fill"):
        p.loads(np.arange(0, 256 * 1024, 64, dtype=np.int64), 8)
        for k in range(8):
            p.store(pm + 64 * k, bytes([k + 1]) * 64).clwb(pm + 64 * k)
        p.sfence()
    with p.function("scan"):
        p.loads(pm + np.arange(0, 64 * 64, 64, dtype=np.int64), 8)
    return p


def counters(stats):
    """{(section, name, counter): value} for every counter of stats()."""
    return {(sec, name, k): v for sec in ("levels", "media", "regions", "sites")
            for name, row in stats[sec].items() for k, v in row.items()}


def test_reset_stats_zeroes_counters_and_keeps_the_model():
    m = Machine("cascadelake-optane")
    m.run(workload(m))
    before = m.stats()
    for sec in ("levels", "media", "regions", "sites"):
        assert any(v for (s, _, _), v in counters(before).items() if s == sec), sec
    contents = {lvl: m.cache_contents(lvl) for lvl in m.level_names}
    dirty = {lvl: m.dirty_lines(lvl) for lvl in m.level_names}
    pm = m.regions["pmem0"]["base"]
    durable = m.crash().read(pm, 512)
    m.reset_stats()
    after = m.stats()
    assert set(counters(after).values()) == {0}
    assert counters(after).keys() == counters(before).keys()
    assert after["cycles"] == before["cycles"] == m.cycles > 0   # machine time goes on
    assert {lvl: m.cache_contents(lvl) for lvl in m.level_names} == contents
    assert {lvl: m.dirty_lines(lvl) for lvl in m.level_names} == dirty
    assert m.read(pm + 64, 64) == b"\x02" * 64
    assert m.crash().read(pm, 512) == durable


def test_a_run_after_reset_counts_what_the_stats_difference_counts():
    kept, reset = Machine("cascadelake-optane"), Machine("cascadelake-optane")
    for m in (kept, reset):
        m.run(workload(m))
    first = counters(kept.stats())
    reset.reset_stats()
    r_kept, r_reset = kept.run(workload(kept)), reset.run(workload(reset))
    assert r_kept.cycles == r_reset.cycles                   # no timing state was touched
    diff = {k: v - first[k] for k, v in counters(kept.stats()).items()}
    assert any(diff.values())
    assert counters(reset.stats()) == diff
    assert reset.stats()["cycles"] == kept.stats()["cycles"]
