"""Machine.reset_stats, Machine.warmup and the first-run compile notice.

reset_stats zeroes the counters stats() reports and nothing of the model, so a run after it
counts exactly what the same run counts on a machine that was not reset (the difference of
two stats()). warmup leaves nothing for a later facade call to compile. The notice is one
line on stderr, once per process, and only when the core is neither compiled nor cached.
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from numba import config

from emu import Machine
from emu import machine as machine_mod
from isa import Program

ROOT = Path(__file__).resolve().parent.parent
NOTICE = "compiling the emulator core"
needs_jit = pytest.mark.skipif(config.DISABLE_JIT, reason="NUMBA_DISABLE_JIT: nothing compiles")


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


def test_notice_printed_once_when_the_core_must_compile(monkeypatch, capsys):
    monkeypatch.setattr(machine_mod, "_compile_checked", False)
    monkeypatch.setattr(machine_mod, "_core_cached", lambda S, pt, frames: False)
    Machine.warmup()
    m = Machine()
    m.run(Program().load(0x40))
    m.run(Program().load(0x80))
    err = capsys.readouterr().err
    line = (f"compiling the emulator core (first run only, about "
            f"{machine_mod.COLD_COMPILE_SECONDS} s) ...")
    assert err.splitlines() == [line]


def test_no_notice_when_the_core_is_compiled(monkeypatch, capsys):
    Machine().run(Program().load(0x40))
    monkeypatch.setattr(machine_mod, "_compile_checked", False)
    m = Machine()
    assert machine_mod._core_cached(m.S, m.pt, m.frames)
    m.run(Program().load(0x40))
    assert NOTICE not in capsys.readouterr().err


def _python(code, **env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, **env))


@needs_jit
def test_an_empty_cache_holds_no_core(tmp_path):
    """Asked in a fresh process against an empty numba cache: not cached (no compile)."""
    r = _python("""
        from emu.machine import Machine, _core_cached
        m = Machine()
        print(_core_cached(m.S, m.pt, m.frames))
        """, NUMBA_CACHE_DIR=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False"]


# A fresh process with the on-disk cache warm: the core is found cached before anything is
# loaded, warmup prints nothing, and no facade call after warmup compiles a new overload.
WARM = """
    import sys
    import numpy as np
    from numba.core.registry import CPUDispatcher
    from emu import Machine, UnmappedAccess
    from emu.machine import _core_cached
    from isa import Program
    from isa.ops import FLAG_EXTABLE, FLAG_MCSAFE

    def overloads():
        ours = [(n, m) for n, m in sys.modules.items() if n.split(".")[0] in ("emu", "memmodel", "isa")]
        found = {(mod, name): getattr(obj, "dispatcher", obj) for mod, m in ours
                 for name, obj in vars(m).items()}   # an apart phase's dispatcher too
        return {k: len(d.overloads) for k, d in found.items() if isinstance(d, CPUDispatcher)}

    m = Machine()
    print("cached", _core_cached(m.S, m.pt, m.frames))
    print("seconds", Machine.warmup())
    warm = overloads()
    print("run", warm[("emu._core", "run")], "finish", warm[("emu._pipeline", "finish")])
    regions = [dict(name="k", base=0, size_bytes=1 << 24, media="optane", node=0)]
    for m in (Machine("cascadelake-optane", regions=regions, functional=False),
              Machine("haswell-nvdimm-n")):
        m.write(0x3000, np.arange(256, dtype=np.uint8))
        m.write(0x4000, b"abc")
        m.read(0x3000, 300)
        m.poison(0x5000)
        p = Program().store(0x3000, b"x" * 64).movnt(0x6000, value=3)
        p.rep_movsb(0x8000, 0x3000, 300)
        p.load(0x5000, flags=FLAG_MCSAFE).load(1 << 40, flags=FLAG_EXTABLE).clflushopt(0x3000)
        m.run(p.sfence())
        try:
            m.run(Program().load(1 << 40))
        except UnmappedAccess:
            pass
        m.cached(0x3000), m.stats(), m.reset_stats(), m.transient_lines()
        if m.functional:
            m.crash()
    print("new", sorted(k for k, n in overloads().items() if n != warm.get(k, 0)))
    """


@needs_jit
def test_warmup_leaves_nothing_to_compile_and_a_warm_cache_prints_nothing():
    Machine.warmup()            # the on-disk cache holds the core from here on
    r = _python(WARM)
    assert r.returncode == 0, r.stderr
    out = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert out["cached"] == "True"
    assert float(out["seconds"]) > 0
    assert out["run"] == "1 finish 1"
    assert out["new"] == "[]"
    assert NOTICE not in r.stderr


def test_sites_beyond_the_first_table_keep_their_counts():
    # 40 functions over two runs, more than a machine's first site table holds: each
    # function's loads (i + 1 lines, each a first touch) and misses are its own, the
    # earlier sites' kept
    m = Machine("skylake-ddr4", {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"})
    base = next(iter(m.regions.values()))["base"]
    for names in (range(0, 10), range(10, 40)):
        p = Program()
        for i in names:
            with p.function(f"f{i}"):
                p.loads(base + (i << 16) + 64 * np.arange(i + 1))
        m.run(p)
    sites = m.stats()["sites"]
    assert [sites[f"f{i}"]["loads"] for i in range(40)] == list(range(1, 41))
    assert [sites[f"f{i}"]["l1d_misses"] for i in range(40)] == list(range(1, 41))
