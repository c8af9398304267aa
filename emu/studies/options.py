"""What the `emu` subcommands share: the usage error, --profile/--set/--json, --quiet,
the scenarios' subparsers, --plot's check, and the plain-text table."""
import argparse


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
    parser.add_argument("--set", dest="overrides", action=_SetOnce, type=_parse_set, default=[],
                        metavar="KEY=VALUE",
                        help="override a profile value, e.g. cache.l1d.prefetcher=none or "
                             "core.freq_ghz=3.0 "
                             "(VALUE is parsed as int, float, true/false or string; repeatable, "
                             "each KEY once; values outside a key's range are refused)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def quiet_option(parser):
    """--quiet, of the commands that show a progress bar (emu.studies.progress)."""
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar on stderr (shown otherwise on a terminal after "
                             "2 s, with tqdm installed)")


def table(header, rows):
    cols = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
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


