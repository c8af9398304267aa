"""A scenario's options, declared once (Option), and what the `emu` subcommands share.

A scenario module declares OPTIONS, a tuple of Option. From it `add_options` makes the command
line's arguments (the one place declarations become argparse arguments), the sweep checks its
spec's values with Option.parse, and the Python API (emu.studies.api) checks its keyword
values with Option.check and passes the scenario an Options: one check, one error text.

The rest is the command line's: the usage error, --profile/--set/--json, --quiet, the
scenarios' subparsers, --plot's check, and the plain-text table.
"""
import argparse
import math
from dataclasses import dataclass

from emu.studies.progress import wanted

TYPES = (int, float, str, bool)
# what Options and emu.studies.run name themselves: no option may take these names
RESERVED = ("name", "values", "profile", "overrides", "progress", "sensitivity")


class OptionError(ValueError):
    """A bad option value or name: one line naming the option (the API's, the sweep's and,
    through argparse, the command line's)."""


@dataclass(frozen=True)
class Option:
    """One option of a scenario. `name` is a Python identifier, the attribute of Options and
    the API's keyword; the command line spells it --NAME with dashes, a bool of default true
    --no-NAME (a flag that turns it off). `type` is int, float, str or bool; `default` None
    means "not given" (an int or str then). `help` is the command line's (argparse's
    %(default)s names the default). A value is one of `choices`, or in `low`..`high` (both
    included; `low` excluded with `low_open`). `metavar`: the command line's placeholder."""
    name: str
    type: type
    default: object
    help: str
    choices: tuple | None = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    metavar: str | None = None

    def __post_init__(self):
        if not self.name.isidentifier() or self.type not in TYPES:
            raise TypeError(f"option {self.name!r}: a Python identifier of type int, float, "
                            f"str or bool")
        if self.name in RESERVED:
            raise TypeError(f"option {self.name!r}: a name the options use themselves "
                            f"({', '.join(RESERVED)})")
        if self.default is not None or self.type is bool:
            try:
                self.check(self.default)
            except OptionError as e:
                raise TypeError(f"option {self.name}: default {self.default!r}: {e}") from None

    @property
    def flag(self):
        """The command line's spelling, e.g. --file-size, --no-fast-forward."""
        dashed = self.name.replace("_", "-")
        return f"--no-{dashed}" if self.type is bool and self.default else f"--{dashed}"

    def parse(self, text):
        """The value of the command line's `text` (an int also as 0x..., 0o..., 0b...),
        checked; OptionError with the reason (argparse's wording where argparse has one)."""
        if self.type is bool:
            raise OptionError(f"{self.flag} is a flag: it takes no value")
        try:
            value = int(text, 0) if self.type is int else self.type(text)
        except ValueError:
            raise OptionError(f"invalid {self.type.__name__} value: {text!r}") from None
        return self.check(value, text)

    def check(self, value, shown=None):
        """`value` as the option holds it (an int made a float for a float option); OptionError
        with the reason if it has the wrong type, is out of range or no choice. `shown`: the
        value as written (the command line's text), else its repr."""
        shown = repr(value) if shown is None else shown
        if value is None and self.default is None:
            return None
        if self.type is bool:
            if not isinstance(value, bool):
                raise OptionError(f"must be true or false, not {shown}")
            return value
        if self.type is str:
            if not isinstance(value, str):
                raise OptionError(f"must be a string, not {shown}")
        elif isinstance(value, bool) or not isinstance(
                value, int if self.type is int else (int, float)):
            raise OptionError(f"must be {self._kind()}, not {shown}")
        value = self.type(value)
        if self.choices is not None and value not in self.choices:
            raise OptionError(f"invalid choice: {value!r} "
                              f"(choose from {', '.join(map(repr, self.choices))})")
        if not self._in_range(value):
            raise OptionError(f"must be {self._kind()}, not {shown}")
        return value

    def _in_range(self, value):
        if isinstance(value, float) and not math.isfinite(value):
            return False
        low_ok = self.low is None or (self.low < value if self.low_open else self.low <= value)
        return low_ok and (self.high is None or value <= self.high)

    def _kind(self):
        """What a value must be, e.g. "an integer of at least 1 and at most 100", "a fraction
        in (0, 1]" (a range within [0, 1]), "a number in [2, 8]"."""
        if self.type is int:
            bounds = [f"of at least {self.low}" if self.low is not None else "",
                      f"at most {self.high}" if self.high is not None else ""]
            return " ".join(["an integer", " and ".join(b for b in bounds if b)]).strip()
        if self.low is None and self.high is None:
            return "a finite number"
        fraction = None not in (self.low, self.high) and 0 <= self.low <= self.high <= 1
        return (f"{'a fraction' if fraction else 'a number'} in {'(' if self.low_open else '['}"
                f"{'-inf' if self.low is None else f'{self.low:g}'}, "
                f"{'inf' if self.high is None else f'{self.high:g}'}]")


@dataclass(frozen=True)
class Options:
    """What a scenario's run(options) takes: the profile (a name or a file), its overrides
    ({dotted key: value}, as --set gives them), whether a progress bar may show, and `values`,
    every option of the scenario by name (checked, defaults filled in: resolve()), read as
    attributes too (options.ios). Derive a changed copy with dataclasses.replace."""
    profile: str
    overrides: dict
    values: dict
    progress: bool = False

    def __getattr__(self, name):   # only for names that are no field
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"no option {name!r} (options: {', '.join(values)})")


