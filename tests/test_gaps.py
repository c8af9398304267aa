"""Reports that flag their own gaps (emu/studies/published.py, emu/studies/peaks.py): the
published figure beside the emulated value with its status and documented gap, a bandwidth
over the profile's own peak flagged; and the conveniences: per-unit profile plots, the
validate plot's legend, to_frame() of stats and run profiles."""
import json
import types

import numpy as np
import pytest

from emu import Machine
from emu.studies import peaks, published
from emu.studies.cli import main
from emu.studies.scenarios import dax_read_copy_mc
from isa import Program
from memmodel.profile import load_profile


def _opts(**values):
    return types.SimpleNamespace(**values)


def test_status_within_the_band_a_documented_gap_or_fail():
    # the band is x/÷1.25 of the figure: 0.8 .. 1.25, edges included
    assert [published.status(r) for r in (0.8, 1.0, 1.25)] == ["ok"] * 3
    assert published.status(1.3, (1.2, 1.4)) == "gap"
    assert published.status(1.3) == "FAIL" and published.status(1.5, (1.2, 1.4)) == "FAIL"


def test_a_known_gap_is_tagged_with_its_reason_and_only_on_the_published_setup():
    # dax-memcpy's movnt: 1.0 s published locally; an emulated 3.81 s is 3.81x, inside the
    # documented range (docs/scenarios.md §4, gap 1); 13.5 s of clflush local is 1.0x: ok
    values = {"clflush,numa=local": 13.5, "clflush,numa=remote": 37.1 * 3,
              "movnt,numa=local": 3.81, "movnt,numa=remote": 1.3}
    got = published.check("dax-memcpy", "haswell-nvdimm-n", _opts(), values)
    movnt = got["movnt,numa=local"]["seconds"]
    assert movnt["published"] == 1.0 and movnt["ratio"] == 3.81 and movnt["band"] == [0.8, 1.25]
    assert movnt["status"] == "gap" and "gap 1" in movnt["gap"]
    assert got["clflush,numa=local"]["seconds"]["status"] == "ok"
    assert got["clflush,numa=local"]["seconds"]["gap"] is None
    assert got["clflush,numa=remote"]["seconds"]["status"] == "FAIL"   # 3x: no documented gap
    # the figures scale with the fraction of the run: a quarter of 1.0 s published
    quarter = published.check("dax-memcpy", "haswell-nvdimm-n", _opts(), values, 0.25)
    assert quarter["movnt,numa=local"]["seconds"]["published"] == 0.25
    # dax-write-usercopy's were published for (assumed) 4 KiB and one job on its profile
    iops = {"memmap=pmem": 375e3 * 1.7, "memmap=dram": 519e3, "bypass": 1e6}
    got = published.check("dax-write-usercopy", "cascadelake-optane", _opts(bs=4096, jobs=1),
                          iops)
    assert got["memmap=pmem"]["iops"]["status"] == "gap" and "bypass" not in got
    other = published.check("dax-write-usercopy", "cascadelake-optane", _opts(bs=4096, jobs=48),
                            iops)
    assert other["memmap=pmem"]["iops"] == {"published": 375e3, "emulated": 375e3 * 1.7,
                                            "ratio": None, "band": [0.8, 1.25], "status": "n/a",
                                            "gap": None}
    assert published.check("vhost-tx", "broadwell-ddr4", _opts(), {}) == {}


