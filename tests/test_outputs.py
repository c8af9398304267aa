"""The files the commands write (issue 34 section 1): --cachegrind, --plot's, sweep's --out
and its Parquet copy are written only onto a regular file or a new name. A symbolic link, a
FIFO, a socket or a directory at an output path is refused before the run with one
`emu: error:` line, and is still there, unchanged, afterwards. No test points at a real device
node: a regression would destroy it (the check treats devices as it treats FIFOs)."""
import os
import signal
import socket
import stat
import types

import pytest

from emu.studies import cachegrind, outfiles, profile_cmd, scenarios, sweep
from emu.studies.cli import main
from emu.studies.options import CliError

BAD_KINDS = ("fifo", "symlink", "dangling symlink", "directory", "socket")


def make(path, kind):
    """Make a `kind` of BAD_KINDS at `path` (in tmp_path)."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        target = path.parent / f"{path.name}.target"
        target.write_text("the link's target")
        os.symlink(target, path)
    elif kind == "dangling symlink":
        os.symlink(path.parent / "nowhere", path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()   # the socket file stays


def snapshot(root):
    """Every path under `root` with its file type, a link's target and a file's bytes."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            st = os.lstat(p)
            what = (os.readlink(p) if stat.S_ISLNK(st.st_mode)
                    else open(p, "rb").read() if stat.S_ISREG(st.st_mode) else None)
            out[p] = (stat.S_IFMT(st.st_mode), st.st_ino, what)
    return out


class Hung(BaseException):
    """Raised by SIGALRM: a BaseException, so that main() does not report it as an error."""


@pytest.fixture(autouse=True)
def no_hang():
    """Opening a FIFO nobody reads blocks: a regression must fail the test, not hang it."""
    def hung(signum, frame):
        raise Hung("blocked (opening a FIFO?)")
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


# ---------------------------------------------------------------------------- fakes: no runs
@pytest.fixture
def ran(monkeypatch):
    """The runs that happened (none must): a fake scenario for compare and sweep, and the
    trace replay of `profile --trace`."""
    runs = []

    def run(args):
        runs.append(args)
        return {"variants": {"a": {"t": 1.0}}}
    fake = types.SimpleNamespace(NAME="fake", METRIC="t", DEFAULT_PROFILE="skylake-ddr4",
                                 VARIANTS=("a",), SENSITIVE=(), __doc__="fake\n", run=run,
                                 OPTIONS=(), table=lambda r: "")
    monkeypatch.setattr(scenarios, "registry", lambda: {"fake": fake})
    monkeypatch.setattr(profile_cmd.trace_cmd, "cmd_trace", run)
    return runs


SPEC = '[sweep]\nscenario = "fake"\nprofiles = ["skylake-ddr4"]\n'


def argv_for(tmp_path, where, bad):
    """The command line that writes its output at `bad` (a path in tmp_path)."""
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    trace = ["profile", "--trace", str(tmp_path / "t.din")]
    return {
        "profile --cachegrind": [*trace, "--cachegrind", str(bad)],
        "profile --plot": [*trace, "--plot", str(bad)],
        "profile --plot DIR/profile-cycles.png": [*trace, "--plot", str(tmp_path)],
        "compare --plot DIR/compare-fake.svg": ["compare", "fake", "--profiles", "skylake-ddr4",
                                                "--plot", str(tmp_path)],
        "validate --plot DIR/validate-skylake-ddr4.png": [
            "validate", "--only", "l1d-latency", "--profile", "skylake-ddr4", "--plot",
            str(tmp_path)],
        "sweep --out": ["sweep", str(spec), "--out", str(bad), "--quiet"],
        "sweep --out's Parquet copy": ["sweep", str(spec), "--out", str(tmp_path / "r.csv"),
                                       "--quiet"],
        "sweep --plot DIR/sweep-fake-t-k.png": ["sweep", str(spec), "--plot", str(tmp_path),
                                                "--quiet"],
    }[where]


# (where, the bad path's name in tmp_path, the kinds refused there)
WHERES = [
    ("profile --cachegrind", "cg.out", BAD_KINDS),
    ("profile --plot", "plots", ("fifo", "socket", "symlink", "dangling symlink")),
    ("profile --plot DIR/profile-cycles.png", "profile-cycles.png", BAD_KINDS),
    ("compare --plot DIR/compare-fake.svg", "compare-fake.svg", BAD_KINDS),
    ("validate --plot DIR/validate-skylake-ddr4.png", "validate-skylake-ddr4.png", BAD_KINDS),
    ("sweep --out", "r.csv", BAD_KINDS),
    ("sweep --out's Parquet copy", "r.parquet", BAD_KINDS),
    ("sweep --plot DIR/sweep-fake-t-k.png", "sweep-fake-t-k.png", BAD_KINDS),
]
CASES = [(w, name, kind) for w, name, kinds in WHERES for kind in kinds]


