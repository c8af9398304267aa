"""`emu validate`: the microbenchmarks of docs/hardware.md that the emulator can express, each
run on the shipped profile of the machine it was measured on (or the closest one, named in
the row's source), measured against emulated. docs/validation.md has the table, the method
of each benchmark and why the known gaps are what they are.

A row's benchmark mirrors the published method (docs/validation.md "Method") and gets a
fresh timing-only Machine. Its ratio (emulated / measured) should lie within BAND; a row
outside it is a known gap only if KNOWN_GAPS documents the range it falls in, with a reason.
`python -m emu.studies.validate --suggest-gaps` prints KNOWN_GAPS for the rows as they
are now (after a change of the timing model).
"""
import math
import textwrap
from dataclasses import dataclass

import numpy as np

from emu.machine import Machine
from emu.studies import plots
from emu.studies.validate.rows import (
    BAND,
    HW,
    KNOWN_GAPS,
    REASONS,
    ROWS,
    Row,
    profiles,
    select,
)

__all__ = ["BAND", "KNOWN_GAPS", "REASONS", "ROWS", "Result", "Row", "markdown", "profiles",
           "report", "run_row", "run_rows", "select", "status", "suggest_gaps", "table",
           "write_plots"]


# ---------------------------------------------------------------------------- running
@dataclass(frozen=True)
class Result:
    row: Row
    emulated: float | None
    ratio: float | None
    status: str   # ok, gap, FAIL or skip

    def as_json(self):
        r = self.row
        source = r.source if self.status != "skip" else f"{r.source}; not run: {r.bench}"
        return {"name": r.name, "measured": r.measured, "emulated": self.emulated,
                "ratio": self.ratio, "unit": r.unit, "source": source, "status": self.status}


def status(profile, name, ratio):
    """ok within BAND; gap outside it but inside the range KNOWN_GAPS documents; FAIL
    otherwise; skip for a row that cannot run (ratio None)."""
    if ratio is None:
        return "skip"
    if BAND[0] <= ratio <= BAND[1]:
        return "ok"
    lo, hi, _ = KNOWN_GAPS.get((profile, name), (math.inf, -math.inf, ""))
    return "gap" if lo <= ratio <= hi else "FAIL"


def run_row(row):
    if isinstance(row.bench, str):
        return Result(row, None, None, "skip")
    value = float(row.bench(Machine(row.profile, functional=False)))
    emulated = float(f"{value:.6g}")
    ratio = round(emulated / row.measured, 4)
    return Result(row, emulated, ratio, status(row.profile, row.name, ratio))


def run_rows(rows):
    """{profile: [Result, ...]} in the order of `rows`."""
    out = {}
    for row in rows:
        out.setdefault(row.profile, []).append(run_row(row))
    return out


def report(results):
    """The --json object."""
    return {"profiles": {p: {"rows": [r.as_json() for r in rs]} for p, rs in results.items()}}


def _num(x):
    return "-" if x is None else f"{x:.4g}"


def table(results):
    out = []
    for profile, rs in results.items():
        out.append(f"{profile}\n")
        cells = [["name", "measured", "emulated", "ratio", "unit", "status", "source"]]
        cells += [[r.row.name, _num(r.row.measured), _num(r.emulated),
                   "-" if r.ratio is None else f"{r.ratio:.3f}", r.row.unit, r.status,
                   r.row.source] for r in rs]
        widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
        for c in cells:
            out.append("  " + "  ".join(x.ljust(w) if i in (0, 4, 5, 6) else x.rjust(w)
                                        for i, (x, w) in enumerate(zip(c, widths))).rstrip()
                       + "\n")
        for r in rs:
            if r.status == "gap":
                lo, hi, why = KNOWN_GAPS[(profile, r.row.name)]
                out.append(f"  gap {r.row.name} (documented {lo}-{hi}): {why}\n")
            elif r.status == "FAIL":
                out.append(f"  FAIL {r.row.name}: ratio {r.ratio} outside {BAND[0]}-{BAND[1]}"
                           + (" and its documented gap" if (profile, r.row.name) in KNOWN_GAPS
                              else "") + "\n")
            elif r.status == "skip":
                out.append(f"  skip {r.row.name}: {r.row.bench}\n")
        out.append("\n")
    counts = {}
    for rs in results.values():
        for r in rs:
            counts[r.status] = counts.get(r.status, 0) + 1
    out.append(f"{sum(counts.values())} rows: " + ", ".join(
        f"{counts.get(s, 0)} {s}" for s in ("ok", "gap", "FAIL", "skip")) +
        f" (band {BAND[0]}-{BAND[1]}; docs/validation.md)\n")
    return "".join(out)


