"""Every file the tool parses is read with a bound (issue 34, section 3): profiles (and the
files `inherit` reaches) and --media tables must be regular files of at most
MAX_TOML_BYTES, nested at most MAX_TOML_DEPTH deep; traces must be regular files; a
.npy scalar and over-deep override keys are refused. Each bad input is one `emu: error:`
line, exit status 2, nothing on stdout, no file created or changed. The CLI runs in a
subprocess with a timeout and an address-space cap, so that a regression (a FIFO that
blocks, /dev/zero read whole) fails instead of hanging or eating the machine."""
import os
import resource
import subprocess
import sys

import numpy as np
import pytest

from emu import Machine
from isa.program import ProgramError
from isa.traces import read_trace
from memmodel.profile import MAX_TOML_BYTES, MAX_TOML_DEPTH, ProfileError, load_profile
from tests.test_outputs import snapshot   # paths, types, link targets and bytes

MEM_CAP_BYTES = 4 << 30   # numba and llvmlite need ~1-2 GiB of address space to import
TIMEOUT_S = 180           # a blocked open fails here (a cold core compile fits well inside)
DEEP = 500                # levels: past Python's recursion limit in tomllib and deepcopy
COMPARE = ["compare", "dax-write-usercopy", "--ios", "20", "--profiles", "cascadelake-optane"]
RUN = ["run", "dax-write-usercopy", "--ios", "20"]


def _files(d):
    """A tmp dir's bad inputs: FIFOs (no writer), deep, odd and oversized files."""
    os.mkfifo(d / "fifo")
    os.mkfifo(d / "fifo.toml")
    (d / "dir.toml").mkdir()
    (d / "bad-utf8.toml").write_bytes(b"[media.x]\nname = \"\xff\xfe\"\n")
    (d / "not-a-table.toml").write_text("media = 3\n")
    (d / "deep-inline.toml").write_text(
        "[media.x]\na = " + "{b = " * DEEP + "1" + "}" * DEEP + "\n")
    (d / "deep-header.toml").write_text(
        '[profile]\ninherit = "skylake-ddr4"\ndescription = "x"\n['
        + ".".join(["a"] * DEEP) + "]\nx = 1\n")
    (d / "big.toml").write_text("# " + "x" * MAX_TOML_BYTES + "\n")
    (d / "sub").mkdir()
    (d / "sub" / "deep.toml").write_text((d / "deep-inline.toml").read_text())
    (d / "inherits-deep.toml").write_text(
        '[profile]\ninherit = "sub/deep.toml"\ndescription = "x"\n')
    (d / "inherits-fifo.toml").write_text(
        '[profile]\ninherit = "fifo.toml"\ndescription = "x"\n')
    np.save(d / "scalar.npy", np.array(5))


