"""The `emu` command line: profiles, trace (table, --json, --map-trace) and error handling."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from emu.studies.cli import main
from emu.studies.trace_cmd import TracePages
from emu.studies.scenarios import registry
from isa.ops import COL_ADDR, COL_DATA, COL_OP, COL_SIZE, COL_SRC, N_COLS, Op
from isa.program import Program
from memmodel.profile import load_profile

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ["broadwell-ddr4", "cascadelake-optane", "haswell-nvdimm-n", "skylake-ddr4"]
NO_PREFETCH = ["--set", "cache.l1d.prefetcher=none", "--set", "cache.l2.prefetcher=none"]


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write_din(tmp_path, lines, name="t.din"):
    f = tmp_path / name
    f.write_text("".join(f"{kind} {addr:x}\n" for kind, addr in lines))
    return f


# 10 loads (din label 0, default size 8) to 4 lines in 4 consecutive L1 sets: the first touch
# of each line misses, the other 6 loads hit.
LINES = [0x10000, 0x10040, 0x10080, 0x100c0]
TEN_LOADS = [(0, a) for a in LINES] + [(0, a + 8) for a in LINES] + [(0, LINES[0]), (0, LINES[2] + 16)]


# ---------------------------------------------------------------------------- profiles
def test_profiles_lists_all_shipped_with_description_subprocess():
    r = subprocess.run([sys.executable, "-m", "emu.studies.cli", "profiles"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == SHIPPED
    for name, line in zip(SHIPPED, lines):
        assert load_profile(name).values["profile"]["description"] in line


def test_profiles_show_every_key_with_its_source_and_the_regions(capsys):
    prof = load_profile("cascadelake-optane")
    code, out, err = run_cli(capsys, "profiles", "--show", "cascadelake-optane")
    assert code == 0 and err == ""
    assert prof.values["profile"]["description"] in out
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln.split()}
    # every sourced key (inherited from skylake-ddr4 or its own) with value and provenance
    for key, source in prof.sources.items():
        assert key in rows, key
        assert f"  {prof.get(key)}  " in rows[key] and rows[key].endswith(source), rows[key]
    assert "assumption: " in out   # assumptions say so
    assert prof.transfers          # and transfers say from where
    for key, machine in prof.transfers.items():
        assert f"transferred from {machine}: " in rows[key], rows[key]
    assert "lru" in rows["cache.l1d.policy"] and "false" in rows["cache.llc.inclusive"]
    for r in prof.values["region"]:
        assert rows[r["name"]].split() == [r["name"], f"{r['base']:#x}", f"{r['size_bytes']:#x}",
                                           r["media"], str(r["node"]), r["privilege"]]


def test_profiles_show_json(capsys):
    prof = load_profile("skylake-ddr4")
    code, out, _ = run_cli(capsys, "profiles", "--show", "skylake-ddr4", "--json")
    assert code == 0
    report = json.loads(out)
    keys = {k["key"]: k for k in report["keys"]}
    assert keys["core.rob_entries"] == {"key": "core.rob_entries", "value": 224,
                                        "source": prof.sources["core.rob_entries"],
                                        "transferred_from": None}
    assert prof.transfers
    for key, machine in prof.transfers.items():
        assert keys[key]["transferred_from"] == machine
    assert keys["cache.l1d.policy"]["source"] is None
    assert set(keys) >= set(prof.sources)
    assert [r["name"] for r in report["regions"]] == [r["name"] for r in prof.values["region"]]
    code, out, _ = run_cli(capsys, "profiles", "--json")
    assert code == 0 and [p["name"] for p in json.loads(out)] == SHIPPED


def test_profiles_show_unknown_name(capsys):
    assert_clean_error(*run_cli(capsys, "profiles", "--show", "no-such-box"),
                       "no-such-box", "skylake-ddr4")


def test_help_mentions_subcommands_and_map_trace(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "profiles" in out and "trace" in out
    assert main(["trace", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--map-trace" in out and "4 KiB pages" in out


@pytest.mark.parametrize("name", list(registry()))
def test_run_help_prints_the_scenario_docstring(capsys, name):
    assert main(["run", name, "--help"]) == 0
    out = capsys.readouterr().out
    assert registry()[name].__doc__.strip() in out
    assert "docs/scenarios.md" in out


# ---------------------------------------------------------------------------- trace
def test_trace_table(tmp_path, capsys):
    f = write_din(tmp_path, TEN_LOADS)
    code, out, err = run_cli(capsys, "trace", str(f), *NO_PREFETCH)
    assert code == 0, err
    assert re.search(r"^cycles\s+\d+$", out, re.M)
    assert re.search(r"^ops\s+10$", out, re.M)
    assert re.search(r"^seconds\s+\S+ \(emulated\)$", out, re.M)
    assert "miss ratio" in out and "dirty write-backs" in out
    l1d = re.search(r"^l1d\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)$", out, re.M)
    assert l1d and l1d.group(1, 2, 3, 4, 5) == ("6", "4", "4", "0", "0.4000")   # loads only
    assert re.search(r"^dram\s+\d+\s+\d+$", out, re.M)            # media reads/writes
    assert re.search(r"^dram0\s+\d+\s+\d+$", out, re.M)           # region line reads/writes


def test_trace_json_counts_distinct_lines(tmp_path, capsys):
    f = write_din(tmp_path, TEN_LOADS)
    code, out, err = run_cli(capsys, "trace", str(f), "--json", *NO_PREFETCH)
    assert code == 0, err
    r = json.loads(out)
    assert r["trace"] == str(f) and r["profile"] == "skylake-ddr4" and r["ops"] == 10
    assert r["cycles"] > 0 and r["seconds"] > 0
    l1d = r["levels"]["l1d"]
    assert l1d["load_misses"] == len(LINES) == 4
    assert l1d["load_hits"] == 6
    assert l1d["miss_ratio"] == pytest.approx(0.4)
    assert set(r["levels"]) == {"l1d", "l2", "llc"}
    assert set(r["media"]) == {"dram"} and set(r["regions"]) == {"dram0", "dram1"}
    assert r["regions"]["dram1"] == {"line_reads": 0, "line_writes": 0}
    assert r["map_trace"] is None                 # din: addresses taken as they are
    # provenance of the resolved configuration
    assert r["profile_files"][-1].endswith("skylake-ddr4.toml")
    assert r["overrides"] == {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}
    assert r["profile_sources"]["cache.l1d.size_bytes"]


def test_trace_set_numeric_override_is_recorded(tmp_path, capsys):
    f = write_din(tmp_path, TEN_LOADS)
    code, out, err = run_cli(capsys, "trace", str(f), "--json", "--no-functional",
                             "--set", "cache.llc.size_bytes=720896", *NO_PREFETCH)  # 11 ways x 1024 sets
    assert code == 0, err
    r = json.loads(out)
    assert r["overrides"]["cache.llc.size_bytes"] == 720896
    assert r["profile_sources"]["cache.llc.size_bytes"].startswith("assumption: override")
    assert r["functional"] is False


def test_trace_map_into_region(tmp_path, capsys):
    # Process-like addresses (stack near 0x1ffefff000, binary low) replayed into Optane.
    f = write_din(tmp_path, [(0, 0x1ffefff008), (1, 0x401ff8), (0, 0x1ffefff010)])
    code, out, err = run_cli(capsys, "trace", str(f), "--json", "--profile", "cascadelake-optane",
                             "--region", "pmem0", *NO_PREFETCH)
    assert code == 0, err
    r = json.loads(out)
    assert r["map_trace"] == {"region": "pmem0", "pages": 2, "page_bytes": 4096}
    assert r["regions"]["pmem0"]["line_reads"] >= 1
    assert all(v["line_reads"] == 0 for n, v in r["regions"].items() if n != "pmem0")


def map_trace_pages(ops, base, size_bytes, region="region", chunks=1):
    """--map-trace's mapping of `ops`, gathered from `chunks` pieces of them, applied in place."""
    pages = TracePages()
    for part in np.array_split(np.arange(len(ops)), chunks):
        pages.add(ops[part])
    pages.place(base, size_bytes, region)
    ops[:] = pages.remapped(Program.from_array(ops)).ops
    return pages.pages


