"""The results file of `emu sweep`: long-format CSV, one row per (point, variant, metric),
with the point id, the scenario, the profile, one column per swept key, the resolved
configuration as JSON, the number of rows of the point, status (ok or error) and the error
message. All rows of a point are written by one os.write to a file opened O_APPEND, after its
header; the file is locked (flock) for the whole run. `--resume` reads it line by line, drops a
torn or incomplete last point (only the last write can be cut), skips the points whose id is in
the file and reports those written more than once. With pyarrow installed RESULTS.parquet is
written beside it at the end (a temporary file renamed into place).
"""
import csv
import fcntl
import io
import os

from emu.studies import outfiles
from emu.studies.options import CliError

BASE_COLUMNS = ("point_id", "scenario", "profile")
ROW_COLUMNS = ("variant", "metric", "value", "status", "error", "point_rows", "config")
MAX_LINE_BYTES = 1 << 20   # a row is a few KiB (its config); the file is read line by line

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
    with open(path, newline="", encoding="utf-8") as f:
        r = csv.reader(f)
        header = next(r, None)
        return header, [dict(zip(header, row)) for row in r]


def lock_results(path):
    """(fd, created) of the results file `path`, opened (created if missing) and locked
    (flock, exclusive) for the whole run: two sweeps on one file would write its points twice.
    The lock is on the file itself, so none is left behind; it ends with the process that
    holds it. CliError if the file is not a regular file or another process holds the lock
    (its pid from the kernel's /proc/locks)."""
    for _ in range(10):   # until the inode locked is the one at `path` (see below)
        try:
            fd, st = outfiles.open_regular(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, "--out")
            created = True
        except FileExistsError:
            fd, st = outfiles.open_regular(path, os.O_RDWR, "--out")
            created = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = _lock_holder(st)
            raise CliError(f"--out {path}: in use by another emu sweep"
                           f"{f' (pid {holder})' if holder else ''}: one run per results file") \
                from None
        try:
            if os.stat(path).st_ino == st.st_ino:
                return fd, created
        except FileNotFoundError:
            pass
        os.close(fd)   # removed by a run that failed before writing it: open it anew
    raise CliError(f"--out {path}: keeps being removed and created")


def _lock_holder(st):
    """The pid holding a flock on the file of stat `st`, from /proc/locks (Linux), or None."""
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks") as f:
            for line in f:
                fields = line.split()
                if "FLOCK" in fields and want in fields and "->" not in fields:
                    return int(fields[fields.index(want) - 1])
    except (OSError, ValueError):
        pass
    return None


def _line_text(path, lineno, line):
    try:
        return line.decode()
    except UnicodeDecodeError:
        raise CliError(f"{path}: line {lineno} is not UTF-8 text: not a results file of "
                       f"emu sweep") from None


def _scan(f, path, header_line):
    """(the length of the complete part, {point id: times written}) of the results file `f`
    (binary, at its start), read line by line (lines of at most MAX_LINE_BYTES): a torn last
    line, and a last point with fewer rows than its point_rows says (the write was cut), are
    not complete. CliError if the file is not a results file of these columns."""
    def lines():
        while line := f.readline(MAX_LINE_BYTES + 1):
            if len(line) > MAX_LINE_BYTES:
                raise CliError(f"{path}: a line of more than {MAX_LINE_BYTES} bytes: not a "
                               f"results file of emu sweep")
            if not line.endswith(b"\n"):
                return   # torn by a kill
            yield line
    it = enumerate(lines(), 1)
    _, head = next(it, (0, b""))
    if not head:
        return 0, {}
    if _line_text(path, 1, head) != header_line + "\n":
        raise CliError(f"{path}: not the results of this spec: its columns are "
                       f"{_line_text(path, 1, head).rstrip()}, this spec's {header_line}")
    cols = next(csv.reader([header_line]))
    i_id, i_n = cols.index("point_id"), cols.index("point_rows")
    end = start = len(head)
    times, last, rows, declared = {}, None, 0, 0
    for lineno, line in it:
        rec = next(csv.reader([_line_text(path, lineno, line)]), [])
        pid = rec[i_id] if rec else ""
        # a point's rows are one write; a new id, or more rows than the point has, a new one
        # (two runs writing the same points in the same order write them back to back)
        if pid != last or rows == declared:
            try:
                declared = int(rec[i_n])
            except (ValueError, IndexError):
                declared = 0
            if declared < 1:
                raise CliError(f"{path}: line {lineno} is no results row: {rec!r}")
            last, start, rows = pid, end, 0
            times[pid] = times.get(pid, 0) + 1
        rows += 1
        end += len(line)
    if rows != declared:   # the last write was cut
        end = start
        times[last] -= 1
        if not times[last]:
            del times[last]
    return end, times


def points_done(fd, path, spec, resume):
    """(the ids of the points already in the results file, {id: times} of those written more
    than once) of the locked results file `fd` at `path`; with `resume` an incomplete last
    point is cut off first, without it a file that is not empty is an error."""
    size = os.fstat(fd).st_size
    if size and not resume:
        raise CliError(f"--out {path}: exists (--resume continues it; or remove it)")
    if not size:
        return set(), {}
    with open(os.dup(fd), "rb") as f:
        f.seek(0)
        keep, times = _scan(f, path, spec.header_line)
    if keep < size:
        os.ftruncate(fd, keep)
    return set(times), {pid: n for pid, n in times.items() if n > 1}


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
