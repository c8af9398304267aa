"""The figures of `emu validate --plot DIR`: one per profile, its rows' ratios over the band
and the rows that lie on curves, written by emu.studies.plots (the one home of matplotlib)."""
import numpy as np

from emu.studies import plots
from emu.studies.published import BAND

COLOURS = {"ok": "tab:green", "gap": "tab:orange", "FAIL": "tab:red"}
MEANINGS = {"ok": "within the band", "gap": "a documented gap", "FAIL": "outside both"}
TICKS = (0.25, 0.5, BAND[0], 1, BAND[1], 2, 4)


def _render(Figure, profile, rs):
    """One profile's figure: the ratios as bars from 1 on a log scale over the band; beside
    them the rows that lie on curves, measured and emulated."""
    rs = [r for r in rs if r.ratio is not None]
    curves = {}
    for r in rs:
        if r.row.curve:
            curves.setdefault(r.row.curve[0], []).append(r)
    fig = Figure(figsize=(11 if curves else 7, max(3.0, 0.22 * len(rs) + 1.2)),
                 layout="constrained")
    axes = fig.subplots(1, 2 if curves else 1, squeeze=False)[0]
    ax = axes[0]
    y = np.arange(len(rs))
    ratios = [r.ratio for r in rs]
    ax.axvspan(*BAND, color="tab:green", alpha=0.12, zorder=0,
               label=f"band {BAND[0]}-{BAND[1]}")
    for st, meaning in MEANINGS.items():   # one bar series per status, named in the legend
        ys = [k for k, r in enumerate(rs) if r.status == st]
        if ys:
            ax.barh(ys, [ratios[k] - 1 for k in ys], left=1, color=COLOURS[st],
                    label=f"{st}: {meaning}")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlim(min(ratios + [BAND[0]]) / 1.15, max(ratios + [BAND[1]]) * 1.15)
    ax.set_xticks([t for t in TICKS if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]])
    ax.set_xticks([], minor=True)
    ax.set_xticklabels([f"{t:g}" for t in ax.get_xticks()])
    ax.set_yticks(y, [r.row.name for r in rs], fontsize=7)
    ax.set_ylim(len(rs) - 0.5, -0.5)
    ax.set_xlabel(f"emulated / measured (band {BAND[0]}-{BAND[1]} shaded)")
    ax.set_title(profile)
    ax.legend(fontsize=7, loc="best")
    if curves:
        ax = axes[1]
        for i, (name, cr) in enumerate(curves.items()):
            xs = [r.row.curve[1] for r in cr]
            colour = f"C{i}"
            ax.plot(xs, [r.row.measured for r in cr], "o-", color=colour, label=f"{name}, measured")
            # the emulated curves may coincide: hollow markers of decreasing size show each
            ax.plot(xs, [r.emulated for r in cr], "s--", color=colour, markersize=9 - 3 * i,
                    markerfacecolor="none", label=f"{name}, emulated")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bytes written, then sfence")
        ax.set_ylabel(cr[0].row.unit)
        ax.set_title("persist latency")
        ax.legend(fontsize=7)
    return fig


def plot_name(profile):
    """The basename of `profile`'s plot (checked by `emu validate` before its run)."""
    return f"validate-{profile}"


def write_plots(results, directory, Figure):
    """One plot per profile in `directory`, validate-PROFILE.png and .svg, written by
    plots.write_figures (nothing partial is left on an error). Returns the paths written."""
    return plots.write_figures(directory, ((plot_name(profile), _render(Figure, profile, rs))
                                           for profile, rs in results.items()))
