"""The `emu` command line.

Subcommands live in COMMANDS: name -> Command(help, configure(parser), run(args) -> text).
`run` returns the whole output as a string; main() prints it only after the command
succeeded, so a failure never leaves half a table behind.  Expected failures (a bad profile
or override, a malformed trace, a fault in the emulated program, a missing file) are printed
as `emu: error: <message>` on stderr with exit status 2, never as a traceback.

`emu run NAME` and `emu compare NAME` dispatch to the scenario modules of
emu.studies.scenarios.
"""
import argparse
import json
import os
import sys
from typing import Callable, NamedTuple

from emu.results import EmuFault
from emu.studies import (api, plots, profile_cmd, scenarios, spectre, stat, sweep, trace_cmd,
                         validate)
from emu.studies.costs import load_profile
from emu.studies.fio import FioError
from emu.studies.options import (
    CliError,
    Interrupted,
    OptionError,
    add_options,
    machine_options,
    parsed_options,
    plot_figure,
    quiet_option,
    scenario_parsers,
    set_option,
    table,
)
from emu.studies.progress import progress, wanted
from emu.studies.scenarios import (
    assumed_or_transferred_table,
    metric_values,
    readings_table,
    sensitivity_table,
    with_overrides,
)
from isa.program import ProgramError
from memmodel.media import KIND_IDS
from memmodel.profile import ProfileError, read_toml, shipped_profiles


class Command(NamedTuple):
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], str]


