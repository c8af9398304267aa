"""`emu compare`: a scenario's metric on several profiles, ratios, --media swaps, errors."""
import json
import types

import pytest

from emu.studies import scenarios
from emu.studies.cli import main
from emu.studies.options import Option
from memmodel.profile import load_profile

SMALL = ["dax-write-usercopy", "--ios", "20"]
PROFILES = ["cascadelake-optane", "haswell-nvdimm-n"]


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def iops_of_run(capsys, profile, *sets):
    res = run_json(capsys, "run", *SMALL, "--profile", profile,
                   *[a for k, v in sets for a in ("--set", f"{k}={v!r}")])
    return {v: d["iops"] for v, d in res["variants"].items()}


def dram_timings_on_optane(profile="cascadelake-optane"):
    """The overrides --media pmem0=dram stands for, spelt out: every number of media.dram
    that media.optane (pmem0's media) also has."""
    media = load_profile(profile).values["media"]
    return [(f"media.optane.{k}", v) for k, v in media["dram"].items()
            if k in media["optane"] and isinstance(v, (int, float)) and not isinstance(v, bool)]


def test_values_and_ratios_equal_separate_runs(capsys):
    res = run_json(capsys, "compare", *SMALL, "--profiles", ",".join(PROFILES))
    assert res["scenario"] == "dax-write-usercopy" and res["metric"] == "iops"
    assert res["profiles"] == PROFILES
    runs = {p: iops_of_run(capsys, p) for p in PROFILES}
    assert list(res["variants"]) == list(runs[PROFILES[0]])
    for variant, row in res["variants"].items():
        assert row == {p: runs[p][variant] for p in PROFILES}
        assert res["ratios"][variant] == {p: runs[p][variant] / runs[PROFILES[0]][variant]
                                          for p in PROFILES}
    # the profiles differ, so a ratio of 1 everywhere would be a compare that ran one profile twice
    assert any(r[PROFILES[1]] != 1.0 for r in res["ratios"].values())

    code, out, err = run_cli(capsys, "compare", *SMALL, "--profiles", ",".join(PROFILES))
    assert code == 0, err
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines()[3:]}
    for variant, row in res["variants"].items():
        ratio = res["ratios"][variant][PROFILES[1]]
        assert lines[variant] == [f"{row[PROFILES[0]]:.6g}", f"{row[PROFILES[1]]:.6g}", f"{ratio:.6g}"]


def test_media_swap_is_the_explicit_overrides(capsys):
    plain = iops_of_run(capsys, "cascadelake-optane")
    res = run_json(capsys, "compare", *SMALL, "--profiles", "cascadelake-optane",
                   "--media", "pmem0=dram")
    swapped = {v: row["cascadelake-optane"] for v, row in res["variants"].items()}
    assert res["overrides"]["cascadelake-optane"] == dict(dram_timings_on_optane())
    assert swapped == iops_of_run(capsys, "cascadelake-optane", *dram_timings_on_optane())
    assert res["profile_sources"]["cascadelake-optane"]["media.optane.read_latency_ns"].startswith(
        "assumption: override")
    # memmap=pmem reads a struct page from pmem per I/O: on DRAM timings that read is faster
    assert swapped["memmap=pmem"] > plain["memmap=pmem"]


def test_media_swap_from_a_file(capsys, tmp_path):
    f = tmp_path / "slow.toml"
    f.write_text('[media.slow]\nkind = "optane"\n'
                 'read_latency_ns = { value = 900.0, source = "a test" }\nchannels = 2\n')
    res = run_json(capsys, "compare", *SMALL, "--profiles", "cascadelake-optane", "--media", f"pmem0={f}")
    sets = [("media.optane.read_latency_ns", 900.0), ("media.optane.channels", 2)]
    assert res["overrides"]["cascadelake-optane"] == dict(sets)
    assert ({v: row["cascadelake-optane"] for v, row in res["variants"].items()}
            == iops_of_run(capsys, "cascadelake-optane", *sets))


def _fake_scenario():
    """A scenario whose metric is a map of rows, values read from the profile."""
    def run(args):
        core = load_profile(args.profile, dict(args.overrides) or None).values["core"]
        return {"variants": {"a": {"t": {"rob": core["rob_entries"] * args.k,
                                         "freq": core["freq_ghz"]}}}}
    return types.SimpleNamespace(
        NAME="fake", METRIC="t", DEFAULT_PROFILE="skylake-ddr4", VARIANTS=("a",),
        __doc__="fake\n", run=run,
        OPTIONS=(Option("k", int, 1, "k"),))


