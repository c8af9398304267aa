"""`emu sweep SPEC.toml`: a grid of scenario runs over scenarios, profiles, scenario options
and profile overrides, run in a local process pool or on a Dask cluster, each point's rows
appended to a results file as soon as it finishes.

The spec (TOML) is strict like a profile: an unknown section or key, an unknown scenario, an
empty list or range, a value of the wrong type or outside an option's range is an error
naming the file and the key, raised before anything runs:

    [sweep]
    scenario = "dax-write-usercopy"        # or scenarios = [...]
    profiles = ["cascadelake-optane"]      # default: each scenario's DEFAULT_PROFILE
    variants = ["memmap=pmem", "bypass"]   # optional: the variants whose rows are kept
    metrics = ["iops"]                     # optional: the metrics whose rows are kept

    [options]                              # scenario options, by their CLI names
    ios = [2000]                           # a list ...

    [overrides]                            # profile keys (--set)
    "media.optane.read_latency_ns" = { from = 150, to = 600, step = 150 }   # ... or a range

A point is one (scenario, profile, options, overrides) of the grid's cartesian product; every
point is checked by parsing the argv `emu run` would take (the real parser: option types and
ranges exactly as `emu run` checks them) and each distinct override set by load_profile. Its
id is a short sha256 of the canonical JSON of its resolved configuration (every option of
the scenario, defaults included, and the overrides), so the same configuration always has the
same id, wherever it runs.

Results are long-format CSV: one row per (point, variant, metric), with the point id, the
scenario, the profile, one column per swept key, the resolved configuration as JSON, the
number of rows of the point, status (ok or error) and the error message. All rows of a point
are written by one os.write to a file opened O_APPEND, after its header; `--resume` drops a
torn or incomplete last point (only the last write can be cut) and skips the points whose id
is in the file. With pyarrow installed RESULTS.parquet is written beside it at the end (a
temporary file renamed into place).
"""
import argparse
import contextlib
import csv
import hashlib
import io
import itertools
import json
import math
import numbers
import os
import tomllib
from typing import NamedTuple

from emu.studies import plots
from emu.studies.options import CliError, plot_figure, quiet_option
from emu.studies.progress import progress, wanted
from memmodel.profile import ProfileError, load_profile

CLUSTER_INSTALL = "pip install 'cacheline-emu[cluster]'"
SECTIONS = {"sweep": ("scenario", "scenarios", "profiles", "variants", "metrics"),
            "options": None, "overrides": None}   # None: any key (checked per scenario/profile)
RANGE_KEYS = ("from", "to", "step")
MAX_POINTS = 100_000
# options the sweep sets itself, or that make no sense for one point
RESERVED_OPTIONS = ("profile", "set", "json", "quiet", "sensitivity", "help", "h")
BASE_COLUMNS = ("point_id", "scenario", "profile")
ROW_COLUMNS = ("variant", "metric", "value", "status", "error", "point_rows", "config")


class Point(NamedTuple):
    scenario: str
    profile: str
    options: tuple      # ((key, value), ...) as swept, in spec order
    overrides: tuple    # ((dotted key, value), ...) as swept, in spec order
    argv: tuple         # what `emu` would take: ("run", SCENARIO, "--profile", P, ...)
    config: str         # canonical JSON of the resolved configuration
    id: str


class Spec(NamedTuple):
    path: str
    scenarios: list
    profiles: dict      # scenario -> [profile, ...]
    variants: list      # [] = all
    metrics: list       # [] = all
    options: dict       # key -> [value, ...]
    overrides: dict     # dotted key -> [value, ...]
    points: list

    @property
    def header_line(self):
        return _csv_line(self.columns)

    @property
    def columns(self):
        return list(BASE_COLUMNS) + list(self.options) + list(self.overrides) + list(ROW_COLUMNS)


