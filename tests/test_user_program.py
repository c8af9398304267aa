"""The user's own program: a C program (docs/examples/walk.c) compiled with -g, traced with valgrind's lackey and
profiled with --binary (its hot loop's line tops the tables; cg_annotate annotates it), and
replayed on cachegrind's geometry (--D1/--LL --two-level) against a real cachegrind run."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from emu.studies.cli import main
from isa.ops import COL_SRC
from isa.traces import read_din, read_lackey

PROG = (Path(__file__).parent.parent / "docs" / "examples" / "walk.c").read_text()
HOT_LINE = next(i for i, t in enumerate(PROG.split("\n"), 1) if "/* HOT */" in t)
NO_PREFETCH = ["--set", "cache.l1d.prefetcher=none"]


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _has_elftools():
    try:
        import elftools  # noqa: F401
    except ImportError:
        return False
    return True


needs_tools = pytest.mark.skipif(
    not (shutil.which("valgrind") and shutil.which("gcc") and shutil.which("cg_annotate")
         and _has_elftools()),
    reason="needs valgrind (lackey, cachegrind, cg_annotate), gcc and pyelftools")


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """(folder, program, lackey trace) of PROG built with gcc -g -O1 (a PIE: gcc's default)."""
    d = tmp_path_factory.mktemp("userprog")
    (d / "prog.c").write_text(PROG)
    subprocess.run(["gcc", "-g", "-O1", "-o", "prog", "prog.c"], cwd=d, check=True)
    subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", "--log-file=prog.lackey",
                    "./prog"], cwd=d, check=True, capture_output=True)
    return d, d / "prog", d / "prog.lackey"


# ------------------------------------------------------------------ readers keep the ips
def test_lackey_accesses_carry_their_instruction():
    lines = [" L 1000,8", "I  401000,3", " L 2000,8", " S 2008,8", "I  401003,4",
             "I  401007,4", " M 3000,4", " L 4000,128"]
    p = read_lackey(lines)
    # the load before any I record has no instruction; a modify's load and store share its
    # I; a 128-byte access's two pieces too
    assert p.ops[:, COL_SRC].tolist() == [0, 0x401000, 0x401000, 0x401007, 0x401007,
                                          0x401007, 0x401007]


def test_din_accesses_carry_their_instruction_fetch():
    p = read_din(["0 10", "2 401000", "0 20 8", "1 28", "2 0x401005", "1 30"])
    assert p.ops[:, COL_SRC].tolist() == [0, 0x401000, 0x401000, 0x401005]


def test_the_ip_carries_across_chunks(tmp_path):
    from isa.traces import iter_lackey
    lines = ["I  401000,3", " L 2000,8", " L 2008,8", " L 2010,8"]
    ips = [int(x) for c in iter_lackey(lines, chunk_lines=2) for x in c.program.ops[:, COL_SRC]]
    assert ips == [0x401000] * 3


def test_without_binary_rows_name_the_instruction_address(tmp_path, capsys):
    t = tmp_path / "t.lackey"
    t.write_text("I  401000,3\n L 2000,8\nI  401003,3\n L 9000,8\n L 9040,8\n")
    r = json.loads(run_cli(capsys, "profile", "--trace", str(t), "--json"))
    funcs = next(iter(r["profiles"].values()))["functions"]
    assert funcs["0x401000"]["loads"] == 1 and funcs["0x401003"]["loads"] == 2


# ------------------------------------------------------------------ cachegrind's options
@pytest.mark.parametrize("argv, message", [
    (["--I1", "32768,8,64"], "--I1 32768,8,64: the emulator models the data side only"),
    (["--D1", "32768,8,32"], "line size 32: the emulator's lines are 64 B"),
    (["--D1", "32768,8"], "want SIZE,ASSOC,LINE_SIZE"),
    (["--two-level", "--L2", "262144,8,64"], "--L2 with --two-level"),
    (["--D1", "32768,8,64", "--set", "cache.l1d.ways=4"], "which --set sets too"),
    (["--load-base", "0x1000"], "--load-base places --binary PROG"),
])
def test_bad_cache_options_are_one_clear_error(tmp_path, capsys, argv, message):
    t = tmp_path / "t.lackey"
    t.write_text(" L 2000,8\n")
    assert main(["trace", str(t), *argv]) != 0
    out, err = capsys.readouterr()
    assert message in err and "Traceback" not in err


