"""Named studies (shared/scenarios.md): `emu run NAME`. Each module defines NAME,
DEFAULT_PROFILE, METRIC (its main metric), SENSITIVE (profile keys its result depends on),
`configure(parser)` for its options, `run(args) -> result dict` in the interface format
{"scenario": NAME, "profile": ..., "variants": {VARIANT: {METRIC: value}}, ...} and
`table(result) -> str`.

DESIGN.md: where a number has no source, the profile marks it as an assumption and the
report shows how the result moves when that value is halved and doubled: `sensitivity()`.
"""
import argparse

from emu.studies.scenarios import (
    dax_memcpy,
    dax_read_copy_mc,
    dax_write_usercopy,
    dmapool_test,
    vhost_tx,
)
from memmodel.profile import load_profile

SCENARIOS = {m.NAME: m for m in (dax_memcpy, dax_write_usercopy, dax_read_copy_mc, vhost_tx,
                                  dmapool_test)}
FACTORS = (0.5, 2.0)


def assumed_keys(mod, profile):
    """The keys of mod.SENSITIVE that `profile` marks as assumptions (no source)."""
    p = load_profile(profile)
    return [k for k in mod.SENSITIVE if p.sources.get(k, "").startswith("assumption")]


def metric_values(mod, result):
    """{label: number} of a result's main metric: VARIANT, or "VARIANT ROW" where the metric
    is a map of rows (dmapool-test's time_us)."""
    out = {}
    for v, d in result["variants"].items():
        value = d[mod.METRIC]
        if isinstance(value, dict):
            out.update({f"{v} {row}": x for row, x in value.items()})
        else:
            out[v] = value
    return out


def sensitivity(mod, args, keys):
    """{KEY: {"x0.5": {LABEL: METRIC value}, "x1": ..., "x2": ...}} for each key (labels of
    metric_values)."""
    base = load_profile(args.profile)
    plain = mod.run(args)
    out = {}
    for key in keys:
        value = base.get(key)
        row = {"x1": metric_values(mod, plain)}
        for f in FACTORS:
            scaled = type(value)(round(value * f)) if isinstance(value, int) else value * f
            a = argparse.Namespace(**vars(args))
            a.overrides = list(args.overrides) + [(key, scaled)]
            res = mod.run(a)
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