# ---------------------------------------------------------------------------- the spec
def _values(where, raw):
    """The list of values of a swept key: a list, a range table {from, to, step} (`to`
    included), or one scalar."""
    if isinstance(raw, dict):
        unknown = sorted(set(raw) - set(RANGE_KEYS))
        if unknown:
            raise CliError(f"{where}: unknown key {unknown[0]!r} in a range (keys: from, to, step)")
        missing = [k for k in RANGE_KEYS if k not in raw]
        if missing:
            raise CliError(f"{where}: a range needs {', '.join(missing)}")
        lo, hi, step = (raw[k] for k in RANGE_KEYS)
        for k in RANGE_KEYS:
            if isinstance(raw[k], bool) or not isinstance(raw[k], (int, float)) \
                    or not math.isfinite(raw[k]):
                raise CliError(f"{where}.{k}: must be a number, got {raw[k]!r}")
        if step <= 0:
            raise CliError(f"{where}.step: must be > 0, got {step!r}")
        if lo > hi:
            raise CliError(f"{where}: empty range (from {lo!r} > to {hi!r})")
        n = math.floor((hi - lo) / step * (1 + 1e-12)) + 1
        if n > MAX_POINTS:
            raise CliError(f"{where}: {n} values, more than {MAX_POINTS}")
        if all(isinstance(raw[k], int) for k in RANGE_KEYS):
            return [lo + i * step for i in range(n)]
        return [round(lo + i * step, 12) for i in range(n)]
    vals = raw if isinstance(raw, list) else [raw]
    if not vals:
        raise CliError(f"{where}: empty list")
    for v in vals:
        if isinstance(v, (list, dict)) or not isinstance(v, (bool, int, float, str)):
            raise CliError(f"{where}: a value must be a number, string or boolean, got {v!r}")
    texts = [_arg_text(v) for v in vals]
    twice = [v for i, v in enumerate(vals) if texts[i] in texts[:i]]
    if twice:
        raise CliError(f"{where}: {twice[0]!r} given twice")
    return vals


