"""Running the points of a sweep: run_point (what a worker runs) and the executors it runs
on: this process, a local process pool, or a Dask cluster."""
import ctypes
import numbers
import os
import re
import shlex
import signal
import sys

from emu.studies import api
from emu.studies.options import CliError, Interrupted
from emu.studies.progress import progress
from emu.studies.sweep.results import (
    _write_all,
    lock_results,
    open_results,
    point_csv,
    points_done,
)

CLUSTER_INSTALL = "pip install 'cacheline-emu[cluster]'"


# ---------------------------------------------------------------------------- one point
def _number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _plain(v):
    """A number as a Python int or float (numpy's scalars print otherwise)."""
    return int(v) if isinstance(v, numbers.Integral) else float(v)


def result_rows(mod, result):
    """[(variant, label, metric, value)] of a scenario result: every number of a variant,
    its METRIC among them, labelled VARIANT; where the METRIC is a map of rows (dmapool-test's
    time_us), its rows and those of every map with the same rows, labelled VARIANT ROW, as
    scenarios.metric_values labels them."""
    out = []
    for v, d in result["variants"].items():
        m = d[mod.METRIC]
        rows = list(m) if isinstance(m, dict) else None
        for k, x in d.items():
            if rows is None and _number(x):
                out.append((v, v, k, _plain(x)))
            elif rows is not None and isinstance(x, dict) and list(x) == rows \
                    and all(map(_number, x.values())):
                out += [(v, f"{v} {r}", k, _plain(x[r])) for r in rows]
    return out


def run_point(point_id, scenario, profile, overrides, values):
    """What a worker runs (a module-level function of plain arguments, for a process pool or
    a Dask worker): the scenario's run of `values` (its options by name) on `profile` with
    `overrides`; (point_id, [(variant, label, metric, value)], None), or (point_id, None,
    "Type: message") when it raised."""
    try:
        mod = api.scenario(scenario)
        return point_id, result_rows(mod, mod.run(api.options_for(
            mod, values, profile=profile, overrides=overrides))), None
    except Exception as e:  # noqa: BLE001   recorded as the point's error; the rest go on
        return point_id, None, f"{type(e).__name__}: {e}"


# ---------------------------------------------------------------------------- running
class _Serial:
    """The executor interface of the pool, run in this process (--workers 1)."""

    def submit(self, fn, *a):
        return fn(*a)

    def results(self, futures):
        yield from futures

    def close(self, now=False):
        pass


PR_SET_PDEATHSIG = 1   # linux/prctl.h


