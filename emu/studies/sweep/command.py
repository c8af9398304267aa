"""The `emu sweep` command and its --plot."""
import importlib.util
import json
import os
import shlex

from emu.studies import plots
from emu.studies.options import CliError, plot_figure, quiet_option
from emu.studies.outfiles import check_output_path
from emu.studies.progress import wanted
from emu.studies.sweep.results import PARQUET_OPTION, parquet_path, read_results, write_parquet
from emu.studies.sweep.runners import CLUSTER_INSTALL, check_scheduler, run_sweep
from emu.studies.sweep.spec import load_spec
from emu.studies.sweep.table import SweepResults


# ---------------------------------------------------------------------------- plots
PLOT_NAME = "sweep-{scenario}-{metric}-{key}"   # the basename of a --plot file


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
            yield PLOT_NAME.format(scenario=scenario, metric=metric, key=key), fig
    return plots.write_figures(directory, figures())


# ---------------------------------------------------------------------------- the command
def _check_outputs(out):
    """CliError, before any run, if the results CSV `out` or its Parquet copy (when pyarrow
    will write one) is no regular file or new name, or if the two are the same file (a
    later --resume would read the Parquet copy as the CSV)."""
    check_output_path(out, "--out")
    parquet = parquet_path(out)
    if os.path.abspath(parquet) == os.path.abspath(out):
        raise CliError(f"--out {out}: --out names the results CSV; its Parquet copy is written "
                       f"beside it as {parquet}, here the same file (e.g. --out "
                       f"{os.path.splitext(out)[0]}.csv)")
    if importlib.util.find_spec("pyarrow") is not None:
        check_output_path(parquet, PARQUET_OPTION)


def configure(parser):
    parser.add_argument("spec", metavar="SPEC.toml",
                        help="the grid: [sweep] scenario(s), profiles, variants, metrics; "
                             "[options] and [overrides], a list or a range {from, to, step} "
                             "per key")
    parser.add_argument("--out", metavar="RESULTS",
                        help="the results CSV, appended point by point (default: SPEC with "
                             ".csv); with pyarrow installed also its Parquet copy beside it, "
                             "RESULTS with .parquet for its suffix (so RESULTS must not end in "
                             ".parquet)")
    parser.add_argument("--resume", action="store_true",
                        help="continue RESULTS: skip the points already in it")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="local worker processes (default: the number of CPUs; 1 runs in "
                             "this process; at most the number of CPUs)")
    parser.add_argument("--oversubscribe", action="store_true",
                        help="allow --workers above the number of CPUs")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run on this Dask distributed scheduler (e.g. tcp://host:8786) "
                             f"instead of local processes ({CLUSTER_INSTALL})")
    parser.add_argument("--plot", metavar="DIR",
                        help="also write DIR/sweep-SCENARIO-METRIC-KEY.png and .svg: each metric "
                             "against each swept key, one line per variant (needs matplotlib)")
    parser.add_argument("--json", action="store_true",
                        help="print the summary and the table of results as JSON")
    quiet_option(parser)
    parser.epilog = "the spec format and the results file: docs/sweeps.md"


def cmd(args):
    if args.workers is not None and args.workers < 1:
        raise CliError(f"--workers {args.workers}: must be at least 1")
    cpus = os.cpu_count() or 1
    if args.workers is not None and args.workers > cpus and not args.oversubscribe:
        raise CliError(f"--workers {args.workers}: more than the {cpus} CPUs of this machine "
                       f"(--oversubscribe allows it)")
    if args.scheduler is not None and args.workers is not None:
        raise CliError("--workers: the Dask cluster has its own workers (not with --scheduler)")
    if args.plot is not None:   # '' is an error, not "no plot"
        plot_figure(args.plot, [PLOT_NAME.format(scenario="*", metric="*", key="*")])
    if args.scheduler is not None:
        check_scheduler(args.scheduler)
        try:
            import dask.distributed  # noqa: F401   checked before the (slow) runs
        except ImportError:
            raise CliError(f"--scheduler needs dask.distributed: {CLUSTER_INSTALL}") from None
    spec = load_spec(args.spec)
    out = os.path.splitext(args.spec)[0] + ".csv" if args.out is None else args.out
    _check_outputs(out)
    argv = getattr(args, "argv", None) or ["sweep", args.spec, "--out", out]
    again = shlex.join(["emu", *argv, *(["--resume"] if "--resume" not in argv else [])])
    summary = run_sweep(spec, out, args.resume, args.workers, args.scheduler, wanted(args), again)
    summary["results"] = out
    summary["parquet"] = write_parquet(out)
    summary["plots"] = write_plots(spec, out, args.plot) if args.plot else []
    results = SweepResults.read(out, spec)
    summary["table"] = results.to_json()
    if args.json:
        return json.dumps(summary, indent=2) + "\n"
    text = (f"{summary['points']} point{'s' * (summary['points'] != 1)}: {summary['ok']} run, {summary['errors']} failed "
            f"(status=error), {summary['skipped']} already in {out}\nresults: {out}\n")
    if summary["parquet"]:
        text += f"results: {summary['parquet']}\n"
    if summary["duplicates"]:
        n = len(summary["duplicates"])
        text += (f"warning: {n} point{'s are' if n != 1 else ' is'} in {out} more than once "
                 f"(docs/sweeps.md, \"Atomic rows and --resume\")\n")
    return text + "".join(f"plot: {p}\n" for p in summary["plots"]) + "\n" + results.text()

