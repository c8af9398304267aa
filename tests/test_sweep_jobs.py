"""`emu sweep` as a job system: the grid's size counted before any value is checked, the
spec's bounded read, ranges counted as numbers, a key spelt twice, an exclusive lock on the
results file, duplicates reported by --resume, workers that die with the parent, Ctrl-C,
--workers' bound, --scheduler's address and a results file that is not UTF-8."""
import glob
import os
import signal
import subprocess
import sys
import time

import pytest

from emu.studies.sweep import spec as spec_mod
from tests.test_sweep import (  # noqa: F401   (calls: a fixture)
    FAKE,
    REAL,
    ROOT,
    calls,
    rows_of,
    sweep_cli,
    write,
)


def refused(capsys, spec, *argv):
    """The one line of error of `emu sweep spec`, checked to be one line, exit 2, no output."""
    code, out, err = sweep_cli(capsys, spec, *argv)
    assert (code, out) == (2, "") and err.startswith("emu: error: ") and err.count("\n") == 1, err
    return err


# ---------------------------------------------------------------------------- the spec
def test_a_huge_grid_is_refused_before_any_value_is_checked(capsys, calls, tmp_path):
    # 2 keys of 100000 and 99001 valid values: refused by counting, not after 199001 profile
    # loads (about 14 minutes)
    spec = write(tmp_path, '[sweep]\nscenario = "fake"\n[overrides]\n'
                           '"core.store_commit_cycles" = { from = 1, to = 100000, step = 1 }\n'
                           '"core.freq_ghz" = { from = 0.1, to = 10.0, step = 0.0001 }\n')
    t0 = time.monotonic()
    err = refused(capsys, spec, "--out", str(tmp_path / "r.csv"))
    assert time.monotonic() - t0 < 3.0
    assert f"{100000 * 99001} points, more than 100000" in err and calls == []


def test_each_override_value_is_loaded_once_not_once_per_point(calls, tmp_path, monkeypatch):
    loads = []
    real = spec_mod.load_profile
    monkeypatch.setattr(spec_mod, "load_profile", lambda *a: loads.append(a) or real(*a))
    spec_mod.load_spec(write(tmp_path, '[sweep]\nscenario = "fake"\n[overrides]\n'
                                       '"core.rob_entries" = [100, 200, 300]\n'
                                       '"core.freq_ghz" = [2.0, 3.0, 4.0]\n'))
    assert len(loads) == 1 + 3 + 3   # the profile, then each value of each key: not 3 x 3


@pytest.mark.parametrize("rng", [
    "{ from = 0, to = 1, step = 1e-320 }",       # (to - from) / step overflows to inf
    "{ from = -1e308, to = 1e308, step = 1 }",   # to - from overflows to inf
    "{ from = 0, to = 1e300, step = 1 }",         # finite, but far more than the maximum
    "{ from = 0, to = nan, step = 1 }",
    "{ from = -inf, to = 1, step = 1 }",
    "{ from = 0, to = 1, step = 0.0 }",
    "{ from = 1, to = 0, step = 0.5 }",
    "{ from = 0, to = 1, step = -0.5 }",
])
def test_a_float_range_is_counted_as_a_number_first(capsys, calls, tmp_path, rng):
    spec = write(tmp_path, f'[sweep]\nscenario = "fake"\n[overrides]\n"core.freq_ghz" = {rng}\n')
    err = refused(capsys, spec, "--out", str(tmp_path / "r.csv"))
    assert err.startswith(f"emu: error: {spec}: overrides.core.freq_ghz"), err
    assert calls == [] and not (tmp_path / "r.csv").exists()


def test_a_key_given_dotted_and_as_a_table_is_an_error_naming_both(capsys, calls, tmp_path):
    spec = write(tmp_path, '[sweep]\nscenario = "fake"\n[overrides]\n"core.freq_ghz" = [2.0]\n'
                           '[overrides.core]\nfreq_ghz = [3.0]\n')
    err = refused(capsys, spec, "--out", str(tmp_path / "r.csv"))
    assert 'overrides."core.freq_ghz" and overrides.core.freq_ghz are the same key' in err, err


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory", "too-big"])
def test_the_spec_must_be_a_small_regular_file(capsys, calls, tmp_path, kind):
    path = {"dev-zero": "/dev/zero", "fifo": str(tmp_path / "f.toml"),
            "directory": str(tmp_path), "too-big": str(tmp_path / "big.toml")}[kind]
    if kind == "fifo":
        os.mkfifo(path)   # nobody writes it: a read would wait for ever
    if kind == "too-big":
        write(tmp_path, '[sweep]\nscenario = "fake"\n' + "#" * (1 << 20) + "\n", "big.toml")
    err = refused(capsys, path, "--out", str(tmp_path / "r.csv"))
    assert err.startswith(f"emu: error: {path}: ") and (
        "more than the limit of 1048576" if kind == "too-big" else "not a regular file") in err, err