def _worker_init(parent_pid, lock_fd):
    """A pool worker's start: it dies with the parent (a SIGKILL of the sweep leaves no
    worker running), leaves Ctrl-C to the parent and does not hold the results file's lock."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.close(lock_fd)   # the lock is on the parent's open file: it stays the parent's
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:   # the parent died before the death signal was set
        os._exit(1)


class _Pool:
    """A local process pool forked from this process, after the core was warmed up here."""

    def __init__(self, workers, lock_fd):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        self.ex = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                      initializer=_worker_init, initargs=(os.getpid(), lock_fd))

    def submit(self, fn, *a):
        return self.ex.submit(fn, *a)

    def results(self, futures):
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool
        try:
            for f in as_completed(futures):
                yield f.result()
        except BrokenProcessPool as e:
            raise CliError(f"a worker process died ({e}); --resume runs the points not "
                           f"written") from None

    def close(self, now=False):
        if now:   # interrupted: the running points are not waited for
            for p in list((self.ex._processes or {}).values()):
                p.kill()
                p.join()
        self.ex.shutdown(cancel_futures=True)


class _Dask:
    def __init__(self, address):
        try:
            from dask.distributed import Client
        except ImportError:
            raise CliError(f"--scheduler needs dask.distributed: {CLUSTER_INSTALL}") from None
        try:
            self.client = Client(address, timeout=30)
        except Exception as e:  # noqa: BLE001   whatever dask raises: the address is bad
            raise CliError(f"--scheduler {address}: cannot connect: {type(e).__name__}: "
                           f"{e}") from None

    def submit(self, fn, *a):
        return self.client.submit(fn, *a, pure=False)

    def results(self, futures):
        from dask.distributed import as_completed
        self.futures = futures
        for f in as_completed(futures):
            try:
                yield f.result()
            except Exception as e:  # noqa: BLE001   the worker died, not the point: stop
                raise CliError(f"a Dask task failed ({type(e).__name__}: {e}); --resume "
                               f"runs the points not written") from None

    def close(self, now=False):
        if getattr(self, "futures", None):
            self.client.cancel(self.futures)
        self.client.close()


def check_scheduler(address):
    """CliError unless `address` is SCHEME://HOST:PORT or HOST:PORT (checked before the runs;
    whether it answers, dask finds out)."""
    m = re.fullmatch(r"(?:[A-Za-z][A-Za-z0-9+.-]*://)?(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]@]+):(\d{1,5})",
                     address)
    if not m or not 0 < int(m[2]) < 65536:
        raise CliError(f"--scheduler {address!r}: not an address (SCHEME://HOST:PORT or "
                       f"HOST:PORT, e.g. tcp://127.0.0.1:8786)")


def run_sweep(spec, out, resume=False, workers=None, scheduler=None, show=False, again=None):
    """Run the points of `spec` not already in `out`, appending each as it finishes, the
    results file locked throughout; {"points", "skipped", "ok", "errors", "duplicates"}.
    `again` is the command that continues the sweep, for the message of a Ctrl-C."""
    again = again or shlex.join(["emu", "sweep", spec.path, "--out", out, "--resume"])
    fd, created = lock_results(out)   # before the file is read: no second run in between
    try:
        done, twice = points_done(fd, out, spec, resume)
        if twice:
            print(f"emu: warning: {out}: {len(twice)} point{'s' * (len(twice) != 1)} written "
                  f"more than once (two runs at once, before the lock?); each is skipped: "
                  + ", ".join(f"{pid} {n} times" for pid, n in sorted(twice.items())[:10])
                  + (", ..." if len(twice) > 10 else ""), file=sys.stderr)
        todo = [p for p in spec.points if p.id not in done]
        counts = {"ok": 0, "errors": 0}
        try:
            _run(spec, out, todo, workers, scheduler, show, fd, counts)
        except KeyboardInterrupt:
            n = len(spec.points) - len(todo) + counts["ok"] + counts["errors"]
            raise Interrupted(f"interrupted: {n} of {len(spec.points)} points are in {out}; "
                           f"continue with: {again}") from None
    except BaseException:
        if created and os.fstat(fd).st_size == 0:   # nothing written: leave no file
            os.unlink(out)
        raise
    finally:
        os.close(fd)   # the lock ends here
    return {"points": len(spec.points), "skipped": len(spec.points) - len(todo),
            "ok": counts["ok"], "errors": counts["errors"], "duplicates": twice}


def _run(spec, out, todo, workers, scheduler, show, lock_fd, counts):
    """Run `todo` on the executor asked for, counting into `counts`."""
    by_id = {p.id: p for p in todo}
    # the executor first: a cluster that cannot be reached leaves no file behind
    if scheduler is not None:
        ex = _Dask(scheduler)
    elif (workers or os.cpu_count() or 1) <= 1 or len(todo) <= 1:
        ex = _Serial()
    else:
        from emu.machine import Machine
        Machine.warmup()   # compiled (or loaded) once here; the forked workers inherit it
        ex = _Pool(min(workers or os.cpu_count(), len(todo)), lock_fd)
    interrupted = False
    try:
        fd = open_results(out, spec)
        try:
            futures = [ex.submit(run_point, p.id, p.scenario, p.profile, p.settings, p.values)
                       for p in todo]
            with progress(total=len(todo), desc=f"sweep {os.path.basename(spec.path)}",
                          enabled=show, unit="point") as bar:
                for pid, rows, error in ex.results(futures):
                    _write_all(fd, point_csv(spec, by_id[pid], rows, error))
                    counts["errors" if error is not None else "ok"] += 1
                    bar.update(1)
        finally:
            os.close(fd)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        # a second Ctrl-C while the workers stop would print a traceback
        handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if interrupted else None
        try:
            ex.close(now=interrupted)
        finally:
            if interrupted:
                signal.signal(signal.SIGINT, handler)