def test_set_overrides_every_profile_as_run_set_does(capsys):
    sets = [("media.optane.read_latency_ns", 900.0)]
    res = run_json(capsys, "compare", *SMALL, "--profiles", "cascadelake-optane",
                   "--set", "media.optane.read_latency_ns=900.0")
    assert res["overrides"] == {"cascadelake-optane": dict(sets)}
    assert ({v: row["cascadelake-optane"] for v, row in res["variants"].items()}
            == iops_of_run(capsys, "cascadelake-optane", *sets))


def test_set_comes_before_media_swaps_and_a_key_of_both_is_refused(capsys, monkeypatch):
    monkeypatch.setattr(scenarios, "registry", lambda: {"fake": _fake_scenario()})
    # the swap takes the DRAM timings as --set leaves them
    res = run_json(capsys, "compare", "fake", "--profiles", "cascadelake-optane",
                   "--set", "media.dram.read_latency_ns=50", "--media", "pmem0=dram")
    want = {"media.dram.read_latency_ns": 50, **dict(dram_timings_on_optane())}
    want["media.optane.read_latency_ns"] = 50
    assert res["overrides"]["cascadelake-optane"] == want
    code, out, err = run_cli(capsys, "compare", "fake", "--profiles", "cascadelake-optane",
                             "--set", "media.optane.read_latency_ns=50", "--media", "pmem0=dram")
    assert (code, out) == (2, "")
    assert err == ("emu: error: --set media.optane.read_latency_ns: also set by --media "
                   "pmem0=dram\n")


def test_set_reaches_the_scenario_on_each_profile(capsys, monkeypatch):
    monkeypatch.setattr(scenarios, "registry", lambda: {"fake": _fake_scenario()})
    res = run_json(capsys, "compare", "fake", "--k", "2", "--set", "core.rob_entries=100",
                   "--profiles", "skylake-ddr4,broadwell-ddr4")
    assert res["variants"]["a / rob"] == {"skylake-ddr4": 200, "broadwell-ddr4": 200}
    code, out, err = run_cli(capsys, "compare", "fake", "--set", "core.rob_entries=-1",
                             "--profiles", "skylake-ddr4")
    assert (code, out) == (2, "") and "core.rob_entries" in err, err


def test_rows_are_flattened(capsys, monkeypatch):
    monkeypatch.setattr(scenarios, "registry", lambda: {"fake": _fake_scenario()})
    res = run_json(capsys, "compare", "fake", "--k", "3", "--profiles", "skylake-ddr4,broadwell-ddr4")
    core = {p: load_profile(p).values["core"] for p in ("skylake-ddr4", "broadwell-ddr4")}
    assert res["variants"] == {"a / rob": {p: c["rob_entries"] * 3 for p, c in core.items()},
                               "a / freq": {p: c["freq_ghz"] for p, c in core.items()}}
    assert res["ratios"]["a / freq"]["broadwell-ddr4"] == (core["broadwell-ddr4"]["freq_ghz"]
                                                           / core["skylake-ddr4"]["freq_ghz"])


@pytest.mark.parametrize("argv, named", [
    (["compare", "no-such-study", "--profiles", "skylake-ddr4"], "no-such-study"),
    (["compare", *SMALL, "--profiles", "cascadelake-optane,no-such-profile"], "no-such-profile"),
    (["compare", *SMALL, "--profiles", "cascadelake-optane,cascadelake-optane"], "twice"),
    (["compare", *SMALL, "--profiles", "cascadelake-optane", "--media", "pmem9=dram"], "pmem9"),
    (["compare", *SMALL, "--profiles", "cascadelake-optane", "--media", "pmem0=sram"], "sram"),
    # haswell-nvdimm-n's pmem regions are nvdimm0 and nvdimm1
    (["compare", *SMALL, "--profiles", "cascadelake-optane,haswell-nvdimm-n", "--media", "pmem0=dram"],
     "haswell-nvdimm-n"),
    (["compare", *SMALL, "--profiles", "skylake-ddr4", "--media", "dram0=optane"], "optane"),
])
def test_errors(capsys, argv, named):
    code, out, err = run_cli(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("emu: error:") and named in err, err


def test_media_file_with_an_unknown_key(capsys, tmp_path):
    f = tmp_path / "m.toml"
    f.write_text("[media.x]\nno_such_ns = 1.0\n")
    code, out, err = run_cli(capsys, "compare", *SMALL, "--profiles", "cascadelake-optane",
                             "--media", f"pmem0={f}")
    assert (code, out) == (2, "")
    assert err.startswith("emu: error:") and "no_such_ns" in err, err