def _flat(table, prefix=""):
    """Dotted keys of a [overrides] table: `"a.b.c" = ...` or nested [overrides.a.b] tables;
    a table with a from/to/step key is a range, not a section."""
    for k, v in table.items():
        if isinstance(v, dict) and not set(v) & set(RANGE_KEYS):
            yield from _flat(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def _strings(where, raw):
    vals = raw if isinstance(raw, list) else [raw]
    if not vals or not all(isinstance(v, str) and v for v in vals):
        raise CliError(f"{where}: must be a non-empty string or list of strings, got {raw!r}")
    if len(set(vals)) != len(vals):
        raise CliError(f"{where}: {next(v for v in vals if vals.count(v) > 1)!r} given twice")
    return vals


def _arg_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else str(v)


def _option_argv(key, v):
    """The argv of option `key` = `v`: a boolean is a flag given or not."""
    if isinstance(v, bool):
        return [f"--{key}"] if v else []
    return [f"--{key}", _arg_text(v)]


def _scenario_parser(parser, scenario):
    """The subparser of `emu run SCENARIO` inside `parser` (from cli.build_parser())."""
    def sub(p, name):
        (action,) = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        return action.choices[name]
    return sub(sub(parser, "run"), scenario)


def _parse(parser, argv):
    """argparse's Namespace of argv, or CliError with argparse's message (no exit)."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(list(argv))
    except SystemExit:
        msg = err.getvalue().strip().removeprefix("emu: error: ")
        raise CliError(msg.split(" (see: ")[0]) from None


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=repr)


def point_id(config):
    """The id of a resolved configuration (canonical JSON): 12 hex digits of its sha256."""
    return hashlib.sha256(config.encode()).hexdigest()[:12]


def load_spec(path):
    """The Spec of file `path`, every point checked; CliError naming the file and the key."""
    # the real parser, and the registry (tests replace it there)
    from emu.studies import cli
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except FileNotFoundError:
        raise CliError(f"{path}: no such sweep spec") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise CliError(f"{path}: not valid TOML: {e}") from None
    for sec, val in raw.items():
        if sec not in SECTIONS:
            raise CliError(f"{path}: unknown section [{sec}] (sections: {', '.join(SECTIONS)})")
        if not isinstance(val, dict):
            raise CliError(f"{path}: {sec}: must be a table")
    head = raw.get("sweep", {})
    for k in head:
        if k not in SECTIONS["sweep"]:
            raise CliError(f"{path}: sweep.{k}: unknown key (keys: {', '.join(SECTIONS['sweep'])})")
    if ("scenario" in head) == ("scenarios" in head):
        raise CliError(f"{path}: sweep: give scenario or scenarios (one of them)")
    key = "scenario" if "scenario" in head else "scenarios"
    scenarios = _strings(f"{path}: sweep.{key}", head[key])
    known = cli.registry()
    for s in scenarios:
        if s not in known:
            raise CliError(f"{path}: sweep.{key}: unknown scenario {s!r} (scenarios: {', '.join(known)})")
    profiles = ({s: _strings(f"{path}: sweep.profiles", head["profiles"]) for s in scenarios}
                if "profiles" in head else {s: [known[s].DEFAULT_PROFILE] for s in scenarios})
    variants = _strings(f"{path}: sweep.variants", head["variants"]) if "variants" in head else []
    for v in variants:
        if not any(v in getattr(known[s], "VARIANTS", (v,)) for s in scenarios):
            raise CliError(f"{path}: sweep.variants: no scenario of the sweep has variant {v!r}")
    metrics = _strings(f"{path}: sweep.metrics", head["metrics"]) if "metrics" in head else []
    options = {k: _values(f"{path}: options.{k}", v) for k, v in raw.get("options", {}).items()}
    overrides = {k: _values(f"{path}: overrides.{k}", v)
                 for k, v in _flat(raw.get("overrides", {}))}
    for k in options:
        if k.lstrip("-") != k or k in RESERVED_OPTIONS or k in BASE_COLUMNS + ROW_COLUMNS:
            raise CliError(f"{path}: options.{k}: not a scenario option (write it without "
                           f"dashes; --profile and --set are [sweep] profiles and [overrides])")
    for k in overrides:
        if "." not in k:
            raise CliError(f"{path}: overrides.{k}: a profile key is dotted (e.g. core.freq_ghz)")

    parser = cli.build_parser()
    # each value alone first, so that an error names its key
    for s in scenarios:
        sub = _scenario_parser(parser, s)
        for k, vals in options.items():
            if f"--{k}" not in sub._option_string_actions:
                raise CliError(f"{path}: options.{k}: scenario {s} has no option --{k}")
            for v in vals:
                try:
                    _parse(parser, ["run", s, *_option_argv(k, v)])
                except CliError as e:
                    raise CliError(f"{path}: options.{k} = {v!r}: {e}") from None
        for p in profiles[s]:
            try:
                load_profile(p)
            except ProfileError as e:
                raise CliError(f"{path}: sweep.profiles: {e}") from None
            for k, vals in overrides.items():
                for v in vals:
                    try:
                        load_profile(p, {k: v})
                    except ProfileError as e:
                        raise CliError(f"{path}: overrides.{k} = {v!r}: {e}") from None

    n = math.prod(len(v) for v in [*options.values(), *overrides.values()])
    n *= sum(len(profiles[s]) for s in scenarios)
    if n > MAX_POINTS:
        raise CliError(f"{path}: {n} points, more than {MAX_POINTS}")
    points, checked = [], set()
    for s in scenarios:
        for p in profiles[s]:
            for ov in itertools.product(*overrides.values()):
                ov = tuple(zip(overrides, ov))
                if (p, ov) not in checked:
                    try:
                        load_profile(p, dict(ov) or None)
                    except ProfileError as e:
                        raise CliError(f"{path}: overrides {_shown(ov)}: {e}") from None
                    checked.add((p, ov))
                for op in itertools.product(*options.values()):
                    op = tuple(zip(options, op))
                    points.append(_point(parser, path, s, p, op, ov))
    seen = {}
    for pt in points:
        if pt.id in seen:
            raise CliError(f"{path}: {_shown(seen[pt.id].options + seen[pt.id].overrides)} and "
                           f"{_shown(pt.options + pt.overrides)} are the same configuration "
                           f"(of {pt.scenario} on {pt.profile})")
        seen[pt.id] = pt
    return Spec(path, scenarios, profiles, variants, metrics, options, overrides, points)


def _shown(pairs):
    return ", ".join(f"{k} = {v!r}" for k, v in pairs)


def _point(parser, path, scenario, profile, options, overrides):
    argv = ["run", scenario, "--profile", profile, "--quiet"]
    for k, v in overrides:
        argv += ["--set", f"{k}={_arg_text(v)}"]
    for k, v in options:
        argv += _option_argv(k, v)
    try:
        args = _parse(parser, argv)
    except CliError as e:
        raise CliError(f"{path}: point {scenario} on {profile}, {_shown(options + overrides)}: {e}") \
            from None
    resolved = {k: v for k, v in vars(args).items()
                if k not in ("command", "scenario", "profile", "overrides", "json", "quiet",
                             "sensitivity")}
    config = canonical({"scenario": scenario, "profile": profile, "options": resolved,
                        "overrides": dict(args.overrides)})
    return Point(scenario, profile, options, overrides, tuple(argv), config, point_id(config))


# ---------------------------------------------------------------------------- one point
def _number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _plain(v):
    """A number as a Python int or float (numpy's scalars print otherwise)."""
    return int(v) if isinstance(v, numbers.Integral) else float(v)


def result_rows(mod, result):
    """[(variant, label, metric, value)] of a scenario result: every number of a variant,
    its METRIC among them, labelled VARIANT; where the METRIC is a map of rows (dmapool-test's
    time_us), its rows and those of every map with the same rows, labelled VARIANT ROW, as
    scenarios.metric_values labels them."""
    out = []
    for v, d in result["variants"].items():
        m = d[mod.METRIC]
        rows = list(m) if isinstance(m, dict) else None
        for k, x in d.items():
            if rows is None and _number(x):
                out.append((v, v, k, _plain(x)))
            elif rows is not None and isinstance(x, dict) and list(x) == rows \
                    and all(map(_number, x.values())):
                out += [(v, f"{v} {r}", k, _plain(x[r])) for r in rows]
    return out


def run_point(point_id, argv):
    """What a worker runs (a module-level function of plain arguments, for a process pool or
    a Dask worker): `emu run` of argv; (point_id, [(variant, label, metric, value)], None),
    or (point_id, None, "Type: message") when it raised."""
    from emu.studies import cli
    try:
        args = cli.build_parser().parse_args(list(argv))
        mod = cli.registry()[args.scenario]
        return point_id, result_rows(mod, mod.run(args)), None
    except SystemExit as e:
        return point_id, None, f"SystemExit: {e.code}"
    except Exception as e:  # noqa: BLE001   recorded as the point's error; the rest go on
        return point_id, None, f"{type(e).__name__}: {e}"


# ---------------------------------------------------------------------------- the results file
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
    """The results file opened O_APPEND, its header written if it is new (or empty)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    if os.fstat(fd).st_size == 0:
        _write_all(fd, (spec.header_line + "\n").encode())
    return fd


def write_parquet(path):
    """RESULTS.parquet (path with .parquet for its suffix) from the whole CSV, via a temporary
    file renamed into place; None without pyarrow."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
    except ImportError:
        return None
    target = os.path.splitext(path)[0] + ".parquet"
    # every column as text but these two, so a column's type never depends on the rows read
    types = {n: pa.string() for n in read_results(path)[0]}
    types["value"], types["point_rows"] = pa.float64(), pa.int64()
    table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(column_types=types,
                                                                      strings_can_be_null=False))
    tmp = f"{target}.tmp{os.getpid()}"
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


# ---------------------------------------------------------------------------- running
class _Serial:
    """The executor interface of the pool, run in this process (--workers 1)."""

    def submit(self, fn, *a):
        return fn(*a)

    def results(self, futures):
        yield from futures

    def close(self):
        pass


class _Pool:
    """A local process pool forked from this process, after the core was warmed up here."""

    def __init__(self, workers):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        self.ex = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))

    def submit(self, fn, *a):
        return self.ex.submit(fn, *a)

    def results(self, futures):
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool
        try:
            for f in as_completed(futures):
                yield f.result()
        except BrokenProcessPool as e:
            raise CliError(f"a worker process died ({e}); --resume runs the points not "
                           f"written") from None

    def close(self):
        self.ex.shutdown(cancel_futures=True)


