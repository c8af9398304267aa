"""Plots: the one home of matplotlib (the optional extra `plot`; the core never imports it).

matplotlib is imported lazily, by figure() and matplotlib_figure() only, so a command imports
it only when asked to plot. Every plot is written as PNG and SVG of one basename by
write_figures(), each file rendered to a temporary file in its directory and renamed into
place, all of them only after every one was rendered: an error leaves no partial output.

The chart functions draw into a Figure they are given and return its Axes, so a caller can
add to them:

    fig = plots.figure()
    plots.grouped_bars(fig, "dax-write-usercopy", "iops",
                       {"memmap=dram": {"skylake": 1.0e6, "optane": 0.4e6}, ...})
    plots.write_figures("out", [("compare-dax-write-usercopy", fig)])
"""
import os

from emu.studies import outfiles

INSTALL = "pip install 'cacheline-emu[plot]'"   # what to tell a user without matplotlib
FORMATS = ("png", "svg")                         # every plot is written in each
DPI = 110


def matplotlib_figure():
    """matplotlib's Figure class, imported only when plotting (ImportError if missing)."""
    from matplotlib.figure import Figure
    return Figure


def figure(width_in=7.0, height_in=4.0):
    """A new Figure (constrained layout) of `width_in` x `height_in` inches."""
    return matplotlib_figure()(figsize=(width_in, height_in), layout="constrained")


def write_figures(directory, figures, option="--plot"):
    """Write each (basename, figure) of `figures` (an iterable, e.g. a generator that builds
    them one by one) as DIRECTORY/BASENAME.png and .svg. Every file is rendered to a
    temporary file in `directory` (created if missing) and all are renamed into place only
    when every one succeeded, so an error leaves no partial output; a target that exists
    and is not a regular file is never replaced: CliError, before its figure is rendered
    (emu.studies.outfiles). Returns the paths written, PNG then SVG per figure."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    with outfiles.replacing(option) as stage:
        for name, fig in figures:
            for fmt in FORMATS:
                paths.append(os.path.join(directory, f"{name}.{fmt}"))
                fig.savefig(stage(paths[-1]), format=fmt, dpi=DPI)
    return paths


def _bar_axes(fig, title, ylabel, groups):
    """The Axes of a bar chart: x ticks the groups, title and y label set."""
    ax = fig.subplots()
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_xticks(range(len(groups)), list(groups),
                  rotation=30 if len(groups) > 4 else 0, ha="right" if len(groups) > 4 else "center",
                  fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return ax


def _legend(ax):
    """The legend beside the plot, right of it, where it covers no bar."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def _label(name):
    """A legend label for `name`: matplotlib hides labels that start with "_" (kernel symbols
    such as __copy_user_flushcache), a leading space keeps them."""
    return f" {name}" if name.startswith("_") else name


def _series(groups):
    """The inner keys of `groups`, in order of first appearance."""
    return list(dict.fromkeys(k for inner in groups.values() for k in inner))


def grouped_bars(fig, title, ylabel, groups: dict[str, dict[str, float]]):
    """A grouped bar chart in `fig`: per group (an x tick, e.g. a variant) one bar per series
    (an inner key, e.g. a profile or a region; one colour each, named in the legend), of
    height its value. A value missing or None draws no bar. Returns the Axes."""
    ax = _bar_axes(fig, title, ylabel, groups)
    series = _series(groups)
    width = 0.8 / max(len(series), 1)
    for i, s in enumerate(series):
        xs = [x for x, inner in enumerate(groups.values()) if inner.get(s) is not None]
        ys = [inner[s] for inner in groups.values() if inner.get(s) is not None]
        ax.bar([x - 0.4 + width * (i + 0.5) for x in xs], ys, width, label=_label(s), color=f"C{i % 10}")
    if series:
        _legend(ax)
    return ax


def stacked_bars(fig, title, ylabel, groups: dict[str, dict[str, float]]):
    """A stacked bar chart in `fig`: per group (an x tick, e.g. a variant) one bar, stacked
    from 0 by segment (an inner key, e.g. a kernel function; one colour each, in the
    legend), each segment as tall as its value (meant for values >= 0: parts of a total). A
    value missing or None adds no segment. Returns the Axes."""
    ax = _bar_axes(fig, title, ylabel, groups)
    segments = _series(groups)
    bottom = [0.0] * len(groups)
    for i, s in enumerate(segments):
        xs = [x for x, inner in enumerate(groups.values()) if inner.get(s) is not None]
        ys = [groups[g][s] for g in groups if groups[g].get(s) is not None]
        ax.bar(xs, ys, 0.6, bottom=[bottom[x] for x in xs], label=_label(s), color=f"C{i % 10}")
        for x, y in zip(xs, ys):
            bottom[x] += y
    if segments:
        _legend(ax)
    return ax


def lines(fig, title, xlabel, ylabel, series: dict[str, list[tuple[float, float]]]):
    """A line plot in `fig`: one line with markers per series (a key, e.g. a variant; one
    colour each, named in the legend) through its (x, y) points in the order given; a y of
    None leaves a gap. Returns the Axes."""
    ax = fig.subplots()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.set_axisbelow(True)
    for i, (name, pts) in enumerate(series.items()):
        xs = [x for x, _ in pts]
        ys = [float("nan") if y is None else y for _, y in pts]
        ax.plot(xs, ys, marker="o", markersize=4, label=_label(name), color=f"C{i % 10}")
    if series:
        _legend(ax)
    return ax