def resolve(declared, given, where):
    """{name: value} of every option of `declared` (Option, ...): those of `given` ({name:
    value}) checked, the others at their defaults. OptionError "WHERE: ..." naming the option
    for an unknown name or a bad value."""
    by_name = {o.name: o for o in declared}
    unknown = [k for k in given if k not in by_name]
    if unknown:
        raise OptionError(f"{where}: no option {unknown[0]!r} (options: "
                          f"{', '.join(by_name) or 'none'})")
    out = {}
    for o in declared:
        if o.name not in given:
            out[o.name] = o.default
            continue
        try:
            out[o.name] = o.check(given[o.name])
        except OptionError as e:
            raise OptionError(f"{where}: option {o.name}: {e}") from None
    return out


# ---------------------------------------------------------------------------- the command line
class CliError(Exception):
    """A usage problem found after argument parsing (reported like the others)."""
    status = 2   # the exit status


class Interrupted(CliError):
    """Ctrl-C: one line saying what was kept, and the shell's status for SIGINT."""
    status = 130



def _parse_value(text):
    """--set VALUE: int (decimal or 0x/0o/0b), float, true/false, else a string."""
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def _parse_set(item):
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {item!r}")
    return key.strip(), _parse_value(value.strip())


class _SetOnce(argparse.Action):
    """--set appends (KEY, VALUE); a KEY given twice is an error rather than last-wins."""

    def __call__(self, parser, namespace, pair, option_string=None):
        given = list(getattr(namespace, self.dest))
        if any(key == pair[0] for key, _ in given):
            raise argparse.ArgumentError(None, f"--set {pair[0]} given twice")
        setattr(namespace, self.dest, given + [pair])


def machine_options(parser, default_profile):
    """--profile, --set and --json, shared by the commands that run a machine."""
    parser.add_argument("--profile", default=default_profile, metavar="P",
                        help="shipped profile name, or path to a profile file (ending in .toml "
                             "or holding a /) (default: %(default)s)")
    set_option(parser)
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object instead of a table")


def set_option(parser):
    """--set KEY=VALUE (repeatable, each KEY once): `overrides`, a list of (KEY, VALUE)."""
    parser.add_argument("--set", dest="overrides", action=_SetOnce, type=_parse_set, default=[],
                        metavar="KEY=VALUE",
                        help="override a profile value, e.g. cache.l1d.prefetcher=none or "
                             "core.freq_ghz=3.0 "
                             "(VALUE is parsed as int, float, true/false or string; repeatable, "
                             "each KEY once; values outside a key's range are refused)")


def add_options(parser, options):
    """The arguments of `options` (Option, ...) on `parser`, each with its option's name for
    dest: a bool a flag, the others checked by Option.parse (its reason after argparse's
    "argument --NAME:")."""
    for o in options:
        if o.type is bool:
            parser.add_argument(o.flag, dest=o.name, help=o.help,
                                action="store_false" if o.default else "store_true")
        else:
            parser.add_argument(o.flag, dest=o.name, type=_argument_type(o), default=o.default,
                                choices=o.choices, metavar=o.metavar, help=o.help)


def parsed_options(args, declared, profile=None):
    """The Options of the command line's `args` for a scenario's `declared` options (the
    arguments add_options made), on `profile` (default: --profile)."""
    return Options(profile or args.profile, dict(args.overrides),
                   {o.name: getattr(args, o.name) for o in declared}, wanted(args))


def _argument_type(option):
    def parse(text):
        try:
            return option.parse(text)
        except OptionError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return parse


def quiet_option(parser):
    """--quiet, of the commands that show a progress bar (emu.studies.progress)."""
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar on stderr (shown otherwise on a terminal after "
                             "2 s, with tqdm installed)")


def table(header, rows):
    """Columns of text: numbers right-aligned, the first and the last column (names, and
    lists such as a line's sites) left-aligned."""
    cols = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(header))]
    last = len(header) - 1
    fmt = lambda r: "  ".join(c.ljust(w) if i in (0, last) else c.rjust(w)
                             for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return "\n".join(fmt(r) for r in cols) + "\n"


SCENARIO_EPILOG = "results, what the model predicts and why, and its gaps: docs/scenarios.md"


def scenario_parsers(parser, scenarios, required=True):
    """(module, subparser) per scenario of `scenarios` ({NAME: module}), its --help the
    module's docstring (run, compare, profile)."""
    sub = parser.add_subparsers(dest="scenario", metavar="SCENARIO", required=required)
    for name, mod in scenarios.items():
        yield mod, sub.add_parser(name, help=mod.__doc__.splitlines()[0], description=mod.__doc__,
                                  epilog=SCENARIO_EPILOG,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)



def plot_figure(directory, names=()):
    """matplotlib's Figure class for --plot DIR, checked before any (slow) run: CliError if
    DIR is empty or no directory, if an entry of DIR matching a glob pattern of `names`
    (the basenames the command writes, with .png and .svg) is not a regular file
    (emu.studies.outfiles), or if matplotlib is missing (saying how to install it)."""
    # imported here: plots and outfiles import CliError from this module
    from emu.studies import outfiles, plots
    outfiles.check_output_dir(directory, "--plot", [f"{n}.{ext}" for n in names
                                                    for ext in plots.FORMATS])
    try:
        return plots.matplotlib_figure()
    except ImportError:
        raise CliError(f"--plot needs matplotlib: {plots.INSTALL}") from None


