"""A progress bar on stderr for runs long enough to wonder about: the one place that decides
whether to show one.

A bar is shown only when it helps a person watching: not with --json or --quiet (output for
programs, or a wish for silence), not when stderr is no terminal (pipes, logs, tests), and
only with tqdm installed (the optional extra `progress`; the core does not need it). It
appears after DELAY_S seconds, so short runs never show one, and it is removed when done:
the results on stdout are the lasting output, and a bar never changes them.

A bar over items (a study's variants, profiles, keys) moves within an item too: a thread
redraws it every TICK_S, advanced by the item's elapsed time over the mean time of the
items before it (short of the item's end), so a long item shows progress and a first or
only one its elapsed time. The thread touches nothing but the bar.
"""
import sys
import threading
import time

DELAY_S = 2.0   # tqdm's `delay`: a run this short finishes before a bar is worth drawing
TICK_S = 0.5    # how often a bar over items is redrawn within an item
AHEAD = 0.95    # the most of an item an estimate moves the bar ahead of its end


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
    """`iterable` itself without a bar (`enabled` false), else a tqdm bar over its items on
    stderr, moving within an item (the module docstring), closed when the iteration ends;
    with no iterable, an object whose update(n) moves the bar by n of `total` (a no-op
    without a bar): use it as a context manager so the bar is closed on an error too."""
    if not enabled:
        return _Silent(iterable)
    from tqdm import tqdm
    if iterable is not None:
        return _Ticking(iterable, desc, total)
    return tqdm(iterable, desc=desc, total=total, unit=unit, delay=DELAY_S, leave=False,
                file=sys.stderr, unit_scale=unit == "B")


class _Ticking:
    """A tqdm bar over `iterable`'s items, moved within an item by time (the module
    docstring); closed when the iteration ends, however it ends."""

    def __init__(self, iterable, desc, total):
        from tqdm import tqdm
        self.iterable = iterable
        if total is None and hasattr(iterable, "__len__"):
            total = len(iterable)
        # miniters=0: every update may redraw (tqdm's own delay and mininterval still apply)
        self.bar = tqdm(desc=desc, total=total, delay=DELAY_S, leave=False, file=sys.stderr,
                        miniters=0, bar_format="{l_bar}{bar}| {n:.1f}/{total_fmt} "
                                               "[{elapsed}<{remaining}]")
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.index, self.start, self.spent = 0, time.perf_counter(), []

    def _moved_to(self, n):
        with self.lock:
            self.bar.update(n - self.bar.n)

    def _tick(self):
        while not self.done.wait(TICK_S):
            ahead = 0.0
            if self.spent:
                mean = sum(self.spent) / len(self.spent)
                ahead = min((time.perf_counter() - self.start) / mean, AHEAD) if mean else AHEAD
            self._moved_to(self.index + ahead)   # without an estimate: redrawn, elapsed moves

    def __iter__(self):
        ticker = threading.Thread(target=self._tick, daemon=True)
        ticker.start()
        try:
            for i, item in enumerate(self.iterable):
                self.index, self.start = i, time.perf_counter()
                yield item
                self.spent.append(time.perf_counter() - self.start)
                self._moved_to(i + 1)
        finally:
            self.done.set()
            ticker.join()
            self.bar.close()


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
