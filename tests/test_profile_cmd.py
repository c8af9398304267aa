"""`emu profile`: a scenario's and a trace's profile, the cachegrind.out file that valgrind's
own cg_annotate reads, plots, and the errors of bad arguments."""
import json
import os
import re
import shutil
import subprocess

import pytest

from emu.studies import cachegrind
from emu.studies.cli import main

NO_PREFETCH = ["--set", "cache.l1d.prefetcher=none", "--set", "cache.l2.prefetcher=none",
               "--set", "cache.l1d.policy=lru"]
VHOST = ["vhost-tx", "--packets", "64", "--variant", "smap=on,path=uaccess"]


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_scenarios_profile_is_its_runs(capsys):
    code, out, err = _run(capsys, "profile", "dax-memcpy", "--scale", "1e-6", "--json")
    assert code == 0, err
    got = json.loads(out)["profiles"]
    code, out, err = _run(capsys, "run", "dax-memcpy", "--scale", "1e-6", "--json")
    ran = json.loads(out)["variants"]
    assert set(got) == set(ran)
    for v, d in ran.items():   # one machine, one run per variant
        assert got[v]["cycles"] == d["cycles"]
        assert sum(f["cycles"] for f in got[v]["functions"].values()) == d["cycles"]
        assert sum(f["llc_misses"] for f in got[v]["functions"].values()) == d["llc_misses"]


def _conflict_trace(path):
    """din reads: 20 lines once, then 9 lines of one L1D set (4 KiB apart) round-robin ten
    times, which in an 8-way LRU set miss on every access."""
    conflict = [(1 << 20) + k * 4096 for k in range(9)]
    once = [(1 << 24) + 64 * k for k in range(20)]
    path.write_text("".join(f"0 {a:x}\n" for a in once + conflict * 10))
    return conflict


def test_a_traces_hot_lines_are_the_lines_that_keep_missing(capsys, tmp_path):
    f = tmp_path / "conflict.din"
    conflict = _conflict_trace(f)
    code, out, err = _run(capsys, "profile", "--trace", str(f), *NO_PREFETCH, "--top", "9",
                          "--json")
    assert code == 0, err
    (p,) = json.loads(out)["profiles"].values()
    hot = p["hot_lines"]
    assert sorted(h["addr"] for h in hot) == conflict
    assert {h["l1d_misses"] for h in hot} == {10}
    assert p["hot_lines_dropped_misses"] == 0
    assert list(p["functions"]) == ["trace conflict.din"]
    code, out, err = _run(capsys, "profile", "--trace", str(f), *NO_PREFETCH, "--top", "3")
    assert code == 0 and "hot lines (top 3 by L1D misses, then by miss cycles)" in out
    assert f"{conflict[0]:#x}" in out


def test_cg_annotate_reads_the_cachegrind_file(capsys, tmp_path):
    if not shutil.which("cg_annotate"):
        pytest.skip("valgrind's cg_annotate is not installed (.ci/run installs it)")
    cg = tmp_path / "cachegrind.out.vhost"
    code, _, err = _run(capsys, "profile", *VHOST, "--cachegrind", str(cg))
    assert code == 0, err
    code, out, err = _run(capsys, "profile", *VHOST, "--json")
    (prof,) = json.loads(out)["profiles"].values()
    text = cg.read_text()
    events = re.search(r"^events: (.*)$", text, re.MULTILINE).group(1).split()
    assert events == list(cachegrind.EVENT_NAMES)
    summary = dict(zip(events, map(int, re.search(r"^summary: (.*)$", text, re.MULTILINE).group(1).split())))
    assert summary["Cyc"] == prof["cycles"]
    res = subprocess.run(["cg_annotate", "--auto=yes", str(cg)], capture_output=True, text=True,
                         cwd=tmp_path, check=False)
    assert res.returncode == 0, res.stderr
    # the hottest kernel function, and the source of the line that emitted its copy
    vhost_py = os.path.join(os.path.dirname(cachegrind.__file__), "..", "..", "kernels", "vhost.py")
    vhost_py = os.path.realpath(vhost_py)
    assert f"{vhost_py}:copyin (payload)" in res.stdout
    assert f"Auto-annotated source: {vhost_py}" in res.stdout
    line = next(ln for ln in prof["lines"] if ln["function"] == "copyin (payload)")
    with open(line["file"]) as src:
        source = src.read().splitlines()[line["line"] - 1].strip()
    annotated = [r for r in res.stdout.splitlines() if r.rstrip().endswith(source)]
    # cg_annotate sums a source line over the functions that ran it (copyin's lines run for
    # the vnet header's copy and the frame's)
    cycles = sum(ln["cycles"] for ln in prof["lines"]
                 if (ln["file"], ln["line"]) == (line["file"], line["line"]))
    assert annotated and f"{cycles:,}" in annotated[0]


def test_plots_of_a_profile(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    code, out, err = _run(capsys, "profile", "dax-memcpy", "--scale", "1e-6", "--plot",
                          str(tmp_path / "plots"))
    assert code == 0, err
    for name in ("profile-cycles", "profile-regions"):
        for ext, magic in (("png", b"\x89PNG"), ("svg", b"<?xml")):
            data = (tmp_path / "plots" / f"{name}.{ext}").read_bytes()
            assert data.startswith(magic)
    assert out.count("wrote: ") == 4


@pytest.mark.parametrize("argv, words", [
    (["profile", "nope"], ["invalid choice: 'nope'"]),
    (["profile", "vhost-tx", "--variant", "smap=maybe"], ["invalid choice: 'smap=maybe'",
                                                          "smap=on,path=uaccess"]),
    (["profile"], ["SCENARIO or a --trace FILE"]),
    (["profile", "--trace", "x.din", "dax-memcpy"], ["not both"]),
    (["profile", "dax-memcpy", "--cachegrind", "cg.out"], ["--variant", "clflush,numa=local"]),
    (["profile", "dax-memcpy", "--cachegrind", "/no/such/dir/cg.out"], ["/no/such/dir"]),
    (["profile", "dax-memcpy", "--top", "0"], ["--top 0"]),
    (["profile", "--trace", "/no/such.din"], ["/no/such.din"]),
])
def test_bad_arguments_are_errors_naming_them(capsys, argv, words):
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("emu: error: ") and "Traceback" not in err
    for w in words:
        assert w in err, err