@pytest.mark.parametrize("text", [
    '[sweep]\nscenario = "fake"\n[overrides]\n"core.freq_ghz" = ' + "[" * 500 + "]" * 500 + "\n",
    '[sweep]\nscenario = "fake"\n[overrides]\nx = ' + "{a = " * 500 + "1" + "}" * 500 + "\n",
    '[sweep]\nscenario = "fake"\n[overrides.' + ".".join(["a"] * 5000) + "]\nb = [1]\n",
], ids=["array", "inline-table", "table-header"])
def test_a_deeply_nested_spec_is_a_clean_error(capsys, calls, tmp_path, text):
    spec = write(tmp_path, text)
    err = refused(capsys, spec, "--out", str(tmp_path / "r.csv"))
    assert err.startswith(f"emu: error: {spec}: ") and "internal error" not in err, err


# ---------------------------------------------------------------------------- the results file
def test_a_second_run_on_a_locked_results_file_says_who_holds_it(capsys, calls, tmp_path):
    spec = write(tmp_path, FAKE)
    out = tmp_path / "r.csv"
    out.write_bytes(b"")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(out)!r}, os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('locked', flush=True); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        for extra in ([], ["--resume"]):
            err = refused(capsys, spec, "--out", str(out), "--workers", "1", *extra)
            assert err == (f"emu: error: --out {out}: in use by another emu sweep "
                           f"(pid {holder.pid}): one run per results file\n")
        assert calls == [] and out.read_bytes() == b""
    finally:
        holder.kill()
        holder.wait()
    assert sweep_cli(capsys, spec, "--out", str(out), "--workers", "1", "--resume")[0] == 0


def test_resume_reports_points_written_twice_and_goes_on(capsys, calls, tmp_path):
    spec = write(tmp_path, FAKE)
    out = tmp_path / "r.csv"
    assert sweep_cli(capsys, spec, "--out", str(out), "--workers", "1")[0] == 0
    lines = out.read_bytes().splitlines(keepends=True)
    first, second = lines[1:5], lines[5:9]   # two points of 4 rows each
    ids = [r.split(b",")[0].decode() for r in (first[0], second[0])]
    # the first point again right after itself (two runs in step), the second at the end
    out.write_bytes(b"".join([lines[0], *first, *first, *lines[5:], *second]))
    code, text, err = sweep_cli(capsys, spec, "--out", str(out), "--resume")
    assert code == 0, err
    assert err.startswith(f"emu: warning: {out}: 2 points written more than once") and \
        all(f"{pid} 2 times" in err for pid in ids), err
    assert text.startswith("32 points: 0 run, 0 failed (status=error), 32 already in")
    assert f"warning: 2 points are in {out} more than once" in text


def test_resume_of_a_results_file_that_is_not_utf8(capsys, calls, tmp_path):
    spec = write(tmp_path, FAKE)
    out = tmp_path / "r.csv"
    assert sweep_cli(capsys, spec, "--out", str(out), "--workers", "1")[0] == 0
    data = out.read_bytes()
    out.write_bytes(data[:-40] + b"\xff\xfe" + data[-38:])
    err = refused(capsys, spec, "--out", str(out), "--resume")
    assert err == f"emu: error: {out}: line 129 is not UTF-8 text: not a results file of emu sweep\n"
    assert out.read_bytes() == data[:-40] + b"\xff\xfe" + data[-38:]


def test_the_results_file_must_be_a_regular_file(capsys, calls, tmp_path):
    spec = write(tmp_path, FAKE)
    fifo = tmp_path / "r.csv"
    os.mkfifo(fifo)   # nobody reads it: opening it to write would wait for ever
    err = refused(capsys, spec, "--out", str(fifo), "--resume")
    assert err.startswith(f"emu: error: --out {fifo}: a FIFO, not a regular file") and calls == []


