"""`python -m emu.studies.validate --suggest-gaps|--markdown`: the maintainer's entry points
of docs/validation.md "After a change of the model"."""
import argparse
import sys

from emu.studies import validate


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m emu.studies.validate",
                                     description=validate.__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--suggest-gaps", action="store_true",
                      help="print KNOWN_GAPS for every row outside the band as it is now")
    what.add_argument("--markdown", action="store_true",
                      help="print docs/validation.md's rows and known gaps")
    what.add_argument("--loaded", action="store_true",
                      help="print docs/validation.md's predicted loaded latencies")
    parser.add_argument("--profile", action="append", choices=validate.profiles(), metavar="P",
                        help="only this profile's rows (repeatable)")
    args = parser.parse_args(argv)
    if args.loaded:
        from emu.studies.validate import loaded
        sys.stdout.write(loaded.markdown())
        return 0
    results = validate.run_rows(validate.select(args.profile))
    sys.stdout.write(validate.suggest_gaps(results) if args.suggest_gaps
                     else validate.markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
