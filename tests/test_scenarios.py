"""Scenario runs at small scale: interface names of docs/scenarios.md and bounds that
follow from the profile by hand."""
import json

import pytest

from emu.studies.cli import main
from memmodel.profile import load_profile

ONE_PASS = str(1 / 4096)   # one pass of 256 copies over the 4 MiB buffer


def run_json(capsys, *argv):
    assert main(["run", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_dax_memcpy_interface_and_clflush_bound(capsys):
    res = run_json(capsys, "dax-memcpy", "--scale", ONE_PASS)
    assert res["scenario"] == "dax-memcpy" and res["profile"] == "haswell-nvdimm-n"
    assert res["profile_files"][-1].endswith("haswell-nvdimm-n.toml")
    assert "HaswellEP" in res["profile_sources"]["instr.clflush_cycles"]
    assert set(res["variants"]) == {"clflush,numa=local", "clflush,numa=remote",
                                    "movnt,numa=local", "movnt,numa=remote"}
    prof = load_profile("haswell-nvdimm-n").values
    freq_hz = prof["core"]["freq_ghz"] * 1e9
    lines = 4 * 1024 * 1024 // 64
    for placement in ("local", "remote"):
        cl = res["variants"][f"clflush,numa={placement}"]
        nt = res["variants"][f"movnt,numa={placement}"]
        # CLFLUSHes execute one after another: at least lines x clflush_cycles on top of
        # the copy itself, which the movnt variant also pays at most once per line
        assert cl["seconds"] >= lines * prof["instr"]["clflush_cycles"] / freq_hz
        assert cl["seconds"] > nt["seconds"] > 0
        # every destination line reaches the NVDIMM exactly once per pass in both variants
        assert cl["nvdimm_line_writes"] == nt["nvdimm_line_writes"] == lines
    assert res["variants"]["clflush,numa=remote"]["seconds"] > \
        res["variants"]["clflush,numa=local"]["seconds"]


def test_dax_memcpy_table_shows_published_figures(capsys):
    assert main(["run", "dax-memcpy", "--scale", ONE_PASS]) == 0
    out = capsys.readouterr().out
    assert "published" in out and "clflush/movnt, numa=remote" in out


def test_dax_memcpy_names_the_values_it_scales_with_that_are_not_its_machines(capsys):
    """The SENSITIVE keys haswell-nvdimm-n transfers from another machine or assumes are
    listed in --json and under the table, each with its kind and machine."""
    from emu.studies.scenarios import registry
    prof = load_profile("haswell-nvdimm-n")
    sensitive = registry()["dax-memcpy"].SENSITIVE
    transferred = [k for k in sensitive if k in prof.transfers]
    assumed = [k for k in sensitive if k not in prof.transfers
               and prof.sources[k].startswith("assumption")]
    assert transferred and assumed
    res = run_json(capsys, "dax-memcpy", "--scale", ONE_PASS)
    listed = {e["key"]: e for e in res["assumed_or_transferred"]}
    assert list(listed) == [k for k in sensitive if k in transferred + assumed]
    for k in transferred:
        assert listed[k] == {"key": k, "value": prof.get(k), "kind": "transferred",
                             "from": prof.transfers[k]}
    for k in assumed:
        assert listed[k] == {"key": k, "value": prof.get(k), "kind": "assumption", "from": None}
    assert main(["run", "dax-memcpy", "--scale", ONE_PASS]) == 0
    out = capsys.readouterr().out
    tail = out[out.index("not this machine's own measurement"):]
    for k in transferred:
        assert f"transferred from {prof.transfers[k]}" in \
            next(ln for ln in tail.splitlines() if ln.split()[:1] == [k])


def test_sensitivity_halves_and_doubles_a_value(capsys):
    res = run_json(capsys, "dax-memcpy", "--scale", ONE_PASS,
                   "--sensitivity", "instr.clflush_cycles")
    row = res["sensitivity"]["instr.clflush_cycles"]
    assert row["value"] == load_profile("haswell-nvdimm-n").get("instr.clflush_cycles")
    for v in ("clflush,numa=local", "clflush,numa=remote"):
        # serialised flushes: a costlier CLFLUSH can never make the run shorter
        assert row["x0.5"][v] <= row["x1"][v] <= row["x2"][v]
    assert row["x1"] == {v: d["seconds"] for v, d in res["variants"].items()}
    # the movnt variants execute no CLFLUSH at all
    assert row["x0.5"]["movnt,numa=local"] == row["x2"]["movnt,numa=local"]


def test_sensitivity_of_an_unknown_key_is_an_error(capsys):
    assert main(["run", "dax-memcpy", "--scale", ONE_PASS, "--sensitivity", "core.nope"]) == 2
    assert "core.nope" in capsys.readouterr().err


def test_dax_write_usercopy_interface_and_struct_page_reads(capsys):
    res = run_json(capsys, "dax-write-usercopy", "--ios", "40")
    assert res["scenario"] == "dax-write-usercopy" and res["profile"] == "cascadelake-optane"
    assert (res["bs"], res["jobs"]) == (4096, 1)
    assert set(res["variants"]) == {"memmap=pmem", "memmap=dram", "bypass"}
    assert {v: d["iops"]["published"] for v, d in res["published"].items()} == {
        "memmap=pmem": 375e3, "memmap=dram": 519e3}
    v = res["variants"]
    declared = ("syscall entry/exit", "vfs_write", "fs write_iter")
    # declared costs, identical in every variant: 100 + 100 + 400 ns at 2.2 GHz, as WORK
    # chains; a chain may start while the previous I/O's last ops retire, so a function is
    # charged up to its declared cycles, never more, and within a cycle in every variant
    for k, want in enumerate((220, 220, 880)):
        got = [d["functions_cycles_per_io"][declared[k]] for d in v.values()]
        assert 0.95 * want <= min(got) <= max(got) <= want and max(got) - min(got) <= 1
    for d in v.values():
        assert d["iops"] == pytest.approx(1e9 / d["ns_per_io"])
        assert d["pmem_writes_per_io"] == 64      # 4 KiB of NT stores, line by line
    # only the checked copy with the memmap in pmem reads pmem (the struct page)
    assert v["memmap=pmem"]["pmem_reads_per_io"] >= 1
    assert v["memmap=dram"]["pmem_reads_per_io"] == v["bypass"]["pmem_reads_per_io"] == 0
    assert "__check_object_size" in v["memmap=dram"]["functions_cycles_per_io"]
    assert "__check_object_size" not in v["bypass"]["functions_cycles_per_io"]


def test_dax_write_usercopy_table_states_assumptions(capsys):
    assert main(["run", "dax-write-usercopy", "--ios", "20", "--bs", "512"]) == 0
    out = capsys.readouterr().out
    assert "assumed: 4 KiB, 1 job; the thread gives neither" in out
    assert "bs=512" in out and "375,000" in out and "519,000" in out
    assert "__copy_user_flushcache" in out


def test_dax_write_usercopy_jobs_share_bandwidth(capsys):
    res = run_json(capsys, "dax-write-usercopy", "--ios", "20", "--jobs", "2")
    assert res["jobs"] == 2
    assert res["profile_sources"]["media.optane.write_bw_gbps"].startswith("[YA20]")
    for d in res["variants"].values():
        assert d["iops"] == pytest.approx(2e9 / d["ns_per_io"])


def test_dax_write_usercopy_without_pmem_is_an_error(capsys):
    assert main(["run", "dax-write-usercopy", "--ios", "5", "--profile", "skylake-ddr4"]) == 2
    assert "no pmem" in capsys.readouterr().err


def test_dax_write_usercopy_bad_options_are_named(capsys):
    assert main(["run", "dax-write-usercopy", "--ios", "5", "--bs", "8192",
                 "--file-size", "4096"]) == 2
    assert "--bs 8192 is larger than --file-size 4096" in capsys.readouterr().err


@pytest.mark.parametrize("argv,key,loop", [
    (["dax-write-usercopy", "--ios", "40"], "functions_cycles_per_io", "fio loop"),
    (["dax-read-copy-mc", "--ios", "2"], "functions_cycles_per_io", "fio loop"),
    (["vhost-tx", "--packets", "64"], "functions_cycles_per_packet", "tx loop"),
])
def test_function_tables_have_no_unexplained_none_row(capsys, argv, key, loop):
    res = run_json(capsys, *argv)
    for v, d in res["variants"].items():
        assert "(none)" not in d[key], v
        # every cycle of a unit of work is some named site's, the driver loop's included
        assert sum(d[key].values()) == pytest.approx(d[key.replace("functions_", "")]), v
    assert main(["run", *argv]) == 0
    assert "(none)" not in capsys.readouterr().out
    if argv[0] == "dax-read-copy-mc":   # the generic copy's stores drain after the last I/O
        assert res["variants"]["generic"][key][loop] > 0


def test_readings_run_each_setting_and_bracket_the_metric():
    # a study's READINGS run beside the profile's own settings; a str value takes another
    # profile key's value (skylake-ddr4: lfence_cycles 4, stac_cycles 3)
    import types

    from emu.studies.options import Options
    from emu.studies.scenarios import readings

    def run(args):
        over = dict(args.overrides)
        return {"variants": {"a": {"m": over.get("instr.stac_cycles", 3) * 10},
                             "b": {"m": 7 - over.get("instr.stac_clac_serialize", 0)}}}
    mod = types.SimpleNamespace(METRIC="m", run=run, READINGS={
        "as lfence": ("as LFENCE's cost", {"instr.stac_cycles": "instr.lfence_cycles"}),
        "serializing": ("as LFENCE", {"instr.stac_clac_serialize": 1})})
    options = Options("skylake-ddr4", {}, {})
    out = readings(mod, options, run(options))
    assert out["readings"]["as lfence"]["overrides"] == {"instr.stac_cycles": 4}
    assert out["readings"]["as lfence"]["m"] == {"a": 40, "b": 7}
    assert out["bracket"] == {"a": [30, 40], "b": [6, 7]}
