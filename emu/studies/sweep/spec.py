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

A point is one (scenario, profile, options, overrides) of the grid's cartesian product. The
grid's size is checked first; then each option value as `emu run` checks it (the scenario's
declared options, emu.studies.api.run_options: Option.parse of the value as the command line
would spell it), and each override value of each profile by load_profile, once each, not once
per point. Its id is a short sha256 of the canonical JSON of its resolved configuration
(every option of the scenario, defaults included, and the overrides), so the same
configuration always has the same id, wherever it runs.
"""
import hashlib
import itertools
import json
import math
import re
from typing import NamedTuple

from emu.studies import api, scenarios
from emu.studies.costs import load_profile
from emu.studies.options import CliError, OptionError, _parse_set
from emu.studies.sweep.results import BASE_COLUMNS, ROW_COLUMNS, _csv_line
from memmodel.profile import ProfileError, read_toml

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
    values: dict        # every option of the scenario by name, defaults included
    settings: dict      # the profile overrides, each value as --set parses it
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


def _count(where, raw):
    """The number of values of a swept key (a list, a range table {from, to, step} with `to`
    included, or one scalar), the range checked and counted as a number, nothing built."""
    if not isinstance(raw, dict):
        n = len(raw) if isinstance(raw, list) else 1
        if not n:
            raise CliError(f"{where}: empty list")
        return n
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
    # as a float first: a tiny step (1e-320) or a huge span overflows to inf, not a list
    steps = (hi - lo) / step
    if not math.isfinite(steps) or steps >= MAX_POINTS:
        raise CliError(f"{where}: more than {MAX_POINTS} values (from {lo!r} to {hi!r} "
                       f"by {step!r})")
    return math.floor(steps * (1 + 1e-12)) + 1


def _values(where, raw):
    """The list of values of a swept key: a list, a range table {from, to, step} (`to`
    included), or one scalar."""
    n = _count(where, raw)
    if isinstance(raw, dict):
        lo, step = raw["from"], raw["step"]
        if all(isinstance(raw[k], int) for k in RANGE_KEYS):
            return [lo + i * step for i in range(n)]
        return [round(lo + i * step, 12) for i in range(n)]
    vals = raw if isinstance(raw, list) else [raw]
    seen = set()
    for v in vals:
        if isinstance(v, (list, dict)) or not isinstance(v, (bool, int, float, str)):
            raise CliError(f"{where}: a value must be a number, string or boolean, got {v!r}")
        if _arg_text(v) in seen:
            raise CliError(f"{where}: {v!r} given twice")
        seen.add(_arg_text(v))
    return vals


def _flat(table):
    """[(path, value)] of the keys of a [overrides] table, `"a.b.c" = ...` (path ("a.b.c",))
    or nested [overrides.a.b] tables (path ("a", "b", "c")); a table with a from/to/step key
    is a range, not a section. A walk without recursion: a spec may nest tables deeply."""
    out, stack = [], [((), iter(table.items()))]
    while stack:
        path, items = stack[-1]
        for k, v in items:
            if isinstance(v, dict) and not set(v) & set(RANGE_KEYS):
                stack.append(((*path, k), iter(v.items())))
                break
            out.append(((*path, k), v))
        else:
            stack.pop()
    return out


def _spelling(path):
    """How the spec writes an override's key path, e.g. overrides."media.optane".x."""
    return ".".join(["overrides", *(k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)
                                    for k in path)])


def _overrides(where, table):
    """{dotted key: raw value} of the [overrides] table; CliError for a key given twice,
    dotted and as a table (both spellings named)."""
    out, spelt = {}, {}
    for path, v in _flat(table):
        k = ".".join(path)
        if k in out:
            raise CliError(f"{where}: {spelt[k]} and {_spelling(path)} are the same key {k} "
                           f"(give it once)")
        out[k], spelt[k] = v, _spelling(path)
    return out


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


def _option_value(option, v):
    """The value of `option` that the spec's `v` gives, as `emu run` takes it (so checked as
    the command line checks it): a bool option's key is its flag (--no-NAME for a default
    true), `v` true or false whether it is given; another `v` is parsed from its text."""
    if option.type is bool:
        if not isinstance(v, bool):
            raise OptionError(f"must be true or false, not {v!r}")
        return v != option.default
    return option.parse(_arg_text(v))


def _scenario_options(scenario):
    """{spec key: Option} of `emu run SCENARIO`'s options, by their flags without dashes."""
    return {o.flag[2:]: o for o in api.run_options(scenarios.registry()[scenario])}


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=repr)


def point_id(config):
    """The id of a resolved configuration (canonical JSON): 12 hex digits of its sha256."""
    return hashlib.sha256(config.encode()).hexdigest()[:12]


def _read_spec(path):
    """The TOML data of the spec file `path`: a regular file of at most MAX_TOML_BYTES,
    checked before it is read (a FIFO or /dev/zero would be read without end), nested at most
    MAX_TOML_DEPTH deep (memmodel.profile.read_toml, the one bounded TOML reader)."""
    try:
        return read_toml(path, "sweep spec")
    except ProfileError as e:
        raise CliError(str(e)) from None


