"""Named studies (docs/scenarios.md): `emu run NAME`. Each module defines NAME,
DEFAULT_PROFILE, METRIC (its main metric), SENSITIVE (profile keys its result depends on),
OPTIONS, its options declared once (emu.studies.options.Option: the command line, the sweep
and the Python API emu.studies.run are made from them), `run(options) -> result dict` taking
an emu.studies.options.Options (the profile, its overrides, the option values as attributes)
in the interface format {"scenario": NAME, "profile": ..., "variants": {VARIANT: {METRIC:
value}}, ...} and `table(result) -> str`; its docstring is what `emu run NAME --help` prints.
Optional: READINGS, the other settings of values no source settles, run beside (`readings()`);
COSTS, the declared costs it reads from the profile's [software] table (emu.studies.costs).

Scenarios are found, not listed: every module of this package that defines NAME is one
(common.py, which does not, holds what they share); `registry()` gives them by NAME. A new
study is a new module here.

docs/design.md: where a number has no source, the profile marks it as an assumption and the
report shows how the result moves when that value is halved and doubled: `sensitivity()`.
"""
import dataclasses
import functools
import importlib
import pkgutil

from emu.studies.costs import load_profile
from emu.studies.options import Option
from emu.studies.progress import progress

CONTRACT = ("DEFAULT_PROFILE", "METRIC", "SENSITIVE", "OPTIONS", "run", "table")
FACTORS = (0.5, 2.0)


def discover(package, path):
    """{NAME: module} of the modules of `package` (found on `path`) that define NAME, sorted
    by NAME. A scenario module missing part of the contract, with OPTIONS not a tuple of
    Option of distinct names, or a NAME defined twice, is an error naming the modules."""
    found = {}
    for info in pkgutil.iter_modules(path):
        mod = importlib.import_module(f"{package}.{info.name}")
        if not hasattr(mod, "NAME"):
            continue
        missing = [a for a in CONTRACT if not hasattr(mod, a)]
        if missing:
            raise ImportError(f"scenario module {mod.__name__} defines NAME but not "
                              f"{', '.join(missing)}")
        names = [o.name for o in mod.OPTIONS if isinstance(o, Option)]
        if not isinstance(mod.OPTIONS, tuple) or len(set(names)) != len(mod.OPTIONS):
            raise ImportError(f"scenario module {mod.__name__}: OPTIONS must be a tuple of "
                              f"Option of distinct names")
        if mod.NAME in found:
            raise ImportError(f"scenario {mod.NAME!r} is defined by both "
                              f"{found[mod.NAME].__name__} and {mod.__name__}")
        found[mod.NAME] = mod
    return dict(sorted(found.items()))


@functools.cache
def registry():
    """{NAME: module} of this package's scenarios. Found on first use, not on import: the
    modules the scenarios import (the fio driver) may then import common.py."""
    return discover(__name__, __path__)


def assumed_or_transferred(mod, profile):
    """[{"key", "value", "kind", "from"}] of the keys of mod.SENSITIVE whose value in
    `profile` (a name, path or loaded Profile) is not the machine's own measurement: kind
    "transferred" (measured on the machine `from`; checked first, since a transferred value
    may also be written as an assumption) or "assumption" (no source; `from` None)."""
    p = load_profile(profile)
    out = []
    for k in mod.SENSITIVE:
        if k in p.transfers:
            out.append({"key": k, "value": p.get(k), "kind": "transferred", "from": p.transfers[k]})
        elif p.sources.get(k, "").startswith("assumption"):
            out.append({"key": k, "value": p.get(k), "kind": "assumption", "from": None})
    return out


def assumed_keys(mod, profile):
    """The keys of mod.SENSITIVE whose value `profile` assumes or transfers from another
    machine: what `--sensitivity assumptions` halves and doubles."""
    return [e["key"] for e in assumed_or_transferred(mod, profile)]


def assumed_or_transferred_table(entries):
    """The text under a study's table: the values its result scales with that are not the
    machine's own (assumed_or_transferred)."""
    if not entries:
        return ""
    lines = ["\nthe result depends on these values that are not this machine's own measurement:"]
    width = max(len(e["key"]) for e in entries)
    for e in entries:
        why = f"transferred from {e['from']}" if e["kind"] == "transferred" else "assumption"
        lines.append(f"  {e['key']:<{width}}  {e['value']!s:>10}  {why}")
    return "\n".join(lines) + "\n"