class _Dask:
    def __init__(self, address):
        try:
            from dask.distributed import Client
        except ImportError:
            raise CliError(f"--scheduler needs dask.distributed: {CLUSTER_INSTALL}") from None
        try:
            self.client = Client(address, timeout=30)
        except (OSError, TimeoutError) as e:
            raise CliError(f"--scheduler {address}: cannot connect: {e}") from None

    def submit(self, fn, *a):
        return self.client.submit(fn, *a, pure=False)

    def results(self, futures):
        from dask.distributed import as_completed
        self.futures = futures
        for f in as_completed(futures):
            try:
                yield f.result()
            except Exception as e:  # noqa: BLE001   the worker died, not the point: stop
                raise CliError(f"a Dask task failed ({type(e).__name__}: {e}); --resume "
                               f"runs the points not written") from None

    def close(self):
        if getattr(self, "futures", None):
            self.client.cancel(self.futures)
        self.client.close()


def run_sweep(spec, out, resume=False, workers=None, scheduler=None, show=False):
    """Run the points of `spec` not already in `out`, appending each as it finishes;
    {"points", "skipped", "ok", "errors"}."""
    done = points_done(out, spec, resume)
    todo = [p for p in spec.points if p.id not in done]
    by_id = {p.id: p for p in todo}
    # the executor first: a cluster that cannot be reached leaves no file behind
    if scheduler is not None:
        ex = _Dask(scheduler)
    elif (workers or os.cpu_count() or 1) <= 1 or len(todo) <= 1:
        ex = _Serial()
    else:
        from emu.machine import Machine
        Machine.warmup()   # compiled (or loaded) once here; the forked workers inherit it
        ex = _Pool(min(workers or os.cpu_count(), len(todo)))
    errors = 0
    try:
        fd = open_results(out, spec)
        try:
            futures = [ex.submit(run_point, p.id, list(p.argv)) for p in todo]
            with progress(total=len(todo), desc=f"sweep {os.path.basename(spec.path)}",
                          enabled=show, unit="point") as bar:
                for pid, rows, error in ex.results(futures):
                    _write_all(fd, point_csv(spec, by_id[pid], rows, error))
                    errors += error is not None
                    bar.update(1)
        finally:
            os.close(fd)
    finally:
        ex.close()
    return {"points": len(spec.points), "skipped": len(spec.points) - len(todo),
            "ok": len(todo) - errors, "errors": errors}