@pytest.mark.parametrize("where, name, kind", CASES, ids=[f"{w}: {k}" for w, _, k in CASES])
def test_an_output_path_that_is_no_regular_file_is_refused_before_the_run(
        capsys, ran, tmp_path, where, name, kind):
    pytest.importorskip("matplotlib")
    pytest.importorskip("pyarrow")   # the Parquet copy is checked only when one will be written
    bad = tmp_path / name
    make(bad, kind)
    argv = argv_for(tmp_path, where, bad)
    before = snapshot(tmp_path)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and ran == []
    assert err.startswith("emu: error: ") and err.count("\n") == 1 and str(bad) in err, err
    assert snapshot(tmp_path) == before   # the FIFO still a FIFO, the link the same link, ...


@pytest.mark.parametrize("argv", [
    ["profile", "--trace", "t.din", "--cachegrind", ""],
    ["profile", "--trace", "t.din", "--plot", ""],
    ["compare", "fake", "--profiles", "skylake-ddr4", "--plot", ""],
    ["validate", "--only", "l1d-latency", "--plot", ""],
    ["sweep", "SPEC", "--out", "", "--quiet"],
    ["sweep", "SPEC", "--plot", "", "--quiet"],
], ids=lambda a: " ".join(a))
def test_an_empty_output_path_is_an_error(capsys, ran, tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "SPEC").write_text(SPEC)
    before = snapshot(tmp_path)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    option = argv[argv.index("") - 1]
    assert out == "" and ran == [] and err == f"emu: error: {option}: an empty path\n"
    assert snapshot(tmp_path) == before


def test_sweep_out_naming_its_own_parquet_copy_is_an_error(capsys, ran, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    out = tmp_path / "R.parquet"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 2
    text, err = capsys.readouterr()
    assert text == "" and ran == [] and err.count("\n") == 1
    assert err.startswith(f"emu: error: --out {out}: --out names the results CSV") and \
        f"written beside it as {out}" in err and f"--out {tmp_path / 'R'}.csv" in err, err
    assert os.listdir(tmp_path) == ["spec.toml"]


# ---------------------------------------------------------------------------- the writers
def test_a_target_that_became_a_link_during_the_run_is_not_replaced(tmp_path):
    target, other = tmp_path / "cg.out", tmp_path / "other"
    other.write_text("kept")
    with pytest.raises(CliError, match="a symbolic link"):
        with outfiles.replacing("--cachegrind") as stage:
            with open(stage(str(target)), "w") as f:
                f.write("profile")
            os.symlink(other, target)   # between the check before the run and the rename
    assert os.readlink(target) == str(other) and other.read_text() == "kept"
    assert sorted(os.listdir(tmp_path)) == ["cg.out", "other"]   # no temporary file left


def test_the_cachegrind_file_gets_the_umask_mode_and_replaces_a_regular_file(tmp_path):
    path = tmp_path / "cg.out"
    path.write_text("old")
    old = os.umask(0o027)
    try:
        cachegrind.write(str(path), types.SimpleNamespace(sites={}), "d", "c")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640   # 0o666 & ~0o027; mkstemp's was 0o600
    assert path.read_text().startswith("desc: d\ncmd: c\n")
    assert os.listdir(tmp_path) == ["cg.out"]


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_the_results_file_is_opened_only_if_regular(tmp_path, kind):
    """open_results, past cmd()'s check (a FIFO made during the run): refused, without
    blocking on a FIFO nobody reads or writing through a link."""
    bad = tmp_path / "r.csv"
    make(bad, kind)
    before = snapshot(tmp_path)
    with pytest.raises(CliError, match=f"--out {bad}: a "):
        sweep.open_results(str(bad), types.SimpleNamespace(header_line="point_id"))
    assert snapshot(tmp_path) == before


def test_ctrl_c_is_one_line_and_the_sigint_status(capsys, monkeypatch):
    """A KeyboardInterrupt anywhere in a command (here the fake's run) is one line, exit 130:
    the outputs are written whole or not at all, so there is nothing to clean up."""
    def interrupted(args):
        raise KeyboardInterrupt
    fake = types.SimpleNamespace(NAME="fake", METRIC="t", DEFAULT_PROFILE="skylake-ddr4",
                                 VARIANTS=("a",), SENSITIVE=(), __doc__="fake\n", run=interrupted,
                                 OPTIONS=(), table=lambda r: "")
    monkeypatch.setattr(scenarios, "registry", lambda: {"fake": fake})
    assert main(["run", "fake"]) == 130
    out, err = capsys.readouterr()
    assert (out, err) == ("", "emu: error: interrupted\n")
