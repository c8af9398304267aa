"""`emu sweep` as a job system: the grid's size counted before any value is checked, the
spec's bounded read, ranges counted as numbers, a key spelt twice, an exclusive lock on the
results file, duplicates reported by --resume, workers that die with the parent, Ctrl-C,
--workers' bound, --scheduler's address and a results file that is not UTF-8."""
import os
import time

import pytest

from emu.studies.sweep import spec as spec_mod
from tests.test_sweep import FAKE, calls, rows_of, sweep_cli, write  # noqa: F401   (calls: a fixture)


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
        "more than 1048576 bytes" if kind == "too-big" else "not a regular file") in err, err


@pytest.mark.parametrize("text", [
    '[sweep]\nscenario = "fake"\n[overrides]\n"core.freq_ghz" = ' + "[" * 500 + "]" * 500 + "\n",
    '[sweep]\nscenario = "fake"\n[overrides]\nx = ' + "{a = " * 500 + "1" + "}" * 500 + "\n",
    '[sweep]\nscenario = "fake"\n[overrides.' + ".".join(["a"] * 5000) + "]\nb = [1]\n",
], ids=["array", "inline-table", "table-header"])
def test_a_deeply_nested_spec_is_a_clean_error(capsys, calls, tmp_path, text):
    spec = write(tmp_path, text)
    err = refused(capsys, spec, "--out", str(tmp_path / "r.csv"))
    assert err.startswith(f"emu: error: {spec}: ") and "internal error" not in err, err