@pytest.mark.parametrize("chunks", [1, 2, 6])
def test_map_trace_pages_keeps_offsets_order_and_spans(chunks):
    ops = np.zeros((6, N_COLS), dtype=np.int64)
    ops[:, COL_OP] = [Op.LOAD, Op.STORE, Op.LOAD, Op.REP_MOVSB, Op.SFENCE, Op.LOAD]
    ops[:, COL_ADDR] = [0x1ffefff008, 0x401ffc, 0x1fff000010, 0x500000, 0, 0x403000]
    ops[:, COL_SIZE] = [8, 8, 8, 8192, 0, 4]
    ops[3, COL_SRC] = 0x1ffeffe100              # spans pages 0x1ffeffe..0x1fff000
    ops[:, COL_DATA] = -1                       # a trace's stores carry no data
    base = 0x7000000
    # pages in address order: 401 402 (store straddles) 403 500 501 1ffeffe 1ffefff 1fff000
    assert map_trace_pages(ops, base, 1 << 30, chunks=chunks) == 8
    assert list(ops[:, COL_ADDR]) == [base + 0x6008, base + 0x0ffc, base + 0x7010,
                                      base + 0x3000, 0, base + 0x2000]
    assert ops[3, COL_SRC] == base + 0x5100
    small = np.array([[Op.LOAD, 0, 8, 0, -1, 0, 0], [Op.LOAD, 1 << 20, 8, 0, -1, 0, 0]], np.int64)
    with pytest.raises(Exception, match="2 distinct 4 KiB pages"):
        map_trace_pages(small, 0, 4096, "tiny")



