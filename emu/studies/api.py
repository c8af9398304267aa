"""The studies without a command line: `run(scenario, ...)` runs a named study from Python (a
notebook, a Dask worker) and returns the dict `emu run SCENARIO --json` prints.

    from emu import studies
    result = studies.run("dax-write-usercopy", ios=2000,
                         overrides={"media.optane.read_latency_ns": 300})

The options are the scenario's OPTIONS (emu.studies.options.Option) by name, checked as the
command line checks them (one error text); `emu run` itself calls run_study with the Options
it parsed, so both give the same result.
"""
from emu.studies import scenarios
from emu.studies.costs import load_profile
from emu.studies.options import Option, OptionError, Options, resolve


def scenario(name):
    """The module of the scenario `name`; OptionError naming the scenarios if there is none."""
    known = scenarios.registry()
    if name not in known:
        raise OptionError(f"unknown scenario {name!r} (scenarios: {', '.join(known)})")
    return known[name]


def readings_option(mod):
    """`emu run`'s --no-readings, of a scenario with READINGS."""
    return Option("no_readings", bool, False,
                  "skip the runs under the other readings of the values no source settles ("
                  + ", ".join(mod.READINGS) + ")")


def run_options(mod):
    """The options of `emu run NAME` beside --profile, --set and --sensitivity: no_readings
    (a scenario with READINGS) and the scenario's OPTIONS."""
    return ((readings_option(mod),) if getattr(mod, "READINGS", None) else ()) + mod.OPTIONS


def options_for(name, values=None, *, profile=None, overrides=None, progress=False):
    """The Options of scenario `name` (or its module) for `values` ({option name: value}; the
    others at their defaults), on `profile` (default: the scenario's DEFAULT_PROFILE) with
    `overrides` ({dotted profile key: value}); OptionError for a bad name or value."""
    mod = scenario(name) if isinstance(name, str) else name
    return Options(profile or mod.DEFAULT_PROFILE, dict(overrides or {}),
                   resolve(run_options(mod), dict(values or {}), mod.NAME), progress)


def run(name, values=None, *, profile=None, overrides=None, sensitivity=(), progress=False,
        **more):
    """What `emu run NAME --json` prints, as a dict: scenario `name` run with the option
    values of `values` (a dict, or an Options of options_for()) and of keyword arguments
    (e.g. ios=2000, no_readings=True), on `profile` with `overrides` ({dotted key: value},
    as --set), also halving and doubling the profile keys of `sensitivity` (as --sensitivity;
    "assumptions": every assumed or transferred value the study depends on). `progress`: a
    progress bar on stderr where one may show (emu.studies.progress)."""
    mod = scenario(name)
    if isinstance(values, Options):
        if more or profile is not None or overrides is not None or progress:
            raise OptionError(f"{mod.NAME}: give an Options alone, or the option values, "
                              f"profile and overrides")
        opts = values
    else:
        opts = options_for(mod, {**(values or {}), **more}, profile=profile, overrides=overrides,
                       progress=progress)
    return run_study(mod, opts, list(sensitivity))


def run_study(mod, opts, sensitivity=(), plain=None):
    """The result of scenario module `mod` for Options `opts` (of options_for()) as `emu run
    --json` prints it: the runs of `sensitivity` (keys, "assumptions" among them), the
    readings unless opts.no_readings, the resolved configuration. `plain`: the result of
    mod.run(opts), if the caller ran it already (not with `sensitivity`). OptionError, before
    any run, for a sensitivity key the profile has not or whose value is no number."""
    keys = []
    for k in sensitivity:
        keys += scenarios.assumed_keys(mod, opts.profile) if k == "assumptions" else [k]
    if keys:
        prof = load_profile(opts.profile)
        for k in keys:
            try:
                value = prof.get(k)
            except (KeyError, TypeError):
                raise OptionError(f"--sensitivity {k}: profile {prof.name!r} has no such "
                                  f"key") from None
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise OptionError(f"--sensitivity {k}: {value!r} is not a number")
        result, sens = scenarios.sensitivity(mod, opts, keys)
        result["sensitivity"] = sens
    else:
        result = mod.run(opts) if plain is None else plain
    if getattr(mod, "READINGS", None) and not opts.no_readings:
        result.update(scenarios.readings(mod, opts, result))
    prof = load_profile(opts.profile, opts.overrides or None)
    result["overrides"] = dict(opts.overrides)
    result["profile_files"] = list(prof.files)       # the resolved configuration
    result["profile_sources"] = dict(prof.sources)   # beside every result (docs/style.md 6)
    result["assumed_or_transferred"] = scenarios.assumed_or_transferred(mod, prof)
    return result
