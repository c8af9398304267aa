"""`emu trace --stat` and `emu run --stat` (emu/studies/stat.py)."""
import json

import pytest

from emu import Machine
from emu.state import STALL_CAUSES
from emu.studies import stat
from emu.studies.cli import main
from isa.program import Program

NO_PREFETCH = ["--set", "cache.l1d.prefetcher=none", "--set", "cache.l2.prefetcher=none"]


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.fixture
def tiny(tmp_path):
    """Three loads of one line, the first a cold miss, a fourth load of it, then a store to
    the next line, a second cold miss (prefetchers off): 5 ops, 2 misses at every level,
    2 lines read from DRAM, none written (nothing is evicted)."""
    path = tmp_path / "tiny.lackey"
    path.write_text("==1== lackey\n L 1ffefff000,8\n L 1ffefff008,8\n L 1ffefff010,8\n"
                    " L 1ffefff000,8\n S 1ffefff040,8\n")
    return path


def test_trace_stat_of_a_hand_counted_trace(tiny, capsys):
    r = json.loads(run_cli(capsys, "trace", tiny, *NO_PREFETCH, "--stat", "--json"))
    s = r["stat"]
    assert (s["ops"], s["loads"], s["stores"]) == (5, 4, 1)
    assert {n: d["misses"] for n, d in s["misses"].items()} == {"l1d": 2, "l2": 2, "llc": 2}
    assert s["misses"]["l1d"]["store_misses"] == 1
    assert s["misses"]["llc"]["per_kilo_op"] == 2 * 1000 / 5
    assert (s["line_reads"], s["line_writes"]) == (2, 0)
    assert s["cycles"] == r["cycles"]          # the trace's own count of its cycles
    assert s["ops_per_cycle"] == 5 / r["cycles"]
    assert sum(s["stalls"].values()) == s["cycles"]   # causes and busy partition the cycles
    assert set(s["stalls"]) == set(STALL_CAUSES) | {"busy"}


def test_trace_stat_text(tiny, capsys):
    out = run_cli(capsys, "trace", tiny, *NO_PREFETCH, "--stat")
    body = out[out.index(" stat of "):]
    assert "  5  ops\n" in body
    assert "2  llc misses" in body and "# 400.00 per kilo-op" in body
    assert "busy cycles" in body
    plain = run_cli(capsys, "trace", tiny, *NO_PREFETCH)
    assert out.startswith(plain)   # the usual report, unchanged, before the summary


def test_summary_is_the_machines_counters():
    """of_machine sums stats()' sites and takes its levels: a run of two sites."""
    m = Machine("skylake-ddr4")
    p = Program().site("a")
    for i in range(100):
        p.load(0x100000 + 64 * i)
    p.site("b").store(0x200000, b"\1" * 8).mfence()
    m.run(p)
    s, st = stat.of_machine(m), m.stats()
    assert s["ops"] == sum(d["ops"] for d in st["sites"].values()) == 102   # SITE ops not
    assert len(p) == 104
    assert s["cycles"] == st["cycles"]
    assert {n: d["misses"] for n, d in s["misses"].items()} == \
        {n: d["misses"] for n, d in st["levels"].items()}
    assert s["stalls"]["fence"] == sum(d["fence"] for d in st["sites"].values()) > 0


def test_run_stat_leaves_the_result_and_matches_it(capsys):
    """Per variant: the cycles the study measures, one media line written per 64 B copied
    to the NVDIMM, and its LLC misses; the result itself as without --stat."""
    args = ("run", "dax-memcpy", "--scale", "0.001", "--json")
    with_stat = json.loads(run_cli(capsys, *args, "--stat"))
    plain = json.loads(run_cli(capsys, *args))
    stats = with_stat.pop("stat")
    assert with_stat == plain
    assert set(stats) == set(plain["variants"])
    for v, d in plain["variants"].items():
        assert stats[v]["cycles"] == d["cycles"]
        assert stats[v]["line_writes"] == d["bytes_copied"] // 64 == d["nvdimm_line_writes"]
        assert stats[v]["misses"]["llc"]["misses"] == d["llc_misses"]


def test_stat_with_sensitivity_is_refused(capsys):
    assert main(["run", "dax-memcpy", "--stat", "--sensitivity", "core.freq_ghz"]) == 2
    assert "--stat summarises the profile's own run" in capsys.readouterr().err
