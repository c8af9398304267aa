"""The results file of `emu sweep`: long-format CSV, one row per (point, variant, metric),
with the point id, the scenario, the profile, one column per swept key, the resolved
configuration as JSON, the number of rows of the point, status (ok or error) and the error
message. All rows of a point are written by one os.write to a file opened O_APPEND, after its
header; `--resume` drops a torn or incomplete last point (only the last write can be cut) and
skips the points whose id is in the file. With pyarrow installed RESULTS.parquet is written
beside it at the end (a temporary file renamed into place).
"""
import csv
import io
import os

from emu.studies import outfiles
from emu.studies.options import CliError

BASE_COLUMNS = ("point_id", "scenario", "profile")
ROW_COLUMNS = ("variant", "metric", "value", "status", "error", "point_rows", "config")

def _field(v):
    if v is None:
        return ""
    text = repr(v) if isinstance(v, float) else str(v)
    return text.replace("\r", " ").replace("\n", " ")   # one record per line, always


def point_csv(spec, point, rows, error):
    """The CSV bytes of all rows of a point (every row ends in a newline)."""
    kept = [r for r in rows or [] if (not spec.variants or r[0] in spec.variants)
            and (not spec.metrics or r[2] in spec.metrics)]
    missing = [m for m in spec.metrics if rows is not None and m not in {r[2] for r in rows}]
    if error is None and missing:   # a name the spec could not check before running
        error = (f"sweep.metrics: no metric {missing[0]!r} in the result (metrics: "
                 f"{', '.join(dict.fromkeys(r[2] for r in rows))})")
    swept = dict(point.options + point.overrides)
    head = [point.id, point.scenario, point.profile] + [swept[k] for k in [*spec.options, *spec.overrides]]
    if error is not None:
        lines = [head + ["", "", "", "error", error, 1, point.config]]
    else:
        lines = [head + [label, metric, value, "ok", "", len(kept), point.config]
                 for _, label, metric, value in kept]
        if not lines:   # e.g. the variants filter left none of this scenario's
            lines = [head + ["", "", "", "ok", "no rows", 1, point.config]]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([[_field(c) for c in ln] for ln in lines])
    return buf.getvalue().encode()


def _csv_line(fields):
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(fields)
    return buf.getvalue()


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def read_results(path):
    """(header, rows as dicts) of a results CSV."""
    with open(path, newline="") as f:
        r = csv.reader(f)
        header = next(r, None)
        return header, [dict(zip(header, row)) for row in r]


def _complete_prefix(path, header_line):
    """The length of the complete part of the results file at `path`: a torn last line, and
    a last point with fewer rows than its point_rows says (the write was cut), are not.
    CliError if the file is not a results file of these columns."""
    with open(path, "rb") as f:
        data = f.read()
    end = data.rfind(b"\n") + 1
    lines = data[:end].split(b"\n")[:-1]
    if not lines:
        return 0
    if lines[0].decode() != header_line:
        raise CliError(f"{path}: not the results of this spec: its columns are "
                       f"{lines[0].decode()}, this spec's {header_line}")
    cols = next(csv.reader([header_line]))
    i_id, i_n = cols.index("point_id"), cols.index("point_rows")
    recs = [next(csv.reader([ln.decode()])) for ln in lines[1:]]
    # the last point: the trailing run of rows with its id
    start = len(recs)
    while start > 0 and recs[start - 1][i_id] == recs[-1][i_id]:
        start -= 1
    try:
        declared = int(recs[-1][i_n]) if recs else 0
    except (ValueError, IndexError):
        raise CliError(f"{path}: last row {recs[-1]!r} is no results row") from None
    if recs and declared != len(recs) - start:
        end = sum(len(ln) + 1 for ln in lines[:1 + start])
    return end


def points_done(path, spec, resume):
    """The ids of the points already in the results file `path` (none if there is none);
    with `resume` an incomplete last point is cut off first, without it a file is an error."""
    exists = os.path.exists(path) and os.path.getsize(path) > 0
    if exists and not resume:
        raise CliError(f"--out {path}: exists (--resume continues it; or remove it)")
    if not exists:
        return set()
    keep = _complete_prefix(path, spec.header_line)
    if keep < os.path.getsize(path):
        os.truncate(path, keep)
    return {r["point_id"] for r in read_results(path)[1]} if keep else set()


def open_results(path, spec):
    """The results file opened O_APPEND, its header written if it is new (or empty); a
    symbolic link or anything not a regular file is refused (emu.studies.outfiles)."""
    fd = outfiles.open_append(path, "--out")
    if os.fstat(fd).st_size == 0:
        _write_all(fd, (spec.header_line + "\n").encode())
    return fd


PARQUET_OPTION = "--out's Parquet copy"   # how errors name the Parquet file


def parquet_path(path):
    """The Parquet copy of the results CSV `path`: beside it, with .parquet for its suffix."""
    return os.path.splitext(path)[0] + ".parquet"


def write_parquet(path):
    """RESULTS.parquet (parquet_path) from the whole CSV, written whole or not at all and
    never onto anything but a regular file or a new name (emu.studies.outfiles); None
    without pyarrow."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
    except ImportError:
        return None
    target = parquet_path(path)
    # every column as text but these two, so a column's type never depends on the rows read
    types = {n: pa.string() for n in read_results(path)[0]}
    types["value"], types["point_rows"] = pa.float64(), pa.int64()
    table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(column_types=types,
                                                                      strings_can_be_null=False))
    with outfiles.replacing(PARQUET_OPTION) as stage:
        pq.write_table(table, stage(target))
    return target