# ---------------------------------------------------------------------------- the options
def test_workers_above_the_cpus_need_oversubscribe(capsys, calls, tmp_path):
    spec = write(tmp_path, '[sweep]\nscenario = "fake"\n[options]\nk = [1, 2]\n')
    out = tmp_path / "r.csv"
    n = (os.cpu_count() or 1) + 1
    err = refused(capsys, spec, "--out", str(out), "--workers", str(n))
    assert err == (f"emu: error: --workers {n}: more than the {n - 1} CPUs of this machine "
                   f"(--oversubscribe allows it)\n") and not out.exists()
    code, _, err = sweep_cli(capsys, spec, "--out", str(out), "--workers", str(n), "--oversubscribe")
    assert code == 0, err


@pytest.mark.parametrize("address", ["tcp://", "localhost", "tcp://host:port", "host:99999",
                                     "tcp://host:8786/x", "tcp://user@host:8786", ":8786"])
def test_a_malformed_scheduler_address_is_refused_before_running(capsys, calls, tmp_path, address):
    spec = write(tmp_path, '[sweep]\nscenario = "fake"\n')
    err = refused(capsys, spec, "--out", str(tmp_path / "r.csv"), "--scheduler", address)
    assert err.startswith(f"emu: error: --scheduler {address!r}: not an address"), err
    assert calls == [] and not (tmp_path / "r.csv").exists()


def test_what_dask_raises_on_connect_is_one_line(capsys, calls, tmp_path):
    pytest.importorskip("dask.distributed")
    spec = write(tmp_path, '[sweep]\nscenario = "fake"\n')
    err = refused(capsys, spec, "--out", str(tmp_path / "r.csv"), "--scheduler", "foo://127.0.0.1:1")
    assert err.startswith("emu: error: --scheduler foo://127.0.0.1:1: cannot connect: ValueError: "
                          "unknown address scheme 'foo'"), err
    assert calls == [] and not (tmp_path / "r.csv").exists()


# ---------------------------------------------------------------------------- the processes
def _children(pid):
    """The pids of the children of process `pid`."""
    out = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        with open(task) as f:
            out += [int(c) for c in f.read().split()]
    return out


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"   # a zombie is dead
    except FileNotFoundError:
        return False


def _sweep_running(tmp_path):
    """A `emu sweep` subprocess with 2 workers, once its results file has a point, and
    its worker pids. Its Ctrl-C is the default's: a shell starts a background job (a suite
    run with `&`) with SIGINT ignored, which the child would inherit, and Python then
    installs no KeyboardInterrupt for it."""
    spec = write(tmp_path, REAL.format(ios=50, values="{ from = 100, to = 3000, step = 100 }"))
    out = tmp_path / "r.csv"
    proc = subprocess.Popen([sys.executable, "-m", "emu.studies.cli", "sweep", spec, "--out",
                             str(out), "--workers", "2", "--quiet"],
                            env=dict(os.environ, PYTHONPATH=ROOT), start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and len(out.read_bytes().splitlines()) > 1:
            break
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()
    workers = _children(proc.pid)
    assert len(workers) == 2
    return proc, spec, out, workers


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the death signal is Linux's")
def test_the_workers_die_with_the_parent(tmp_path):
    proc, _, _, workers = _sweep_running(tmp_path)
    try:
        os.kill(proc.pid, signal.SIGKILL)   # the parent alone
        proc.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(map(_alive, workers)):
            time.sleep(0.05)
        assert not any(map(_alive, workers))
    finally:
        for w in filter(_alive, workers):
            os.kill(w, signal.SIGKILL)


def test_ctrl_c_stops_with_one_line_saying_how_to_resume(tmp_path):
    proc, spec, out, workers = _sweep_running(tmp_path)
    try:
        os.killpg(proc.pid, signal.SIGINT)   # as a terminal's Ctrl-C: the workers get it too
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        for w in filter(_alive, [proc.pid, *workers]):
            os.kill(w, signal.SIGKILL)
    points = {r["point_id"] for r in rows_of(out)}
    assert (proc.returncode, stdout) == (130, "")
    assert stderr == (f"emu: error: interrupted: {len(points)} of 30 points are in {out}; continue "
                      f"with: emu sweep {spec} --out {out} --workers 2 --quiet --resume\n")
    assert not any(map(_alive, workers))
