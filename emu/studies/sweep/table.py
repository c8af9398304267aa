"""The results of a sweep as a table: what `emu sweep` prints (and --json holds) once its
points have run, and `SweepResults.read(path).to_frame()` for pandas."""
from dataclasses import dataclass

from emu import frames
from emu.studies.options import table
from emu.studies.sweep.results import read_results

HIDDEN = ("point_id", "point_rows", "config")   # in the CSV, not in the printed table


@dataclass
class SweepResults:
    """The rows of a results CSV (docs/sweeps.md, "The results file"): `columns`, the CSV's
    header, and `rows`, one list of strings per row (value as written)."""
    columns: list
    rows: list

    @classmethod
    def read(cls, path, spec=None):
        """The results in `path`, only those of `spec`'s points if given (a file may hold
        other sweeps' points), in the file's order."""
        header, rows = read_results(path)
        ids = {p.id for p in spec.points} if spec is not None else None
        return cls(list(header or []), [[r[c] for c in header] for r in rows
                                         if ids is None or r["point_id"] in ids])

    def shown(self):
        """(columns, rows) of the printed table: the CSV's without point_id, point_rows and
        config."""
        keep = [i for i, c in enumerate(self.columns) if c not in HIDDEN]
        return [self.columns[i] for i in keep], [[r[i] for i in keep] for r in self.rows]

    def text(self):
        columns, rows = self.shown()
        return table(columns, rows)

    def to_json(self):
        columns, rows = self.shown()
        return {"columns": columns, "rows": rows}

    def to_frame(self):
        """Every column of the CSV as a pandas DataFrame, `value` and `point_rows` as
        numbers (an error row's value is missing: NaN)."""
        pd = frames.pandas()
        f = pd.DataFrame(self.rows, columns=self.columns)
        for c in ("value", "point_rows"):
            if c in f:
                f[c] = pd.to_numeric(f[c], errors="coerce")
        return f