# (argv with {d} for the tmp dir, a phrase of the expected message)
CLI_CASES = {
    "media /dev/zero": (COMPARE + ["--media", "pmem0=/dev/zero"], "not a regular file"),
    "media FIFO": (COMPARE + ["--media", "pmem0={d}/fifo.toml"], "not a regular file"),
    "media directory": (COMPARE + ["--media", "pmem0={d}/dir.toml"], "not a regular file"),
    "media invalid UTF-8": (COMPARE + ["--media", "pmem0={d}/bad-utf8.toml"], "not valid TOML"),
    "media not a table": (COMPARE + ["--media", "pmem0={d}/not-a-table.toml"],
                          "one [media.NAME] table"),
    "media deep table": (COMPARE + ["--media", "pmem0={d}/deep-inline.toml"], "nested too deeply"),
    "media too big": (COMPARE + ["--media", "pmem0={d}/big.toml"], "more than the limit"),
    "profile /dev/zero": (RUN + ["--profile", "/dev/zero"], "not a regular file"),
    "profile FIFO": (RUN + ["--profile", "{d}/fifo.toml"], "not a regular file"),
    "profile deep table": (RUN + ["--profile", "{d}/deep-inline.toml"], "nested too deeply"),
    "profile deep header": (RUN + ["--profile", "{d}/deep-header.toml"],
                            f"nested more than {MAX_TOML_DEPTH} deep"),
    "profile too big": (RUN + ["--profile", "{d}/big.toml"], "more than the limit"),
    "inherited deep": (RUN + ["--profile", "{d}/inherits-deep.toml"], "nested too deeply"),
    "inherited FIFO": (RUN + ["--profile", "{d}/inherits-fifo.toml"], "not a regular file"),
    "set 2000-level key": (RUN + ["--set", ".".join(["a"] * 2000) + "=1"], "2000 parts"),
    "trace /dev/zero": (["trace", "/dev/zero"], "not a regular file"),
    "trace /dev/zero din": (["trace", "/dev/zero", "--format", "din"], "not a regular file"),
    "trace /dev/zero npy": (["trace", "/dev/zero", "--format", "npy"], "not a regular file"),
    "trace FIFO": (["trace", "{d}/fifo"], "not a regular file"),
    "trace FIFO din": (["trace", "{d}/fifo", "--format", "din"], "not a regular file"),
    "trace FIFO npy": (["trace", "{d}/fifo", "--format", "npy"], "not a regular file"),
    "trace directory": (["trace", "{d}/dir.toml", "--format", "din"], "not a regular file"),
    "trace 0-d npy": (["trace", "{d}/scalar.npy"], "0-dimensional"),
}


def _cap():
    resource.setrlimit(resource.RLIMIT_AS, (MEM_CAP_BYTES, MEM_CAP_BYTES))


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_a_bad_input_is_one_error_line(tmp_path, case):
    _files(tmp_path)
    argv, phrase = CLI_CASES[case]
    argv = [a.replace("{d}", str(tmp_path)) for a in argv]
    before = snapshot(tmp_path)
    p = subprocess.run([sys.executable, "-m", "emu.studies.cli", *argv, "--plot",
                        str(tmp_path / "plots")] if argv[0] == "compare" else
                       [sys.executable, "-m", "emu.studies.cli", *argv],
                       capture_output=True, text=True, timeout=TIMEOUT_S, preexec_fn=_cap,
                       cwd=tmp_path)
    assert (p.returncode, p.stdout) == (2, ""), p.stderr[-2000:]
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("emu: error: "), p.stderr[-2000:]
    assert phrase in lines[0] and "internal error" not in lines[0], lines[0]
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- from Python
def test_a_deep_override_key_is_a_profile_error():
    key = ".".join(["a"] * 2000)
    for spec in ({key: 1}, {"cache." + key: 1}):
        with pytest.raises(ProfileError, match="2000 parts|2001 parts"):
            Machine("skylake-ddr4", spec)


def test_a_deep_dict_profile_is_a_profile_error():
    spec = {"profile": {"inherit": "skylake-ddr4", "description": "x"}, "media": {}}
    node = spec["media"]
    for _ in range(2000):   # past the recursion limit of copy.deepcopy
        node["a"] = {}
        node = node["a"]
    with pytest.raises(ProfileError, match="nested more than"):
        load_profile(spec)


def test_a_file_at_the_size_limit_is_read(tmp_path):
    """The limit is MAX_TOML_BYTES exactly: a shipped profile padded to it loads."""
    base = load_profile("skylake-ddr4").files[-1]
    text = open(base).read()
    f = tmp_path / "padded.toml"
    f.write_text(text + "#" * (MAX_TOML_BYTES - len(text.encode()) - 1) + "\n")
    assert os.path.getsize(f) == MAX_TOML_BYTES
    assert load_profile(str(f)).values == load_profile("skylake-ddr4").values


def test_a_scalar_npy_is_a_trace_error(tmp_path):
    np.save(tmp_path / "s.npy", np.array([(0, 64)], dtype=[("kind", "i8"), ("addr", "i8")])[0])
    with pytest.raises(ProgramError, match="0-dimensional"):
        read_trace(tmp_path / "s.npy")
