"""A progress bar on stderr for runs long enough to wonder about: the one place that decides
whether to show one.

A bar is shown only when it helps a person watching: not with --json or --quiet (output for
programs, or a wish for silence), not when stderr is no terminal (pipes, logs, tests), and
only with tqdm installed (the optional extra `progress`; the core does not need it). It
appears after DELAY_S seconds, so short runs never show one, and it is removed when done:
the results on stdout are the lasting output, and a bar never changes them.
"""
import sys

DELAY_S = 2.0   # tqdm's `delay`: a run this short finishes before a bar is worth drawing


def wanted(args):
    """Whether the command of `args` may show a bar: not --json, not --quiet, stderr a
    terminal and tqdm importable (imported only here, lazily)."""
    if getattr(args, "json", False) or getattr(args, "quiet", False) or not sys.stderr.isatty():
        return False
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


def progress(iterable=None, desc="", enabled=False, total=None, unit="it"):
    """`iterable` itself without a bar (`enabled` false), else a tqdm bar over it on stderr;
    with no iterable, an object whose update(n) moves the bar by n of `total` (a no-op
    without a bar). Use it as a context manager so the bar is closed on an error too."""
    if not enabled:
        return _Silent(iterable)
    from tqdm import tqdm
    return tqdm(iterable, desc=desc, total=total, unit=unit, delay=DELAY_S, leave=False,
                file=sys.stderr, unit_scale=unit == "B")


class _Silent:
    """What progress() gives without a bar: iterates like the iterable, updates nothing."""

    def __init__(self, iterable):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def update(self, n=1):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