def metric_values(mod, result, sep=" "):
    """{label: number} of a result's main metric: VARIANT, or VARIANT `sep` ROW where the
    metric is a map of rows (dmapool-test's time_us)."""
    out = {}
    for v, d in result["variants"].items():
        value = d[mod.METRIC]
        if isinstance(value, dict):
            out.update({f"{v}{sep}{row}": x for row, x in value.items()})
        else:
            out[v] = value
    return out


def with_overrides(options, overrides):
    """`options` (an Options) with `overrides` added to its own (the later one of a key wins)."""
    return dataclasses.replace(options, overrides={**options.overrides, **overrides})


def sensitivity(mod, options, keys):
    """(the plain result, {KEY: {"x0.5": {LABEL: METRIC value}, "x1": ..., "x2": ...}}) for
    each key (labels of metric_values), of `options` (an Options)."""
    base = load_profile(options.profile)
    plain = mod.run(options)
    out = {}
    for key in progress(keys, f"{mod.NAME} sensitivity", options.progress):
        value = base.get(key)
        row = {"x1": metric_values(mod, plain)}
        for f in FACTORS:
            scaled = type(value)(round(value * f)) if isinstance(value, int) else value * f
            res = mod.run(with_overrides(options, {key: scaled}))
            row[f"x{f:g}"] = metric_values(mod, res)
        out[key] = {"value": value, "source": base.sources.get(key, ""), **row}
    return plain, out


def sensitivity_table(mod, sens):
    lines = [f"\nsensitivity of {mod.METRIC} to assumed values (halved / as profiled / doubled):"]
    for key, row in sens.items():
        lines.append(f"  {key} = {row['value']} ({row['source']})")
        for v in row["x1"]:
            lines.append(f"    {v:<22}{row['x0.5'][v]:>12.4g}{row['x1'][v]:>12.4g}"
                         f"{row['x2'][v]:>12.4g}")
    return "\n".join(lines) + "\n"


def readings(mod, options, plain):
    """A study's READINGS (optional: {name: (why, {profile key: value})}, the settings of
    values no source settles that its result may turn on; a str value names another
    profile key whose value it takes) run beside the profile's own: {"readings": {name:
    {"why", "overrides", METRIC values}}, "bracket": {label: [low, high]}} over the
    profile's value and every reading (docs/design.md: an assumption's plausible range).
    A study's optional `derived(values) -> {label: number}` adds quantities computed from
    its metric (vhost-tx: the SMAP cost a packet) to each reading and to the bracket.
    `options`: the Options the plain result was run with."""
    base = load_profile(options.profile, dict(options.overrides) or None)

    def values_of(result):
        v = metric_values(mod, result)
        return {**v, **mod.derived(v)} if hasattr(mod, "derived") else v
    own = values_of(plain)
    lows, highs, out = dict(own), dict(own), {}
    for name, (why, settings) in mod.READINGS.items():
        over = {k: base.get(v) if isinstance(v, str) else v for k, v in settings.items()}
        values = values_of(mod.run(with_overrides(options, over)))
        for k, x in values.items():
            lows[k], highs[k] = min(lows[k], x), max(highs[k], x)
        out[name] = {"why": why, "overrides": over, mod.METRIC: values}
    return {"readings": out, "bracket": {k: [lows[k], highs[k]] for k in own}}


def readings_table(mod, result):
    """The text under a study's table: its metric under each reading (readings())."""
    lines = [f"\n{mod.METRIC} under the other readings of values no source settles "
             f"(the profile's own first):"]
    labels = list(result["bracket"])
    for name, r in result["readings"].items():
        setting = ", ".join(f"{k}={v}" for k, v in r["overrides"].items())
        lines.append(f"  {name}: {setting} ({r['why']})")
        lines += [f"    {k:<36}{r[mod.METRIC][k]:>12.4g}" for k in labels]
    lines.append("  bracket (lowest .. highest over the profile's value and the readings):")
    lines += [f"    {k:<36}{lo:>12.4g} .. {hi:.4g}" for k, (lo, hi) in result["bracket"].items()]
    return "\n".join(lines) + "\n"
