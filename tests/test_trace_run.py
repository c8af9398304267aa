"""`emu trace` runs a trace in chunks (issue 12): the results equal one whole run, memory does
not grow with the trace, and every bad input is `emu: error:` with exit status 2."""
import gzip
import json
import os
import subprocess
import sys
import textwrap

import pytest

from emu import Machine
from emu.studies.cli import main
from isa.traces import CHUNK_LINES, read_trace
from tracegen import write_din_lines


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_trace_run_in_chunks_equals_one_run(tmp_path, capsys):
    """Three chunks of din accesses through `emu trace` against the same trace read whole
    and run as one Program: cycles and every counter agree (the pipeline is not drained
    between chunks)."""
    f = tmp_path / "t.din"
    write_din_lines(f, 1, block=2 * CHUNK_LINES + 1000, addr_bits=24)
    code, out, err = run_cli(capsys, "trace", f, "--json", "--profile", "cascadelake-optane")
    assert code == 0, err
    got = json.loads(out)
    m = Machine("cascadelake-optane")
    whole = m.run(read_trace(f))
    s = m.stats()
    assert got["ops"] == whole.ops == 2 * CHUNK_LINES + 1000
    assert got["cycles"] == whole.cycles
    for level, d in s["levels"].items():
        assert {k: got["levels"][level][k] for k in d} == d
    assert got["media"] == s["media"]


def test_map_trace_over_chunks_equals_one_mapping(tmp_path, capsys):
    """Lackey addresses spread over 3 chunks, mapped page-wise: the mapped run equals a
    run of the same accesses at hand-mapped addresses (pages packed in address order)."""
    pages = [0x1ffeff0, 0x40a, 0x1ffefef, 0x40b]   # mapped order: 40a 40b 1ffefef 1ffeff0
    rank = {p: i for i, p in enumerate(sorted(pages))}
    lines = [f" L {(pages[i % 4] << 12) + 8 * (i % 500):x},8" for i in range(2 * CHUNK_LINES + 10)]
    f = tmp_path / "t.lackey.gz"
    with gzip.open(f, "wt") as g:
        g.write("==1== Lackey\n" + "\n".join(lines) + "\n")
    code, out, err = run_cli(capsys, "trace", f, "--json", "--format", "lackey")
    assert code == 0, err
    got = json.loads(out)
    assert got["map_trace"]["pages"] == 4
    m = Machine("skylake-ddr4")
    from isa import Program
    p = Program().loads([(rank[pages[i % 4]] << 12) + 8 * (i % 500) for i in range(len(lines))])
    r = m.run(p)
    assert got["cycles"] == r.cycles
    assert got["levels"]["l1d"]["misses"] == m.stats()["levels"]["l1d"]["misses"]


def _trace_run_peak(tmp_path, blocks):
    """(ops, peak RSS in MiB) of `emu trace` (timing only) over `blocks` M din accesses."""
    f = tmp_path / f"big{blocks}.din"
    write_din_lines(f, blocks, addr_bits=28)
    code = textwrap.dedent(f"""
        import json, sys
        from emu.studies.cli import main
        import io, contextlib
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(["trace", {str(f)!r}, "--json", "--no-functional"]) == 0
        hwm = [s for s in open("/proc/self/status") if s.startswith("VmHWM:")][0]
        print(json.loads(buf.getvalue())["ops"], int(hwm.split()[1]) // 1024)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    f.unlink()
    return tuple(map(int, r.stdout.split()))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
def test_a_trace_runs_in_memory_that_does_not_grow_with_its_length(tmp_path):
    """1M and 4M din accesses (4 and 16 chunks) through `emu trace`: every line became an op,
    and the longer trace's peak memory is the shorter one's (its 3M more ops held at once
    would be 168 MiB of op rows alone)."""
    (ops_1m, mib_1m), (ops_4m, mib_4m) = (_trace_run_peak(tmp_path, b) for b in (1, 4))
    assert (ops_1m, ops_4m) == (1 << 20, 4 << 20)
    assert mib_4m - mib_1m < 48, f"peak RSS {mib_1m} MiB at 1M lines, {mib_4m} MiB at 4M"
    assert mib_4m < 700, f"peak RSS {mib_4m} MiB"


# -- bad input: exit 2, `emu: error:`, nothing on stdout, no traceback -------------------------
def din(tmp_path, text, name="t.din"):
    f = tmp_path / name
    f.write_text(text)
    return f


BAD = [
    # (what, trace text, extra arguments, words the message must contain)
    ("--poison overflow", "0 1000\n", ["--poison", "0x" + "f" * 20], ["--poison", "0x" + "f" * 20]),
    ("--poison negative", "0 1000\n", ["--poison=-0x4000000000000000"],
     ["--poison", "-0x4000000000000000"]),
    ("--poison not a number", "0 1000\n", ["--poison", "zz"], ["--poison", "'zz'"]),
    ("--poison unmapped", "0 1000\n", ["--poison", "0x7000000000", "--profile", "skylake-ddr4"],
     ["--poison 0x7000000000", "unmapped"]),
    ("poison consumed on line 3", "0 1000\n1 2000\n0 3008\n0 4000\n", ["--poison", "0x3000"],
     ["t.din:3", "--poison 0x3000", "machine check"]),
    ("unmapped access on line 2 after poison", "0 1000\n0 7000000000\n",
     ["--poison", "0x5000", "--no-map-trace"], ["t.din:2", "unmapped"]),
    ("din size 999999999", "0 1000 999999999\n" * 10, [], ["t.din:1", "999999999", "4096"]),
    ("malformed din", "0 1000\nhello\n", [], ["t.din:2"]),
    ("--set given twice", "0 1000\n", ["--set", "core.freq_ghz=2", "--set", "core.freq_ghz=3"],
     ["core.freq_ghz", "twice"]),
    ("--set nan", "0 1000\n", ["--set", "numa.remote_latency_ns=nan"],
     ["numa.remote_latency_ns", "nan"]),
    ("--set 1 TiB LLC", "0 1000\n", ["--set", f"cache.llc.size_bytes={1 << 40}"],
     ["cache.llc.size_bytes", str(1 << 40)]),
    ("--region unknown", "0 1000\n", ["--region", "nowhere"], ["nowhere"]),
    ("profile outside profiles/", "0 1000\n", ["--profile", "../skylake-ddr4"], ["../skylake-ddr4"]),
]


@pytest.mark.parametrize("what, text, extra, words", BAD, ids=[b[0] for b in BAD])
def test_bad_trace_input_is_a_clean_error(tmp_path, capsys, what, text, extra, words):
    code, out, err = run_cli(capsys, "trace", din(tmp_path, text), *extra)
    assert (code, out) == (2, ""), (what, err)
    assert "emu: error: " in err and "Traceback" not in err, err
    for w in words:
        assert w in err, (what, err)


def test_an_unexpected_exception_is_reported_without_a_traceback(monkeypatch, capsys, tmp_path):
    import emu.studies.trace_cmd as trace_cmd
    monkeypatch.setattr(trace_cmd, "resolve_format", lambda *a: 1 / 0)
    code, out, err = run_cli(capsys, "trace", din(tmp_path, "0 1000\n"))
    assert (code, out) == (2, "")
    assert err.startswith("emu: error: internal error") and "ZeroDivisionError" in err