def load_spec(path):
    """The Spec of file `path`, every point checked; CliError naming the file and the key.
    The grid's size is counted and checked first, then each key and each of its values once
    (not once per point), then the points are built."""
    raw = _read_spec(path)
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
    names = _strings(f"{path}: sweep.{key}", head[key])
    known = scenarios.registry()
    for s in names:
        if s not in known:
            raise CliError(f"{path}: sweep.{key}: unknown scenario {s!r} (scenarios: {', '.join(known)})")
    profiles = ({s: _strings(f"{path}: sweep.profiles", head["profiles"]) for s in names}
                if "profiles" in head else {s: [known[s].DEFAULT_PROFILE] for s in names})
    variants = _strings(f"{path}: sweep.variants", head["variants"]) if "variants" in head else []
    for v in variants:
        if not any(v in getattr(known[s], "VARIANTS", (v,)) for s in names):
            raise CliError(f"{path}: sweep.variants: no scenario of the sweep has variant {v!r}")
    metrics = _strings(f"{path}: sweep.metrics", head["metrics"]) if "metrics" in head else []
    raw_options = {f"options.{k}": v for k, v in raw.get("options", {}).items()}
    raw_overrides = {f"overrides.{k}": v
                     for k, v in _overrides(path, raw.get("overrides", {})).items()}
    # the size before any value is built or checked: 2 keys of 100000 values fail at once
    n = math.prod(_count(f"{path}: {k}", v) for k, v in (raw_options | raw_overrides).items())
    n *= sum(len(profiles[s]) for s in names)
    if n > MAX_POINTS:
        raise CliError(f"{path}: {n} points, more than {MAX_POINTS}")
    options = {k[8:]: _values(f"{path}: {k}", v) for k, v in raw_options.items()}
    overrides = {k[10:]: _values(f"{path}: {k}", v) for k, v in raw_overrides.items()}
    for k in options:
        if k.lstrip("-") != k or k in RESERVED_OPTIONS or k in BASE_COLUMNS + ROW_COLUMNS:
            raise CliError(f"{path}: options.{k}: not a scenario option (write it without "
                           f"dashes; --profile and --set are [sweep] profiles and [overrides])")
    for k in overrides:
        if "." not in k:
            raise CliError(f"{path}: overrides.{k}: a profile key is dotted (e.g. core.freq_ghz)")

    # each value alone, once, so that an error names its key
    values = {}   # {(scenario, key): [option value, ...]}
    for s in names:
        declared = _scenario_options(s)
        for k, vals in options.items():
            if k not in declared:
                raise CliError(f"{path}: options.{k}: scenario {s} has no option --{k}")
            values[s, k] = []
            for v in vals:
                try:
                    values[s, k].append(_option_value(declared[k], v))
                except OptionError as e:
                    raise CliError(f"{path}: options.{k} = {v!r}: run {s}: argument --{k}: "
                                   f"{e}") from None
    for p in dict.fromkeys(p for s in names for p in profiles[s]):
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

    # --set's parse of each override value, as `emu run` would take it (the id's "overrides")
    parsed = {k: [_parse_set(f"{k}={_arg_text(v)}")[1] for v in vals]
              for k, vals in overrides.items()}
    points = []
    combos = list(itertools.product(*(range(len(v)) for v in options.values())))
    ops = [tuple((k, options[k][i]) for k, i in zip(options, c)) for c in combos]
    for s in names:
        declared = _scenario_options(s)
        resolved = [_resolved(declared, {k: values[s, k][i] for k, i in zip(options, c)})
                    for c in combos]   # once per combination
        for p in profiles[s]:
            for ov in itertools.product(*(range(len(v)) for v in overrides.values())):
                ov = [(k, overrides[k][i], parsed[k][i]) for k, i in zip(overrides, ov)]
                points += [_point(s, p, op, res, ov) for op, res in zip(ops, resolved)]
    seen = {}
    for pt in points:
        if pt.id in seen:
            raise CliError(f"{path}: {_shown(seen[pt.id].options + seen[pt.id].overrides)} and "
                           f"{_shown(pt.options + pt.overrides)} are the same configuration "
                           f"(of {pt.scenario} on {pt.profile})")
        seen[pt.id] = pt
    return Spec(path, names, profiles, variants, metrics, options, overrides, points)


def _shown(pairs):
    return ", ".join(f"{k} = {v!r}" for k, v in pairs)


def _resolved(declared, given):
    """Every option of a scenario by name, defaults included, given `given` ({spec key:
    option value}): the id's "options" (they do not depend on the profile). `declared`:
    {spec key: Option} of the scenario (_scenario_options)."""
    out = {o.name: o.default for o in declared.values()}
    out.update({declared[k].name: v for k, v in given.items()})
    return out


def _point(scenario, profile, options, resolved, overrides):
    """The Point of `options` (resolved by _resolved) and `overrides` ((key, value as swept,
    value as --set parses it), ...)."""
    settings = {k: parsed for k, _, parsed in overrides}
    config = canonical({"scenario": scenario, "profile": profile, "options": resolved,
                        "overrides": settings})
    return Point(scenario, profile, options, tuple((k, v) for k, v, _ in overrides), resolved,
                 settings, config, point_id(config))