# ---------------------------------------------------------------------------- plots
COLOURS = {"ok": "tab:green", "gap": "tab:orange", "FAIL": "tab:red"}
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
    ax.axvspan(*BAND, color="tab:green", alpha=0.12, zorder=0)
    ax.barh(y, [x - 1 for x in ratios], left=1, color=[COLOURS[r.status] for r in rs])
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


def write_plots(results, directory, Figure):
    """One plot per profile in `directory`, validate-PROFILE.png and .svg, written by
    plots.write_figures (nothing partial is left on an error). Returns the paths written."""
    return plots.write_figures(directory, ((f"validate-{profile}", _render(Figure, profile, rs))
                                           for profile, rs in results.items()))


# ---------------------------------------------------------------------------- gaps
def _wrapped(text, indent):
    """A string literal of `text` as adjacent literals of at most ~90 characters."""
    words = textwrap.wrap(text, 90 - indent, break_long_words=False)
    parts = [w + " " for w in words[:-1]] + words[-1:]
    return "\n".join(" " * indent + repr(part) for part in parts)


def suggest_gaps(results):
    """KNOWN_GAPS as Python source for the rows as they are now: every row outside BAND with
    its current ratio -10 % .. +10 % (rounded outwards) and its reason (kept from KNOWN_GAPS,
    else a TODO); entries whose row is back in the band are listed as comments."""
    lines = ["KNOWN_GAPS = {"]
    for profile, rs in results.items():
        for r in rs:
            key = (profile, r.row.name)
            if r.ratio is None:
                continue
            if BAND[0] <= r.ratio <= BAND[1]:
                if key in KNOWN_GAPS:
                    lines.append(f"    # {key!r}: within the band now (ratio {r.ratio}): dropped")
                continue
            lo = math.floor(r.ratio * 0.9 * 100) / 100
            hi = math.ceil(r.ratio * 1.1 * 100) / 100
            why = KNOWN_GAPS.get(key, (0, 0, "TODO: why the model misses it"))[2]
            named = [k for k, v in REASONS.items() if v == why]
            lines.append(f"    {key!r}: ({lo}, {hi}, " + (
                f"REASONS[{named[0]!r}])," if named else "\n" + _wrapped(why, 8) + "),"))
    return "\n".join(lines + ["}"]) + "\n"


def markdown(results):
    """docs/validation.md's tables of the rows, one per profile, and its known gaps."""
    out = []
    for profile, rs in results.items():
        out.append(f"`{profile}`:\n\n| row | measured | emulated | ratio | unit | status | source |\n"
                   "|---|--:|--:|--:|---|---|---|\n")
        for r in rs:
            src = r.row.source.split(";")[0].replace(HW + " ", "")
            emu = "-" if r.emulated is None else f"{r.emulated:.4g}"
            ratio = "-" if r.ratio is None else f"{r.ratio:.3f}"
            out.append(f"| `{r.row.name}` | {r.row.measured:g} | {emu} | {ratio} | "
                       f"{r.row.unit} | {r.status} | {src} |\n")
        out.append("\n")
    out.append("## Known gaps\n\nThe rows outside the band, grouped by their reason (`REASONS`"
               " in `emu/studies/validate.py`), with the ratio range `KNOWN_GAPS` documents.\n\n")
    for key, why in REASONS.items():
        rows = [(p, n, lo, hi) for (p, n), (lo, hi, w) in KNOWN_GAPS.items() if w == why]
        if rows:
            out.append(f"### {key}\n\n" + "".join(
                f"- `{n}` on `{p}`: ratio {lo}-{hi}\n" for p, n, lo, hi in rows) + f"\n{why}.\n\n")
    return "".join(out)