def test_cache_options_set_the_profile_with_their_provenance(tmp_path, capsys):
    t = tmp_path / "t.lackey"
    t.write_text(" L 2000,8\n S 2040,8\n")
    r = json.loads(run_cli(capsys, "trace", str(t), "--json", "--two-level",
                           "--D1", "16384,4,64", "--LL", "1048576,16,64", *NO_PREFETCH))
    assert list(r["levels"]) == ["l1d", "l2"]
    src = r["profile_sources"]
    d1 = [v for k, v in src.items() if k.endswith("cache.l1d.size_bytes")]
    ll = [v for k, v in src.items() if k.endswith("cache.l2.ways")]
    assert d1 == ["command line --D1 16384,4,64 (cachegrind's size,assoc,line_size)"]
    assert ll == ["command line --LL 1048576,16,64 (cachegrind's size,assoc,line_size)"]
    assert r["levels"]["l1d"]["load_misses"] == 1 and r["levels"]["l1d"]["store_misses"] == 1


# ------------------------------------------------------------------ the real program
@needs_tools
def test_profile_names_the_users_hot_line(traced, capsys):
    d, prog, trace = traced
    cg = d / "emu.cg.out"
    r = json.loads(run_cli(capsys, "profile", "--trace", str(trace), "--binary", str(prog),
                           "--no-functional", "--json", "--cachegrind", str(cg)))
    p = next(iter(r["profiles"].values()))
    top = max(p["lines"], key=lambda row: row["cycles"])
    assert (top["file"], top["line"], top["function"]) == (str(d / "prog.c"), HOT_LINE, "walk")
    assert max(p["functions"], key=lambda f: p["functions"][f]["cycles"]) == "walk"
    # the walk reads 8 passes of N/8 longs, one per line: those loads are the line's
    assert top["loads"] == 8 * (1 << 16) // 8
    # hot lines: the trace's address first, then where --map-trace put it
    assert all(re.fullmatch(r"0x[0-9a-f]+ \(0x[0-9a-f]+\)", h) for h in
               [f"{h['trace_addr']:#x} ({h['addr']:#x})" for h in p["hot_lines"]])
    # cg_annotate annotates the C source line with the emulator's cycles
    ann = subprocess.run(["cg_annotate", str(cg)], capture_output=True, text=True, check=True).stdout
    hot = [ln for ln in ann.splitlines() if ln.rstrip().endswith("/* HOT */")]
    assert len(hot) == 1 and hot[0].split()[0] == f"{top['cycles']:,}"


@needs_tools
def test_profile_text_table_leads_with_the_hot_line(traced, capsys):
    d, prog, trace = traced
    out = run_cli(capsys, "profile", "--trace", str(trace), "--binary", str(prog),
                  "--no-functional", "--lines", "3", "--top", "2")
    first = out.split("source lines")[1].splitlines()[2].split()
    assert first[0].endswith(f"prog.c:{HOT_LINE}") and first[1] == "walk"
    funcs = out.split("\n\n")[1].splitlines()
    assert funcs[1].split()[0] == "walk"


def _straddling(trace):
    """Data accesses of a lackey trace that span two 64 B lines."""
    n = 0
    for ln in open(trace):
        if ln[:1] == " " and ln[1:2] in ("L", "S", "M"):
            a, s = ln[3:].split(",")
            a, s = int(a, 16), int(s)
            n += a // 64 != (a + s - 1) // 64
    return n


@needs_tools
def test_two_level_replay_counts_as_cachegrind(traced, capsys):
    """cachegrind's D1/LL read and write misses, on the same program, geometry and LRU, no
    prefetcher. They may differ by the accesses that span two lines: cachegrind counts one
    miss for such an access if either line misses, the emulator one per line that misses.
    (cachegrind's LL also holds instructions, which a LL this large never evicts data for.)"""
    d, prog, trace = traced
    geo = ["--D1=32768,8,64", "--LL=8388608,16,64", "--I1=32768,8,64"]
    subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", *geo,
                    "--cachegrind-out-file=cg.real", "./prog"], cwd=d, check=True,
                   capture_output=True)
    text = (d / "cg.real").read_text()
    events = re.search(r"^events: (.*)$", text, re.M).group(1).split()
    summary = dict(zip(events, map(int, re.search(r"^summary: (.*)$", text, re.M).group(1).split())))
    r = json.loads(run_cli(capsys, "trace", str(trace), "--two-level", "--D1", "32768,8,64",
                           "--LL", "8388608,16,64", *NO_PREFETCH, "--no-functional", "--json"))
    slack = _straddling(trace)
    for level, cg_read, cg_write in (("l1d", "D1mr", "D1mw"), ("l2", "DLmr", "DLmw")):
        lv = r["levels"][level]
        assert 0 <= lv["load_misses"] - summary[cg_read] <= slack, (level, lv, summary)
        assert 0 <= lv["store_misses"] - summary[cg_write] <= slack, (level, lv, summary)
