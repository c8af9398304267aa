"""Running the rows of rows.py and reporting them: each row's Result and status, the count
of prediction and calibration rows, the table of `emu validate` and its --json object,
docs/validation.md's markdown and, for --suggest-gaps, KNOWN_GAPS as Python source."""
import math
import textwrap
from dataclasses import dataclass

from emu.machine import Machine
from emu.studies import published
from emu.studies.validate.gaps import KNOWN_GAPS, REASONS
from emu.studies.validate.rows import BAND, HW, PREFETCHERS_OFF, Row


# ---------------------------------------------------------------------------- running
@dataclass(frozen=True)
class Result:
    row: Row
    emulated: float | None
    ratio: float | None
    status: str   # ok, gap, FAIL or skip
    other: tuple[float, float] | None = None   # the row's second reading: emulated, ratio

    def as_json(self):
        r = self.row
        source = r.source if self.status != "skip" else f"{r.source}; not run: {r.bench}"
        out = {"name": r.name, "measured": r.measured, "emulated": self.emulated,
               "ratio": self.ratio, "unit": r.unit, "source": source, "status": self.status,
               "role": r.role}
        if r.calibrates:
            out["calibrates"] = r.calibrates
        if r.overrides:
            out["setting"] = dict(r.overrides)
        if self.other:
            out["other_reading"] = {"setting": r.other[0], "overrides": dict(r.other[1]),
                                    "emulated": self.other[0], "ratio": self.other[1]}
        return out


def status(profile, name, ratio):
    """ok within BAND; gap outside it but inside the range KNOWN_GAPS documents; FAIL
    otherwise (emu.studies.published.status); skip for a row that cannot run (ratio None)."""
    if ratio is None:
        return "skip"
    known = KNOWN_GAPS.get((profile, name))
    return published.status(ratio, known[:2] if known else None)


def _reading(row, overrides):
    """(emulated, ratio) of the row's bench on a fresh Machine of its profile with these
    (key, value) overrides. Timing only, but for a row of several cores: they hand over by
    flags in memory (Program.wait), which needs functional memory."""
    value = float(row.bench(Machine(row.profile, dict(overrides) or None,
                                    functional=row.cores > 1, cores=row.cores,
                                    sockets=row.sockets)))
    emulated = float(f"{value:.6g}")
    return emulated, round(emulated / row.measured, 4)


def run_row(row):
    if isinstance(row.bench, str):
        return Result(row, None, None, "skip")
    emulated, ratio = _reading(row, row.overrides)
    other = _reading(row, row.other[1]) if row.other else None
    return Result(row, emulated, ratio, status(row.profile, row.name, ratio), other)


def run_rows(rows):
    """{profile: [Result, ...]} in the order of `rows`."""
    out = {}
    for row in rows:
        out.setdefault(row.profile, []).append(run_row(row))
    return out


def _roles(rs):
    """The count of a list of Results: prediction rows, those within BAND, calibration rows."""
    pred = [r for r in rs if r.row.role == "prediction"]
    return {"prediction": len(pred), "prediction_in_band": sum(r.status == "ok" for r in pred),
            "calibration": len(rs) - len(pred)}


def summary(results):
    """Prediction rows (and how many within BAND) per profile and overall, and calibration
    rows with their fraction of all rows: what docs/validation.md "Roles" reports."""
    every = [r for rs in results.values() for r in rs]
    total = _roles(every)
    return {"profiles": {p: _roles(rs) for p, rs in results.items()}, **total,
            "rows": len(every),
            "calibration_fraction": round(total["calibration"] / len(every), 4) if every else 0}


def report(results):
    """The --json object."""
    return {"profiles": {p: {"rows": [r.as_json() for r in rs]} for p, rs in results.items()},
            "summary": summary(results)}


def _num(x):
    return "-" if x is None else f"{x:.4g}"


def _role(row):
    return f"calibration of {row.calibrates}" if row.calibrates else row.role


def table(results):
    out = []
    for profile, rs in results.items():
        out.append(f"{profile}\n")
        cells = [["name", "measured", "emulated", "ratio", "unit", "status", "role", "source"]]
        cells += [[r.row.name, _num(r.row.measured), _num(r.emulated),
                   "-" if r.ratio is None else f"{r.ratio:.3f}", r.row.unit, r.status,
                   _role(r.row), r.row.source] for r in rs]
        widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
        for c in cells:
            out.append("  " + "  ".join(x.ljust(w) if i in (0, 4, 5, 6, 7) else x.rjust(w)
                                        for i, (x, w) in enumerate(zip(c, widths))).rstrip()
                       + "\n")
        for r in rs:
            if r.other:
                out.append(f"  {r.row.name} with {r.row.other[0]}: emulated "
                           f"{_num(r.other[0])}, ratio {r.other[1]:.3f}\n")
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
    sums = summary(results)
    for profile, c in sums["profiles"].items():
        out.append(f"{profile}: {c['prediction_in_band']} of {c['prediction']} prediction rows "
                   f"within the band, {c['calibration']} calibration rows\n")
    out.append(f"all: {sums['prediction_in_band']} of {sums['prediction']} prediction rows within "
               f"the band; {sums['calibration']} of {sums['rows']} rows are calibrations "
               f"({100 * sums['calibration_fraction']:.0f} %)\n")
    counts = {}
    for rs in results.values():
        for r in rs:
            counts[r.status] = counts.get(r.status, 0) + 1
    out.append(f"{sum(counts.values())} rows: " + ", ".join(
        f"{counts.get(s, 0)} {s}" for s in ("ok", "gap", "FAIL", "skip")) +
        f" (band {BAND[0]}-{BAND[1]}; docs/validation.md)\n")
    return "".join(out)


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
        out.append(f"`{profile}`:\n\n| row | measured | emulated | ratio | unit | status | role "
                   "| source |\n|---|--:|--:|--:|---|---|---|---|\n")
        for r in rs:
            src = r.row.source.split(";")[0].replace(HW + " ", "")
            emu = "-" if r.emulated is None else f"{r.emulated:.4g}"
            ratio = "-" if r.ratio is None else f"{r.ratio:.3f}"
            role = f"calibrates `{r.row.calibrates}`" if r.row.calibrates else "prediction"
            if r.row.overrides:
                role += ", " + ("prefetchers off" if r.row.overrides == PREFETCHERS_OFF else
                                ", ".join(f"`{k}` = {v}" for k, v in r.row.overrides))
            if r.other:
                role += f"; {r.row.other[0]}: {r.other[0]:.4g} ({r.other[1]:.3f})"
            out.append(f"| `{r.row.name}` | {r.row.measured:g} | {emu} | {ratio} | "
                       f"{r.row.unit} | {r.status} | {role} | {src} |\n")
        c = summary({profile: rs})
        out.append(f"\n{c['prediction_in_band']} of {c['prediction']} prediction rows within the "
                   f"band; {c['calibration']} calibration rows.\n\n")
    out.append("## Known gaps\n\nThe rows outside the band, grouped by their reason (`REASONS`"
               " in `emu/studies/validate/gaps.py`), with the ratio range `KNOWN_GAPS` documents."
               "\n\n")
    for key, why in REASONS.items():
        rows = [(p, n, lo, hi) for (p, n), (lo, hi, w) in KNOWN_GAPS.items() if w == why]
        if rows:
            out.append(f"### {key}\n\n" + "".join(
                f"- `{n}` on `{p}`: ratio {lo}-{hi}\n" for p, n, lo, hi in rows) + f"\n{why}.\n\n")
    return "".join(out)
