"""emu/studies/plots.py: the bar charts, PNG and SVG written atomically, and `emu compare
--plot` (a scenario across profiles as grouped bars)."""
import json
import os
import sys
import types
from xml.etree import ElementTree

import pytest

from emu.studies import plots, scenarios
from emu.studies.cli import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
GROUPS = {"v1": {"a": 1.0, "b": 2.0, "c": 3.0},
          "v2": {"a": 4.0, "c": 5.0},          # no b
          "v3": {"a": 6.0, "b": None, "c": 7.0}}


def assert_plot_files(directory, name):
    png, svg = (os.path.join(directory, f"{name}.{ext}") for ext in ("png", "svg"))
    assert os.path.getsize(png) > 0 and os.path.getsize(svg) > 0
    with open(png, "rb") as f:
        assert f.read(8) == PNG_MAGIC
    assert ElementTree.parse(svg).getroot().tag.endswith("svg")
    return png, svg


def test_grouped_bars_one_bar_per_present_value():
    pytest.importorskip("matplotlib")
    fig = plots.figure()
    ax = plots.grouped_bars(fig, "a title", "iops", GROUPS)
    assert len(ax.patches) == 7   # 9 values, of which one missing and one None
    assert (ax.get_title(), ax.get_ylabel()) == ("a title", "iops")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["v1", "v2", "v3"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b", "c"]
    # series a first in each group, its bars at the groups' left; heights are the values
    a = ax.containers[0]
    assert [p.get_height() for p in a] == [1.0, 4.0, 6.0]
    assert [p.get_x() + p.get_width() / 2 for p in a] == pytest.approx([-0.8 / 3, 1 - 0.8 / 3, 2 - 0.8 / 3])


def test_stacked_bars_one_bar_per_group_stacked_by_segment():
    pytest.importorskip("matplotlib")
    fig = plots.figure()
    ax = plots.stacked_bars(fig, "cycles per function", "cycles", GROUPS)
    assert len(ax.patches) == 7
    assert (ax.get_title(), ax.get_ylabel()) == ("cycles per function", "cycles")
    assert len(ax.get_xticks()) == 3
    tops = {}
    for seg in ax.containers:
        for p in seg:
            x = round(p.get_x() + p.get_width() / 2)
            assert p.get_y() == tops.get(x, 0.0)   # each segment starts where the last ended
            tops[x] = p.get_y() + p.get_height()
    assert tops == {0: 6.0, 1: 9.0, 2: 13.0}


@pytest.mark.parametrize("chart", ["grouped_bars", "stacked_bars"])
def test_kernel_symbols_are_in_the_legend(chart):
    # matplotlib leaves labels starting with "_" out of legends: __copy_user_flushcache must not
    pytest.importorskip("matplotlib")
    ax = getattr(plots, chart)(plots.figure(), "t", "y", {"v": {"__copy_user_flushcache": 1.0,
                                                               "vfs_write": 2.0}})
    texts = [t.get_text().strip() for t in ax.get_legend().get_texts()]
    assert texts == ["__copy_user_flushcache", "vfs_write"]


def test_lines_one_line_per_series_through_its_points():
    pytest.importorskip("matplotlib")
    fig = plots.figure()
    ax = plots.lines(fig, "a sweep", "read_latency_ns", "iops",
                     {"memmap=pmem": [(150, 5.0), (300, 4.0), (600, 3.0)],
                      "__bypass": [(150, 6.0), (300, None), (600, 6.0)]})
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("a sweep", "read_latency_ns", "iops")
    one, two = ax.get_lines()
    assert list(one.get_xdata()) == [150, 300, 600] and list(one.get_ydata()) == [5.0, 4.0, 3.0]
    ys = list(two.get_ydata())
    assert ys[0] == ys[2] == 6.0 and ys[1] != ys[1]   # None is a gap (NaN)
    assert one.get_color() != two.get_color()
    assert [t.get_text().strip() for t in ax.get_legend().get_texts()] == ["memmap=pmem", "__bypass"]


def test_write_figures_writes_png_and_svg(tmp_path):
    pytest.importorskip("matplotlib")
    figs = []
    for name in ("one", "two"):
        fig = plots.figure()
        plots.stacked_bars(fig, name, "y", GROUPS)
        figs.append((name, fig))
    paths = plots.write_figures(tmp_path / "new", figs)
    assert paths == [str(tmp_path / "new" / f"{n}.{e}") for n in ("one", "two") for e in ("png", "svg")]
    assert sorted(os.listdir(tmp_path / "new")) == ["one.png", "one.svg", "two.png", "two.svg"]
    for name in ("one", "two"):
        assert_plot_files(tmp_path / "new", name)


class Broken:
    """A figure that writes part of a file and fails, as a full disk would."""

    def savefig(self, path, format, dpi):
        with open(path, "wb") as f:
            f.write(b"partial")
        raise OSError("disk full")


def test_an_error_leaves_no_file_behind(tmp_path):
    pytest.importorskip("matplotlib")
    (tmp_path / "old.png").write_bytes(b"kept")
    fig = plots.figure()
    plots.grouped_bars(fig, "t", "y", GROUPS)
    with pytest.raises(OSError, match="disk full"):
        plots.write_figures(tmp_path, [("good", fig), ("old", Broken())])
    assert os.listdir(tmp_path) == ["old.png"] and (tmp_path / "old.png").read_bytes() == b"kept"


# ---------------------------------------------------------------------------- emu compare --plot
def fake_scenario(calls):
    def run(args):
        calls.append(args.profile)
        k = 2.0 if args.profile == "broadwell-ddr4" else 1.0
        return {"variants": {"x": {"t": 10.0 * k}, "y": {"t": 20.0 * k}, "z": {"t": 30.0 * k}}}
    return types.SimpleNamespace(NAME="fake", METRIC="t", DEFAULT_PROFILE="skylake-ddr4",
                                 VARIANTS=("x", "y", "z"), __doc__="fake\n", run=run,
                                 OPTIONS=())


@pytest.fixture
def calls(monkeypatch):
    runs = []
    monkeypatch.setattr(scenarios, "registry", lambda: {"fake": fake_scenario(runs)})
    return runs


ARGV = ["compare", "fake", "--profiles", "skylake-ddr4,broadwell-ddr4"]


def test_compare_plot_is_grouped_bars_of_the_metric(capsys, calls, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    drawn = []
    grouped = plots.grouped_bars
    monkeypatch.setattr(plots, "grouped_bars", lambda *a: drawn.append(grouped(*a)) or drawn[-1])
    assert main(ARGV) == 0
    table = capsys.readouterr().out
    assert main([*ARGV, "--plot", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    png, svg = assert_plot_files(tmp_path / "out", "compare-fake")
    assert out == table + f"plot: {png}\nplot: {svg}\n"
    (ax,) = drawn
    assert (ax.get_title(), ax.get_ylabel()) == ("fake", "t")
    assert len(ax.patches) == 6   # 3 variants x 2 profiles
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["skylake-ddr4", "broadwell-ddr4"]
    assert [p.get_height() for p in ax.containers[1]] == [20.0, 40.0, 60.0]


def test_compare_plot_with_json_keeps_stdout_json(capsys, calls, tmp_path):
    pytest.importorskip("matplotlib")
    assert main([*ARGV, "--json", "--plot", str(tmp_path)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["variants"]["y"] == {"skylake-ddr4": 20.0, "broadwell-ddr4": 40.0}
    assert_plot_files(tmp_path, "compare-fake")


def test_compare_plot_without_matplotlib_says_how_to_install_before_running(
        capsys, calls, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert main([*ARGV, "--plot", str(tmp_path / "plots")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == ("emu: error: --plot needs matplotlib: "
                                 "pip install 'cacheline-emu[plot]'\n")
    assert calls == [] and not (tmp_path / "plots").exists()


def test_compare_plot_into_a_file_is_a_usage_error(capsys, calls, tmp_path):
    (tmp_path / "f").write_text("x")
    assert main([*ARGV, "--plot", str(tmp_path / "f")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"emu: error: --plot {tmp_path / 'f'}: not a directory\n"
    assert calls == [] and (tmp_path / "f").read_text() == "x"