# ---------------------------------------------------------------------------- plots
def _num(text):
    try:
        return float(text)
    except ValueError:
        return None


def plot_series(spec, rows):
    """{(scenario, metric, key): {series label: [(x, y)]}} for the --plot: per metric and per
    swept key with more than one value, x that key's value, one series per variant and
    combination of the other swept values (profile included, where several)."""
    ids = {p.id for p in spec.points}
    keys = [*spec.options, *spec.overrides]
    swept = [k for k in keys if len((spec.options | spec.overrides)[k]) > 1]
    several = any(len(v) > 1 for v in spec.profiles.values())
    out = {}
    for r in rows:
        if r["point_id"] not in ids or r["status"] != "ok" or not r["metric"]:
            continue
        y = _num(r["value"])
        for k in swept:
            x = _num(r[k])
            x = r[k] if x is None else x
            others = [f"{o}={r[o]}" for o in swept if o != k]
            label = ", ".join([r["variant"], *([r["profile"]] if several else []), *others])
            out.setdefault((r["scenario"], r["metric"], k), {}).setdefault(label, []).append((x, y))
    for series in out.values():
        for pts in series.values():
            if all(isinstance(x, float) for x, _ in pts):
                pts.sort()
    return out


def write_plots(spec, out, directory):
    _, rows = read_results(out)

    def figures():
        for (scenario, metric, key), series in plot_series(spec, rows).items():
            fig = plots.figure(width_in=8.0, height_in=4.5)
            plots.lines(fig, f"{scenario}: {metric}", key, metric, series)
            yield f"sweep-{scenario}-{metric}-{key}", fig
    return plots.write_figures(directory, figures())


# ---------------------------------------------------------------------------- the command
def configure(parser):
    parser.add_argument("spec", metavar="SPEC.toml",
                        help="the grid: [sweep] scenario(s), profiles, variants, metrics; "
                             "[options] and [overrides], a list or a range {from, to, step} "
                             "per key")
    parser.add_argument("--out", metavar="RESULTS",
                        help="results CSV, appended point by point (default: SPEC with .csv); "
                             "also RESULTS.parquet with pyarrow installed")
    parser.add_argument("--resume", action="store_true",
                        help="continue RESULTS: skip the points already in it")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="local worker processes (default: the number of CPUs; 1 runs in "
                             "this process)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run on this Dask distributed scheduler (e.g. tcp://host:8786) "
                             f"instead of local processes ({CLUSTER_INSTALL})")
    parser.add_argument("--plot", metavar="DIR",
                        help="also write DIR/sweep-SCENARIO-METRIC-KEY.png and .svg: each metric "
                             "against each swept key, one line per variant (needs matplotlib)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    quiet_option(parser)
    parser.epilog = "the spec format and the results file: docs/sweeps.md"


def cmd(args):
    if args.workers is not None and args.workers < 1:
        raise CliError(f"--workers {args.workers}: must be at least 1")
    if args.scheduler is not None and args.workers is not None:
        raise CliError("--workers: the Dask cluster has its own workers (not with --scheduler)")
    if args.plot:
        plot_figure(args.plot)
    if args.scheduler is not None:
        try:
            import dask.distributed  # noqa: F401   checked before the (slow) runs
        except ImportError:
            raise CliError(f"--scheduler needs dask.distributed: {CLUSTER_INSTALL}") from None
    spec = load_spec(args.spec)
    out = args.out or os.path.splitext(args.spec)[0] + ".csv"
    summary = run_sweep(spec, out, args.resume, args.workers, args.scheduler, wanted(args))
    summary["results"] = out
    summary["parquet"] = write_parquet(out)
    summary["plots"] = write_plots(spec, out, args.plot) if args.plot else []
    if args.json:
        return json.dumps(summary, indent=2) + "\n"
    text = (f"{summary['points']} point{'s' * (summary['points'] != 1)}: {summary['ok']} run, {summary['errors']} failed "
            f"(status=error), {summary['skipped']} already in {out}\nresults: {out}\n")
    if summary["parquet"]:
        text += f"results: {summary['parquet']}\n"
    return text + "".join(f"plot: {p}\n" for p in summary["plots"])