# ---------------------------------------------------------------------------- profiles
def _configure_profiles(parser):
    parser.add_argument("--show", metavar="NAME",
                        help="print the resolved profile NAME (a shipped name or a .toml path, "
                             "inherit applied): every key with its value and its source or "
                             "assumption (and the machine a value was transferred from), and "
                             "its memory map ([[region]] tables)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.epilog = "the sections, keys and the rule that every timing number has a source: README.md \"Profiles\""


def _profile_keys(values, prefix=""):
    """(dotted key, value) of every leaf of a profile's values, in file order; the region
    list is shown as its own table."""
    for key, val in values.items():
        if key == "region":
            continue
        if isinstance(val, dict):
            yield from _profile_keys(val, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", val


def _toml_text(val):
    """A value as the profile file spells it (true, not True; a list without quotes)."""
    if isinstance(val, bool):
        return "true" if val else "false"
    return ",".join(val) if isinstance(val, list) else str(val)


def _show_profile(spec, as_json):
    prof = load_profile(spec)
    # Strings, booleans and lists name a choice, not a measurement: the schema asks no
    # provenance of them, and the table says so rather than leave the column blank.
    keys = [{"key": k, "value": v, "source": prof.sources.get(k),
             "transferred_from": prof.transfers.get(k)}
            for k, v in _profile_keys(prof.values) if k != "profile.description"]
    regions = [{"name": r["name"], "base": r["base"], "size_bytes": r["size_bytes"],
                "media": r["media"], "node": r["node"], "privilege": r["privilege"]}
               for r in prof.values["region"]]
    if as_json:
        return json.dumps({"name": prof.name, "description": prof.values["profile"]["description"],
                           "files": prof.files, "keys": keys, "regions": regions}, indent=2) + "\n"
    shown = [(k["key"], _toml_text(k["value"]),
              (f"transferred from {k['transferred_from']}: " if k["transferred_from"] else "")
              + (k["source"] or "(a choice, no source needed)")) for k in keys]
    kw, vw = (max(len(row[i]) for row in shown + [("key", "value")]) for i in (0, 1))
    out = [f"profile {prof.name}: {prof.values['profile']['description']}",
           f"files (inherit chain, last wins): {' -> '.join(prof.files)}", "",
           f"{'key':<{kw}}  {'value':<{vw}}  source or assumption"]
    out += [f"{k:<{kw}}  {v:<{vw}}  {s}" for k, v, s in shown]
    rows = [(r["name"], f"{r['base']:#x}", f"{r['size_bytes']:#x}", r["media"], str(r["node"]),
             r["privilege"]) for r in regions]
    head = ("region", "base", "size_bytes", "media", "node", "privilege")
    widths = [max(len(row[i]) for row in rows + [head]) for i in range(len(head))]
    out += ["", "  ".join(f"{h:<{w}}" for h, w in zip(head, widths)).rstrip()]
    out += ["  ".join(f"{c:<{w}}" for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(out) + "\n"


def _cmd_profiles(args):
    if args.show is not None:
        return _show_profile(args.show, args.json)
    names = shipped_profiles()
    described = [(n, load_profile(n).values["profile"]["description"]) for n in names]
    if args.json:
        return json.dumps([{"name": n, "description": d} for n, d in described], indent=2) + "\n"
    width = max(map(len, names))
    return "".join(f"{n:<{width}}  {d}\n" for n, d in described)


# ---------------------------------------------------------------------------- run
def _configure_run(parser):
    for mod, p in scenario_parsers(parser, scenarios.registry()):
        machine_options(p, mod.DEFAULT_PROFILE)
        quiet_option(p)
        p.add_argument("--sensitivity", action="append", default=[], metavar="KEY",
                       help="also run with this profile value halved and doubled (repeatable); "
                            "'assumptions' = every value the study depends on that the profile "
                            "gives without a source or transferred from another machine")
        add_options(p, api.run_options(mod))
        stat.add_option(p)


def _cmd_run(args):
    mod = scenarios.registry()[args.scenario]
    stat.check_args(args)
    opts = parsed_options(args, api.run_options(mod))
    plain, stats = stat.plain_run(mod, opts) if args.stat else (None, None)
    result = api.run_study(mod, opts, args.sensitivity, plain)
    if stats:
        result["stat"] = stats
    if args.json:
        return json.dumps(result, indent=2) + "\n"
    return (mod.table(result) + assumed_or_transferred_table(result["assumed_or_transferred"])
            + (sensitivity_table(mod, result["sensitivity"]) if "sensitivity" in result else "")
            + (readings_table(mod, result) if "readings" in result else "")
            + "".join(stat.text(f"{mod.NAME} {v}", s) for v, s in (stats or {}).items()))


# ---------------------------------------------------------------------------- compare
class MediaSwap(NamedTuple):
    text: str            # REGION=KIND_OR_FILE as typed, for messages
    region: str
    kind: str | None     # a media kind, or None with `path` a file
    path: str | None     # a file holding one [media.NAME] table
    table: dict | None = None   # that table (key -> number), once _read_media read it


def _media_swap(item):
    """--media REGION=KIND_OR_FILE, split; a FILE (ending in .toml or holding a /) is read by
    _read_media in the command, inside main()'s error handling, before any scenario runs."""
    region, sep, target = (s.strip() for s in item.partition("="))
    if not sep or not region or not target:
        raise argparse.ArgumentTypeError(f"expected REGION=KIND_OR_FILE, got {item!r}")
    if target.endswith(".toml") or "/" in target:
        return MediaSwap(item, region, None, target)
    if target not in KIND_IDS:
        raise argparse.ArgumentTypeError(f"{item}: unknown media kind {target!r} "
                                         f"(kinds: {', '.join(KIND_IDS)})")
    return MediaSwap(item, region, target, None)


def _read_media(swap):
    """`swap` with the table of its file read (bounded as a profile is), if it names one."""
    if swap.path is None:
        return swap
    try:
        media = read_toml(swap.path, "media file").get("media")
    except ProfileError as e:
        raise CliError(f"--media {swap.text}: {e}") from None
    if not isinstance(media, dict) or len(media) != 1 or not isinstance(
            table := next(iter(media.values())), dict):
        raise CliError(f"--media {swap.text}: {swap.path} must hold one [media.NAME] table")
    # a sourced number may be written as in a profile, { value = ..., source = ... }
    table = {k: v["value"] if isinstance(v, dict) and "value" in v else v for k, v in table.items()}
    return swap._replace(table={k: v for k, v in table.items() if _is_number(v)})


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _media_overrides(profile, swaps, overrides):
    """The overrides that put each swap's region on the new timings in `profile` under the
    --set `overrides`: every number of the target media table that the region's own media
    table also has, after `overrides`; a key of both is an error. Overriding
    the media table, not the region's `media`, keeps the region's kind, so a pmem namespace
    stays one for the scenario (its kind's own keys, Optane's XPBuffer, stay as profiled), and
    moves every region on that media with it."""
    values = load_profile(profile, overrides or None).values
    regions = {r["name"]: r for r in values["region"]}
    out, swapped = dict(overrides), {}
    for s in swaps:
        if s.region not in regions:
            raise CliError(f"--media {s.text}: profile {profile!r} has no region {s.region!r} "
                           f"(regions: {', '.join(regions)})")
        own = regions[s.region]["media"]
        if own in swapped:
            raise CliError(f"--media {s.text}: region {s.region!r} is on media.{own}, already "
                           f"swapped by --media {swapped[own]}")
        swapped[own] = s.text
        if s.kind is not None:
            kinds = [m for m, t in values["media"].items() if t["kind"] == s.kind]
            if not kinds:
                raise CliError(f"--media {s.text}: profile {profile!r} has no media of kind "
                               f"{s.kind!r} to take the timings of")
            table = {k: v for k, v in values["media"][kinds[0]].items()
                     if _is_number(v) and k in values["media"][own]}
        else:
            unknown = sorted(set(s.table) - set(values["media"][own]))
            if unknown:
                raise CliError(f"--media {s.text}: media.{own} of {profile!r} has no key "
                               f"{unknown[0]!r}")
            table = s.table
        for k, v in table.items():
            if f"media.{own}.{k}" in overrides:
                raise CliError(f"--set media.{own}.{k}: also set by --media {s.text}")
            out[f"media.{own}.{k}"] = v
    return out


def _configure_compare(parser):
    for mod, p in scenario_parsers(parser, scenarios.registry()):
        p.add_argument("--profiles", required=True, metavar="P,P,...",
                       type=lambda t: [s.strip() for s in t.split(",") if s.strip()],
                       help="profiles to run on (names or files), comma-separated; ratios are "
                            "against the first")
        p.add_argument("--media", action="append", default=[], type=_media_swap,
                       metavar="REGION=KIND_OR_FILE",
                       help="run REGION's media on the timings of the profile's media of this "
                            "kind (e.g. pmem0=dram), or of the one [media.NAME] table of a TOML "
                            "file (repeatable)")
        set_option(p)
        p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
        p.add_argument("--plot", metavar="DIR",
                       help="also write DIR/compare-SCENARIO.png and .svg: the metric per "
                            "variant, one bar per profile (needs matplotlib)")
        quiet_option(p)
        add_options(p, mod.OPTIONS)


def _compare_plot(result, directory):
    """The --plot of compare: per variant one bar per profile; returns the paths written."""
    n = len(result["variants"]) * len(result["profiles"])
    fig = plots.figure(width_in=min(4.0 + 0.35 * n, 16.0), height_in=4.5)
    plots.grouped_bars(fig, result["scenario"], result["metric"], result["variants"])
    return plots.write_figures(directory, [(_compare_plot_name(result["scenario"]), fig)])


def _compare_plot_name(scenario):
    """The basename of compare's plot (checked before the runs)."""
    return f"compare-{scenario}"


def _cmd_compare(args):
    mod = scenarios.registry()[args.scenario]
    if not args.profiles:
        raise CliError("--profiles: name at least one profile")
    args.media = [_read_media(s) for s in args.media]
    twice = [p for p in dict.fromkeys(args.profiles) if args.profiles.count(p) > 1]
    if twice:
        raise CliError(f"--profiles: {twice[0]} given twice")
    if args.plot is not None:   # '' is an error, not "no plot"
        plot_figure(args.plot, [_compare_plot_name(mod.NAME)])
    # every profile and swap is checked before the first (slow) run
    overrides = {p: _media_overrides(p, args.media, dict(args.overrides))
                 for p in args.profiles}
    values = {}
    for p in progress(args.profiles, f"{mod.NAME} profiles", wanted(args)):
        opts = parsed_options(args, mod.OPTIONS, profile=p)
        values[p] = metric_values(mod, mod.run(with_overrides(opts, overrides[p])), sep=" / ")
    labels = list(dict.fromkeys(k for v in values.values() for k in v))
    first = values[args.profiles[0]]
    variants = {k: {p: values[p].get(k) for p in args.profiles} for k in labels}
    ratios = {k: {p: (v / first[k] if v is not None and first.get(k) else None)
                  for p, v in row.items()} for k, row in variants.items()}
    result = {"scenario": mod.NAME, "metric": mod.METRIC, "profiles": args.profiles,
              "media": [s.text for s in args.media], "overrides": overrides,
              "variants": variants, "ratios": ratios}
    # the resolved configuration beside the result (docs/style.md 6), as `emu run` does
    resolved = {p: load_profile(p, overrides[p] or None) for p in args.profiles}
    result["profile_files"] = {p: list(r.files) for p, r in resolved.items()}
    result["profile_sources"] = {p: dict(r.sources) for p, r in resolved.items()}
    paths = _compare_plot(result, args.plot) if args.plot else []
    if args.json:
        return json.dumps(result, indent=2) + "\n"
    base = args.profiles[0]
    num = lambda x: "-" if x is None else f"{x:.6g}"   # noqa: E731
    header = ["variant"] + args.profiles + [f"{p} / {base}" for p in args.profiles[1:]]
    rows = [[k] + [num(variants[k][p]) for p in args.profiles]
            + [num(ratios[k][p]) for p in args.profiles[1:]] for k in labels]
    swaps = f" with --media {', '.join(result['media'])}" if args.media else ""
    return (f"{mod.NAME}: {mod.METRIC} per profile{swaps}\n\n" + table(header, rows)
            + "".join(f"plot: {p}\n" for p in paths))


# ---------------------------------------------------------------------------- spectre
def _configure_spectre(parser):
    parser.add_argument("gadget", choices=spectre.GADGETS,
                        help="v1: bounds check bypass; v1-lfence: with barrier_nospec after the "
                             "check; v1-nospec: with array_index_nospec masking; trained (the "
                             "branch predictor trained in bounds, then attacked): v1-trained "
                             "(the bound loaded), v1-nested (a second, nested check), v1-loaded "
                             "(the index loaded in the body), v1-nospec-loaded (with "
                             "array_index_nospec on that index)")
    parser.add_argument("--secret", type=lambda t: int(t, 0), default=0x5A, metavar="BYTE",
                        help="the secret byte beyond the array (default: 0x5a)")
    parser.add_argument("--train", type=int, default=spectre.TRAIN_CALLS, metavar="N",
                        help="a trained gadget's in-bounds calls before the attack (default: "
                             f"{spectre.TRAIN_CALLS}; 0: the predictor untrained)")
    machine_options(parser, "skylake-ddr4")


def _cmd_spectre(args):
    if not 0 <= args.secret <= 255:
        raise CliError(f"--secret {args.secret}: not a byte (0..255)")
    if not 0 <= args.train <= spectre.MAX_TRAIN_CALLS:
        raise CliError(f"--train {args.train}: not in 0..{spectre.MAX_TRAIN_CALLS}")
    if args.train != spectre.TRAIN_CALLS and args.gadget not in spectre.TRAINED:
        raise CliError(f"--train: {args.gadget} has no predicted branch to train")
    report = spectre.run_gadget(args.gadget, args.secret, args.profile,
                                dict(args.overrides) or None, train_calls=args.train)
    return json.dumps(report, indent=2) + "\n" if args.json else spectre.table(report)


# ---------------------------------------------------------------------------- validate
def _configure_validate(parser):
    parser.add_argument("--profile", action="append", default=[], metavar="P",
                        help="only the rows of this shipped profile (repeatable; default: every "
                             "profile that has rows)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="only the row(s) of this name (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument("--plot", metavar="DIR",
                        help="also write DIR/validate-PROFILE.png and .svg per profile "
                             "(needs matplotlib)")
    parser.epilog = "the rows, their method and the known gaps: docs/validation.md"


def _cmd_validate(args):
    known = validate.profiles()
    for p in args.profile:
        if p not in known:
            raise CliError(f"--profile {p}: no validation rows (profiles with rows: "
                           f"{', '.join(known)})")
    names = sorted({r.name for r in validate.select(args.profile)})
    for n in args.only:
        if n not in names:
            where = f" of {', '.join(args.profile)}" if args.profile else ""
            raise CliError(f"--only {n}: no such row{where} (rows: {', '.join(names)})")
    rows = validate.select(args.profile, args.only)
    figure = (plot_figure(args.plot, sorted({validate.plot_name(r.profile) for r in rows}))
              if args.plot is not None else None)   # '' is an error, not "no plot"
    results = validate.run_rows(rows)
    paths = validate.write_plots(results, args.plot, figure) if args.plot else []
    if args.json:
        return json.dumps(validate.report(results), indent=2) + "\n"
    return validate.table(results) + "".join(f"plot: {p}\n" for p in paths)


# ---------------------------------------------------------------------------- main
COMMANDS = {
    "run": Command("run a named study (docs/scenarios.md)", _configure_run, _cmd_run),
    "profiles": Command("list the shipped latency profiles", _configure_profiles, _cmd_profiles),
    "trace": Command("replay a memory trace (valgrind lackey, din, npy) on an emulated machine",
                     trace_cmd.configure, trace_cmd.cmd_trace),
    "spectre": Command("run a Spectre v1 gadget; list the lines filled only transiently and "
                       "what its mitigation costs per in-bounds call",
                       _configure_spectre, _cmd_spectre),
    "validate": Command("run the microbenchmarks of docs/hardware.md on their machines' profiles: "
                        "measured against emulated", _configure_validate, _cmd_validate),
    "profile": Command("where a study's or a trace's cycles go: per function, source line and "
                       "region, stall causes, the hot cachelines; cachegrind.out for cg_annotate",
                       profile_cmd.configure, profile_cmd.cmd),
    "compare": Command("run a study on several profiles: its metric side by side, with ratios",
                       _configure_compare, _cmd_compare),
    "sweep": Command("run a grid of studies over scenarios, profiles, options and profile "
                     "overrides, in local processes or on a Dask cluster; results as CSV",
                     sweep.configure, sweep.cmd),
}


class _Parser(argparse.ArgumentParser):
    """argparse with every usage error one line `emu: error: ...` like the others (a
    subcommand's parser would print its usage and `emu trace: error:`), exit status 2."""

    def error(self, message):
        where = self.prog.removeprefix("emu").strip()
        self.exit(2, f"emu: error: {where + ': ' if where else ''}{message} "
                     f"(see: {self.prog} --help)\n")


def build_parser():
    parser = _Parser(
        prog="emu", description="cacheline-emu: a cycle-approximate x86 memory-system emulator.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, cmd in COMMANDS.items():
        cmd.configure(sub.add_parser(name, help=cmd.help, description=cmd.help))
    return parser


def main(argv=None):
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:   # --help (0) or a usage error (2), already printed
        return e.code
    args.argv = list(sys.argv[1:] if argv is None else argv)   # for files that record it
    try:
        text = COMMANDS[args.command].run(args)
    except (CliError, OptionError, ProfileError, ProgramError, EmuFault, FioError,
            OSError) as e:
        print(f"emu: error: {e}", file=sys.stderr)
        return getattr(e, "status", 2)
    except KeyboardInterrupt:   # outputs are written whole or not at all: nothing is torn
        print("emu: error: interrupted", file=sys.stderr)
        return Interrupted.status
    except Exception as e:   # a bug: still no traceback for the user, but say it is one
        if os.environ.get("EMU_TRACEBACK"):
            raise
        print(f"emu: error: internal error, please report it: {type(e).__name__}: {e} "
              "(EMU_TRACEBACK=1 shows the traceback)", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
