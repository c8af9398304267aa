"""Scenario runs at small scale: interface names of shared/scenarios.md and bounds that
follow from the profile by hand."""
import json

from emu.cli import main
from memmodel.profile import load_profile

ONE_PASS = str(1 / 4096)   # one pass of 256 copies over the 4 MiB buffer


def run_json(capsys, *argv):
    assert main(["run", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_dax_memcpy_interface_and_clflush_bound(capsys):
    res = run_json(capsys, "dax-memcpy", "--scale", ONE_PASS)
    assert res["scenario"] == "dax-memcpy" and res["profile"] == "haswell-nvdimm-n"
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