def test_map_trace_pages_leaves_a_branchs_index_and_limit_alone():
    """BRANCH and INDEX_MASK hold an index and a limit, no address: remapping the index
    would change the branch's outcome."""
    ops = Program().load(0x1fff000).branch(3, 5, 0).index_mask(7, 2).ops.copy()
    assert map_trace_pages(ops, 0x7000000, 1 << 30) == 1
    assert ops[:, COL_ADDR].tolist() == [0x7000000, 3, 7]
    assert ops[1:, COL_SIZE].tolist() == [5, 2]

# ---------------------------------------------------------------------------- errors
def assert_clean_error(code, out, err, *needles):
    assert code == 2
    assert out == ""
    assert err.startswith("emu: error: ") and "Traceback" not in err
    for n in needles:
        assert n in err, err


def test_bad_profile_path(tmp_path, capsys):
    f = write_din(tmp_path, TEN_LOADS)
    missing = tmp_path / "nope" / "machine.toml"
    assert_clean_error(*run_cli(capsys, "trace", str(f), "--profile", str(missing)), str(missing))
    assert_clean_error(*run_cli(capsys, "trace", str(f), "--profile", "no-such-box"),
                       "no-such-box", "skylake-ddr4")


def test_bad_set_key(tmp_path, capsys):
    f = write_din(tmp_path, TEN_LOADS)
    assert_clean_error(*run_cli(capsys, "trace", str(f), "--set", "cache.l1d.sizzle_bytes=3"),
                       "cache.l1d.sizzle_bytes")
    assert_clean_error(*run_cli(capsys, "trace", str(f), "--set", "cache.l1d.ways=many"),
                       "cache.l1d.ways")
    assert_clean_error(*run_cli(capsys, "trace", str(f), "--set", "cache.l1d.ways"),   # argparse's
                       "expected KEY=VALUE", "emu trace --help")                       # own check


