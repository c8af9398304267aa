"""The spec of `emu sweep`, a TOML file, strict like a profile: an unknown section or key, an
unknown scenario, an empty list or range, a value of the wrong type or outside an option's
range is an error naming the file and the key, raised before anything runs:

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
"""
import argparse
import contextlib
import hashlib
import io
import itertools
import json
import math
import tomllib
from typing import NamedTuple

from emu.studies.options import CliError
from emu.studies.sweep.results import BASE_COLUMNS, ROW_COLUMNS, _csv_line
from memmodel.profile import ProfileError, load_profile

SECTIONS = {"sweep": ("scenario", "scenarios", "profiles", "variants", "metrics"),
            "options": None, "overrides": None}   # None: any key (checked per scenario/profile)
RANGE_KEYS = ("from", "to", "step")
MAX_POINTS = 100_000
# options the sweep sets itself, or that make no sense for one point
RESERVED_OPTIONS = ("profile", "set", "json", "quiet", "sensitivity", "help", "h")


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
