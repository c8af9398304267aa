"""cachegrind's cache options on a trace run: ``--I1/--D1/--LL size,assoc,line_size`` (and
``--L2``) with cachegrind's meaning, and ``--two-level`` (cachegrind's hierarchy: D1 and LL,
no L2), so that a trace replays on the geometry of a cachegrind run.

Each option becomes overrides of the profile's cache keys (size_bytes, ways) whose source
says which option set them ("command line --D1 32768,8,64"), as --set's do; the emulator's
lines are 64 B, so line_size must be 64. --LL is the last level: cache.llc, or with
--two-level the profile's LLC moved up to the second level (cache.l2, the L2's own
parameters and prefetchers dropped). cachegrind models no prefetcher: add
``--set cache.l1d.prefetcher=none`` (and ``cache.l2.prefetcher=none`` with three levels) to
compare counts. The emulator models the data side only, so --I1 is refused.
"""
import argparse
from pathlib import Path

from emu.studies.options import CliError
from memmodel.profile import ProfileError, load_raw

LINE_BYTES = 64
# option -> the level it sets (three levels; --two-level's LL is cache.l2)
LEVELS = {"D1": "l1d", "L2": "l2", "LL": "llc"}


def options(parser):
    """--I1, --D1, --L2, --LL and --two-level on a trace command's parser."""
    for name, what in (("I1", "first-level instruction cache (refused: the data side is "
                               "modelled)"),
                       ("D1", "L1 data cache"),
                       ("L2", "second-level cache (three-level profiles)"),
                       ("LL", "last-level cache")):
        parser.add_argument(f"--{name}", dest=f"cg_{name}", type=_geometry(name),
                            metavar="SIZE,ASSOC,LINE",
                            help=f"{what}, as cachegrind's --{name}: bytes, ways, line bytes (64)")
    parser.add_argument("--two-level", action="store_true",
                        help="cachegrind's hierarchy: L1D and the last level, no L2 (the "
                             "profile's LLC becomes the second level)")


def _geometry(name):
    def parse(text):
        parts = text.split(",")
        try:
            size, assoc, line = (int(p) for p in parts)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r}: want SIZE,ASSOC,LINE_SIZE in bytes, ways, bytes (as cachegrind's "
                f"--{name}, e.g. 32768,8,64)") from None
        if line != LINE_BYTES:
            raise argparse.ArgumentTypeError(f"{text}: line size {line}: the emulator's lines "
                                             f"are {LINE_BYTES} B")
        if size < 1 or assoc < 1:
            raise argparse.ArgumentTypeError(f"{text}: size and associativity must be positive")
        return text, size, assoc
    return parse


def profile_spec(args):
    """What Machine takes as its profile: --profile, or with --two-level a dict of its raw
    data with the LLC as the second level."""
    if not args.two_level:
        return args.profile
    try:
        raw, files = load_raw(args.profile)
    except ProfileError as e:
        raise CliError(str(e)) from None
    caches = raw.get("cache", {})
    if "llc" not in caches or "l2" not in caches:
        raise CliError(f"--two-level: profile {args.profile!r} has no three levels to make two of")
    second = dict(caches["llc"])
    second["mshr_entries"] = caches["l2"]["mshr_entries"]   # the second level's own key
    raw["cache"] = {"l1d": caches["l1d"], "l2": second}
    raw["profile"]["name"] = f"{Path(files[-1]).stem}, two levels"
    return raw


def overrides(args):
    """The run's overrides: --set's, then the cache options', each sourced by its option;
    CliError if a key is set twice or an option does not apply."""
    out = dict(args.overrides)
    if args.cg_I1:
        raise CliError(f"--I1 {args.cg_I1[0]}: the emulator models the data side only (no "
                       f"instruction cache); leave --I1 out")
    if args.two_level and args.cg_L2:
        raise CliError("--L2 with --two-level: the two levels are D1 and LL")
    for opt, level in LEVELS.items():
        geo = getattr(args, f"cg_{opt}")
        if geo is None:
            continue
        if args.two_level and opt == "LL":
            level = "l2"
        text, size, assoc = geo
        source = f"command line --{opt} {text} (cachegrind's size,assoc,line_size)"
        for key, value in (("size_bytes", size), ("ways", assoc)):
            dotted = f"cache.{level}.{key}"
            if dotted in out:
                raise CliError(f"--{opt} {text} sets {dotted}, which --set sets too")
            out[dotted] = {"value": value, "source": source}
    return out