def test_address_outside_every_region(tmp_path, capsys):
    f = write_din(tmp_path, [(0, 0x10000), (0, 0x7fff00000000)])
    assert_clean_error(*run_cli(capsys, "trace", str(f), "--json"),
                       "unmapped access at op 1", "0x7fff00000000", "dram0", "--map-trace")


def test_missing_and_malformed_trace(tmp_path, capsys):
    assert_clean_error(*run_cli(capsys, "trace", str(tmp_path / "absent.din")), "absent.din")
    bad = tmp_path / "bad.din"
    bad.write_text("0 1000\nthis is not din\n")
    assert_clean_error(*run_cli(capsys, "trace", str(bad)), "bad.din")


def test_unknown_region(tmp_path, capsys):
    f = write_din(tmp_path, TEN_LOADS)
    assert_clean_error(*run_cli(capsys, "trace", str(f), "--region", "pmem0"), "pmem0", "dram0")


# ---------------------------------------------------------------------------- real valgrind
PROG = r"""
#include <string.h>
static char buf[65536];
int main(void) {
    memset(buf, 1, sizeof buf);
    volatile long sum = 0;
    for (int i = 0; i < (int)sizeof buf; i += 64) sum += buf[i];
    return (int)(sum & 1);
}
"""


@pytest.mark.skipif(not (shutil.which("valgrind") and shutil.which("gcc")),
                    reason="needs valgrind and gcc")
def test_valgrind_lackey_trace(tmp_path, capsys):
    (tmp_path / "prog.c").write_text(PROG)
    subprocess.run(["gcc", "-O1", "-o", "prog", "prog.c"], cwd=tmp_path, check=True)
    subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", "--log-file=trace.txt", "./prog"],
                   cwd=tmp_path, check=True, timeout=600)
    text = (tmp_path / "trace.txt").read_text()
    kinds = re.findall(r"^ ([LSM]) ([0-9a-f]+),(\d+)$", text, re.M)
    assert len(kinds) > 65536 // 64
    addrs = [int(a, 16) for _, a, _ in kinds]
    assert max(addrs) > 1 << 32                # the stack is far above any region's base ...
    # ... and the default for lackey maps the pages into the profile's first region.
    code, out, err = run_cli(capsys, "trace", str(tmp_path / "trace.txt"), "--format", "lackey", "--json")
    assert code == 0, err
    r = json.loads(out)
    expected_ops = sum((2 if k == "M" else 1) * -(-int(s) // 64) for k, _, s in kinds)  # M = load+store; >64 B split
    assert r["ops"] == expected_ops
    assert r["map_trace"]["region"] == "dram0"
    assert r["map_trace"]["pages"] >= 65536 // 4096
    assert r["regions"]["dram0"]["line_reads"] > 0
    assert r["regions"]["dram1"] == {"line_reads": 0, "line_writes": 0}
    l1d = r["levels"]["l1d"]
    assert l1d["hits"] + l1d["misses"] > 0


def test_trace_poison_stops_at_the_load_that_consumes_it(tmp_path, capsys):
    f = write_din(tmp_path, TEN_LOADS)
    # op 0 loads LINES[0]; poisoning LINES[1] stops the run at op 1, its first load
    assert_clean_error(*run_cli(capsys, "trace", str(f), "--poison", hex(LINES[1] + 3)),
                       "unrecoverable machine check at op 1", hex(LINES[1]))
    assert run_cli(capsys, "trace", str(f), "--poison", hex(0x20000))[0] == 0   # untouched line


def test_trace_poison_address_is_remapped_with_the_trace(tmp_path, capsys):
    f = write_din(tmp_path, [(0, 0x1ffefff008), (0, 0x401ff8)])
    code, out, err = run_cli(capsys, "trace", str(f), "--map-trace", "--region", "pmem0",
                             "--profile", "cascadelake-optane", "--poison", "0x401fc0")
    assert code == 2 and "machine check at op 1" in err