def test_the_dax_memcpy_table_and_json_tag_its_documented_gaps(capsys):
    # one pass: its seconds are the run's over the 4096 passes, so the ratios are the full
    # run's (docs/scenarios.md §4: every pass is the same); each variant's documented gap
    assert main(["run", "dax-memcpy", "--scale", str(1 / 4096), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    statuses = {v: d["seconds"]["status"] for v, d in res["published"].items()}
    assert statuses == dict.fromkeys(["clflush,numa=local", "clflush,numa=remote",
                                      "movnt,numa=local", "movnt,numa=remote"], "gap")
    for d in res["variants"].values():
        assert d["bandwidth"]["over_peak"] is False
    assert main(["run", "dax-memcpy", "--scale", str(1 / 4096)]) == 0
    out = capsys.readouterr().out
    assert "gap movnt,numa=local: the model's single-thread NT bandwidth" in out
    assert "status" in out.splitlines()[1] and "  FAIL " not in out


def test_a_bandwidth_over_the_profiles_peak_is_flagged():
    # cascadelake-optane: each socket's namespace reads at most 37.6 GB/s (media.optane.
    # read_bw_gbps, the 6 interleaved DIMMs), two sockets 75.2 GB/s
    values = load_profile("cascadelake-optane").values
    two = peaks.media_peak(values, "optane", "read", 2)
    assert two[0] == pytest.approx(75.2)
    assert peaks.check(75.0, two)["over_peak"] is False
    over = peaks.check(80.0, two)
    assert over["over_peak"] is True and over["peak_gbps"] == pytest.approx(75.2)
    # remote: the lowest of the paths, the interconnect's 34.3 GB/s
    assert peaks.check(36.0, two, peaks.interconnect_peak(values))["peak_gbps"] == 34.3
    # the study's table marks the value and names the peak under it
    variant = {"iops": 80e9 / (2 << 20), "bandwidth": over, "ns_per_io": 1e6,
               "pmem_reads_per_io": 32768, "functions_cycles_per_io": {}}
    text = dax_read_copy_mc.table({"profile": "cascadelake-optane", "bs": 2 << 20, "ios": 4,
                                   "jobs": 48, "sockets": 2, "variants": {"generic": variant}})
    assert "80.00!" in text
    assert ("OVER PEAK generic: 80.00 GB/s is above the profile's own peak of 75.20 GB/s "
            "(2 x media.optane.read_bw_gbps (37.6 GB/s))") in text


def test_profile_plots_are_per_unit_of_work(capsys, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from emu.studies import plots
    drawn = []
    stacked = plots.stacked_bars
    monkeypatch.setattr(plots, "stacked_bars", lambda *a: drawn.append(stacked(*a)) or drawn[-1])
    # one pass of dax-memcpy: 256 copies of 16 KiB into the 4 MiB buffer per variant
    argv = ["profile", "dax-memcpy", "--scale", "1e-6", "--variant", "movnt,numa=local"]
    assert main([*argv, "--json"]) == 0
    prof = json.loads(capsys.readouterr().out)["profiles"]["movnt,numa=local"]
    assert prof["units"] == {"copy": 256}
    assert main([*argv, "--plot", str(tmp_path)]) == 0
    (ax,) = drawn
    assert ax.get_ylabel() == "cycles per copy" and ax.get_xlabel() == "variant"
    assert sum(p.get_height() for p in ax.patches) == pytest.approx(prof["cycles"] / 256)
    assert ax.get_legend() is not None


def test_the_validate_plot_has_a_legend_of_the_statuses():
    pytest.importorskip("matplotlib")
    from emu.studies import plots
    from emu.studies.validate import ROWS, Result, figures
    rows = [r for r in ROWS if not r.curve][:3]
    rs = [Result(r, r.measured * x, x, st) for r, x, st in
          zip(rows, (1.0, 1.5, 3.0), ("ok", "gap", "FAIL"))]
    fig = figures._render(plots.matplotlib_figure(), rows[0].profile, rs)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert texts == ["band 0.8-1.25", "ok: within the band", "gap: a documented gap",
                     "FAIL: outside both"]


def test_stats_and_run_profiles_as_frames():
    pytest.importorskip("pandas")
    m = Machine("skylake-ddr4", hot_lines=64)
    p = Program()
    with p.function("first"):
        p.loads(np.arange(8) * 64)
    with p.function("second"):
        p.store(1 << 20, b"x" * 8)
    m.run(p)
    s = m.stats()
    levels = s.to_frame("levels")
    # skylake-ddr4 has three levels (l1d, l2, llc), each with the same counters
    assert list(levels.index) == ["l1d", "l2", "llc"] and levels.index.name == "level"
    assert levels.shape == (3, len(s["levels"]["l1d"]))
    assert levels.loc["l1d", "misses"] == s["levels"]["l1d"]["misses"]
    long = s.to_frame()
    assert list(long.columns) == ["section", "name", "counter", "value"]
    assert len(long) == 2 + sum(len(d) for sec in ("levels", "media", "regions", "sites")
                                for d in s[sec].values())
    with pytest.raises(ValueError, match="no section 'nope'"):
        s.to_frame("nope")
    assert json.loads(json.dumps(s)) == json.loads(json.dumps(dict(s)))   # still a dict
    prof = m.run_profile()
    funcs = prof.to_frame()
    assert set(funcs.index) == {"first", "second"} and funcs.loc["first", "loads"] == 8
    hot = prof.to_frame("hot_lines")
    assert len(hot) == len(prof.hot) and hot.index.name == "addr"
    with pytest.raises(ValueError, match="no table"):
        prof.to_frame("nope")
