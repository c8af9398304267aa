"""Running the rows of rows.py and reporting them: each row's Result and status, the table
of `emu validate` and its --json object, docs/validation.md's markdown and, for
--suggest-gaps, KNOWN_GAPS as Python source."""
import math
import textwrap
from dataclasses import dataclass

from emu.machine import Machine
from emu.studies.validate.rows import BAND, HW, KNOWN_GAPS, REASONS, Row


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
               " in `emu/studies/validate/rows.py`), with the ratio range `KNOWN_GAPS` documents."
               "\n\n")
    for key, why in REASONS.items():
        rows = [(p, n, lo, hi) for (p, n), (lo, hi, w) in KNOWN_GAPS.items() if w == why]
        if rows:
            out.append(f"### {key}\n\n" + "".join(
                f"- `{n}` on `{p}`: ratio {lo}-{hi}\n" for p, n, lo, hi in rows) + f"\n{why}.\n\n")
    return "".join(out)
