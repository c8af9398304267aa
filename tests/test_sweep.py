"""`emu sweep`: the spec's strictness, point ids, serial = process pool = Dask LocalCluster,
an error recorded per point, a SIGKILL mid-way then --resume, and --plot."""
import csv
import json
import os
import signal
import subprocess
import sys
import time
import types

import pytest

from emu.studies import costs, scenarios, sweep
from emu.studies.cli import main
from emu.studies.options import Option
from memmodel.profile import load_profile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------- a fake, fast scenario
def _fake_scenario(calls):
    def run(args):
        calls.append(args.k)
        if args.k == 13:
            raise RuntimeError("unlucky k")
        if args.k == 99:
            os._exit(3)   # a worker process dying, not a point raising
        core = load_profile(args.profile, dict(args.overrides) or None).values["core"]
        m = 2 if args.mode == "y" else 1
        return {"variants": {"a": {"t": core["rob_entries"] * args.k * m, "f": core["freq_ghz"],
                                   "name": "not a number"},
                             "b": {"t": float(args.k) / core["freq_ghz"], "f": 0.5}}}
    return types.SimpleNamespace(
        NAME="fake", METRIC="t", DEFAULT_PROFILE="skylake-ddr4", VARIANTS=("a", "b"),
        SENSITIVE=(), __doc__="fake\n", run=run, table=lambda r: "",
        OPTIONS=(Option("k", int, 1, "k", low=1, high=100),
                 Option("mode", str, "x", "mode", choices=("x", "y"))))


@pytest.fixture
def calls(monkeypatch):
    runs = []
    # the profiles' declared costs are the real scenarios' (costs.declared() keeps the first
    # registry it reads: the fake's, had this test run first, and no profile would load)
    costs.declared()
    monkeypatch.setattr(scenarios, "registry", lambda: {"fake": _fake_scenario(runs)})
    return runs


def write(tmp_path, text, name="spec.toml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


FAKE = """
[sweep]
scenario = "fake"
profiles = ["skylake-ddr4", "broadwell-ddr4"]

[options]
k = { from = 1, to = 4, step = 1 }
mode = ["x", "y"]

[overrides]
"core.freq_ghz" = [2.0, 3.5]
"""


def rows_of(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def key(rows):
    """The rows without their order: sorted by (point_id, variant, metric)."""
    return sorted((tuple(r.items()) for r in rows),
                  key=lambda r: (dict(r)["point_id"], dict(r)["variant"], dict(r)["metric"]))


def sweep_cli(capsys, *argv):
    code = main(["sweep", *argv, "--quiet"])
    out, err = capsys.readouterr()
    return code, out, err


def test_serial_and_pool_give_the_same_rows(capsys, calls, tmp_path):
    spec = write(tmp_path, FAKE)
    got = {}
    for workers in (1, 2):
        out = str(tmp_path / f"w{workers}.csv")
        code, text, err = sweep_cli(capsys, spec, "--out", out, "--workers", str(workers))
        assert code == 0, err
        assert text.startswith("32 points: 32 run, 0 failed")
        got[workers] = rows_of(out)
    assert key(got[1]) == key(got[2])
    rows = got[1]
    assert len({r["point_id"] for r in rows}) == 32
    # per point: variants a and b, each metric t and f ("name" is no number)
    assert len(rows) == 32 * 4 and {r["point_rows"] for r in rows} == {"4"}
    r = next(r for r in rows if r["profile"] == "broadwell-ddr4" and r["k"] == "3"
             and r["mode"] == "y" and r["core.freq_ghz"] == "3.5" and r["variant"] == "a"
             and r["metric"] == "t")
    rob = load_profile("broadwell-ddr4").values["core"]["rob_entries"]
    assert (r["value"], r["status"], r["error"]) == (str(rob * 3 * 2), "ok", "")
    b = next(x for x in rows if x["point_id"] == r["point_id"] and x["variant"] == "b"
             and x["metric"] == "t")
    assert float(b["value"]) == 3 / 3.5   # written with repr: read back exactly


def test_point_ids_are_of_the_resolved_configuration(calls, tmp_path):
    a = sweep.load_spec(write(tmp_path, FAKE))
    assert [p.id for p in a.points] == [p.id for p in sweep.load_spec(write(tmp_path, FAKE, "b.toml")).points]
    assert len({p.id for p in a.points}) == len(a.points)
    for p in a.points:
        assert p.id == sweep.point_id(p.config) and len(p.id) == 12
    # an option at its default is the same configuration as the option not given
    plain = sweep.load_spec(write(tmp_path, '[sweep]\nscenario = "fake"\n', "c.toml"))
    default = sweep.load_spec(write(tmp_path, '[sweep]\nscenario = "fake"\n[options]\nk = [1]\n',
                                    "d.toml"))
    other = sweep.load_spec(write(tmp_path, '[sweep]\nscenario = "fake"\n[options]\nk = [2]\n',
                                  "e.toml"))
    assert plain.points[0].id == default.points[0].id != other.points[0].id
    assert calls == []   # expanding and checking runs nothing


def test_a_point_that_raises_is_recorded_and_the_rest_finish(capsys, calls, tmp_path):
    spec = write(tmp_path, '[sweep]\nscenario = "fake"\nvariants = ["a"]\n'
                           '[options]\nk = [12, 13, 14]\n')
    out = str(tmp_path / "r.csv")
    code, text, err = sweep_cli(capsys, spec, "--out", out, "--workers", "2")
    assert code == 0, err
    assert text.startswith("3 points: 2 run, 1 failed (status=error)")
    rows = rows_of(out)
    bad = [r for r in rows if r["k"] == "13"]
    assert [(r["status"], r["error"], r["variant"], r["point_rows"]) for r in bad] == [
        ("error", "RuntimeError: unlucky k", "", "1")]
    good = [r for r in rows if r["k"] != "13"]
    # only variant a is kept; a point of two metrics
    assert sorted((r["k"], r["variant"], r["metric"]) for r in good) == [
        ("12", "a", "f"), ("12", "a", "t"), ("14", "a", "f"), ("14", "a", "t")]
    assert {r["status"] for r in good} == {"ok"}


def test_a_worker_process_that_dies_stops_the_sweep_and_resume_continues(capsys, calls, tmp_path):
    spec = write(tmp_path, '[sweep]\nscenario = "fake"\n[options]\nk = [1, 99]\n')
    out = str(tmp_path / "r.csv")
    code, text, err = sweep_cli(capsys, spec, "--out", out, "--workers", "2")
    assert (code, text) == (2, "") and "a worker process died" in err and "--resume" in err, err
    assert {r["k"] for r in rows_of(out)} <= {"1"}   # what finished is kept, nothing of k=99


def test_scheduler_without_dask_says_how_to_install_before_running(capsys, calls, tmp_path,
                                                                   monkeypatch):
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    spec = write(tmp_path, '[sweep]\nscenario = "fake"\n')
    code, text, err = sweep_cli(capsys, spec, "--scheduler", "tcp://127.0.0.1:8786")
    assert (code, text) == (2, "")
    assert err == ("emu: error: --scheduler needs dask.distributed: "
                   "pip install 'cacheline-emu[cluster]'\n")
    assert calls == [] and not (tmp_path / "spec.csv").exists()


def test_the_metrics_kept(capsys, calls, tmp_path):
    out = str(tmp_path / "r.csv")
    spec = write(tmp_path, '[sweep]\nscenario = "fake"\nmetrics = ["t"]\n[options]\nk = [1, 2]\n')
    assert sweep_cli(capsys, spec, "--out", out, "--workers", "1")[0] == 0
    assert sorted((r["k"], r["variant"], r["metric"], r["point_rows"]) for r in rows_of(out)) == [
        ("1", "a", "t", "2"), ("1", "b", "t", "2"), ("2", "a", "t", "2"), ("2", "b", "t", "2")]
    # a metric no result has is known only after the run: the point's error names it
    spec = write(tmp_path, '[sweep]\nscenario = "fake"\nmetrics = ["t", "nope"]\n', "n.toml")
    out = str(tmp_path / "n.csv")
    assert sweep_cli(capsys, spec, "--out", out)[0] == 0
    ((r,),) = [rows_of(out)]
    assert r["status"] == "error" and r["error"].startswith("sweep.metrics: no metric 'nope'")


@pytest.mark.parametrize("rows, torn, done", [
    (2, 10, 5),   # the 6th point's 3rd row torn
    (2, 0, 5),    # the 6th point's first 2 rows only, the file ending in a newline
    (0, 10, 6),   # 6 complete points, then a few bytes of the 7th's first row
])
def test_resume_skips_done_points_and_cuts_a_torn_last_point(capsys, calls, tmp_path, rows,
                                                             torn, done):
    spec = write(tmp_path, FAKE)
    out = tmp_path / "r.csv"
    assert sweep_cli(capsys, spec, "--out", str(out), "--workers", "1")[0] == 0
    full = out.read_bytes()
    lines = full.splitlines(keepends=True)
    # a file cut as a cut write would leave it (each point has 4 rows)
    cut = 1 + 5 * 4 + rows if done == 5 else 1 + 6 * 4
    out.write_bytes(b"".join(lines[:cut]) + lines[cut][:torn])
    calls.clear()
    code, text, err = sweep_cli(capsys, spec, "--out", str(out), "--workers", "1", "--resume")
    assert code == 0, err
    assert text.startswith(f"32 points: {32 - done} run, 0 failed (status=error), {done} already in")
    assert len(calls) == 32 - done
    assert key(rows_of(out)) == key(rows_of_bytes(tmp_path, full))
    # once more: nothing to do
    code, text, err = sweep_cli(capsys, spec, "--out", str(out), "--resume")
    assert (code, text.split(":")[1]) == (0, " 0 run, 0 failed (status=error), 32 already in " + str(out)
                                          + "\nresults")


def rows_of_bytes(tmp_path, data):
    p = tmp_path / "expected.csv"
    p.write_bytes(data)
    return rows_of(p)


def test_an_existing_results_file_needs_resume_and_the_same_columns(capsys, calls, tmp_path):
    spec = write(tmp_path, FAKE)
    out = str(tmp_path / "r.csv")
    assert sweep_cli(capsys, spec, "--out", out, "--workers", "1")[0] == 0
    code, text, err = sweep_cli(capsys, spec, "--out", out)
    assert (code, text) == (2, "") and "--resume" in err
    other = write(tmp_path, '[sweep]\nscenario = "fake"\n[options]\nk = [1, 2]\n', "o.toml")
    code, text, err = sweep_cli(capsys, other, "--out", out, "--resume")
    assert (code, text) == (2, "") and "not the results of this spec" in err


@pytest.mark.parametrize("text, named", [
    ('[sweep]\nscenario = "fake"\n[nope]\n', "[nope]"),
    ('[sweep]\nscenario = "fake"\nprofile = "skylake-ddr4"\n', "sweep.profile"),
    ('[sweep]\nscenario = "no-such-study"\n', "no-such-study"),
    ('[sweep]\nscenario = "fake"\n[options]\nk = []\n', "options.k: empty list"),
    ('[sweep]\nscenario = "fake"\n[options]\nk = { from = 5, to = 1, step = 1 }\n',
     "options.k: empty range"),
    ('[sweep]\nscenario = "fake"\n[options]\nk = { from = 1, to = 5, step = 0 }\n',
     "options.k.step"),
    ('[sweep]\nscenario = "fake"\n[options]\nk = { from = 1, to = 5 }\n', "options.k: a range needs step"),
    ('[sweep]\nscenario = "fake"\n[options]\nk = ["many"]\n', "options.k = 'many'"),
    ('[sweep]\nscenario = "fake"\n[options]\nk = [1, 101]\n', "options.k = 101"),
    ('[sweep]\nscenario = "fake"\n[options]\nk = [1, 1]\n', "options.k: 1 given twice"),
    ('[sweep]\nscenario = "fake"\n[options]\nmode = ["z"]\n', "options.mode = 'z'"),
    ('[sweep]\nscenario = "fake"\n[options]\nno-such = [1]\n', "options.no-such"),
    ('[sweep]\nscenario = "fake"\n[options]\nprofile = ["x"]\n', "options.profile"),
    ('[sweep]\nscenario = "fake"\n[overrides]\n"core.rob_entries" = ["many"]\n',
     "core.rob_entries"),
    ('[sweep]\nscenario = "fake"\n[overrides]\n"core.no_such_key" = [1]\n', "no_such_key"),
    ('[sweep]\nscenario = "fake"\n[overrides.core]\nfreq_ghz = { from = 1.0, to = 2.0, step = -1 }\n',
     "overrides.core.freq_ghz.step"),
    ('[sweep]\nscenario = "fake"\nprofiles = ["no-such-profile"]\n', "no-such-profile"),
    ('[sweep]\nscenario = "fake"\nvariants = ["c"]\n', "variant 'c'"),
    ('[sweep]\nscenario = "fake"\nscenarios = ["fake"]\n', "scenario or scenarios"),
    ('[sweep]\nscenario = 3\n', "sweep.scenario"),
    ('[sweep\n', "not valid TOML"),
])
def test_a_malformed_spec_fails_before_any_run_naming_the_key(capsys, calls, tmp_path, text, named):
    spec = write(tmp_path, text)
    out = tmp_path / "r.csv"
    code, stdout, err = sweep_cli(capsys, spec, "--out", str(out))
    assert (code, stdout) == (2, "")
    assert err.startswith(f"emu: error: {spec}") and named in err, err
    assert calls == [] and not out.exists()


def test_the_range_values():
    assert sweep._values("k", {"from": 150, "to": 600, "step": 150}) == [150, 300, 450, 600]
    assert sweep._values("k", {"from": 150, "to": 599, "step": 150}) == [150, 300, 450]
    assert sweep._values("k", {"from": 0.1, "to": 0.3, "step": 0.1}) == [0.1, 0.2, 0.3]
    assert sweep._values("k", 7) == [7]


def test_plot_draws_each_metric_against_each_swept_key(capsys, calls, tmp_path):
    pytest.importorskip("matplotlib")
    spec = write(tmp_path, '[sweep]\nscenario = "fake"\n[options]\nk = [1, 2, 3]\nmode = ["x", "y"]\n'
                           '[overrides]\n"core.freq_ghz" = [2.0]\n')
    out = str(tmp_path / "r.csv")
    code, text, err = sweep_cli(capsys, spec, "--out", out, "--workers", "1",
                                "--plot", str(tmp_path / "p"))
    assert code == 0, err
    # metrics t and f, against k and mode (core.freq_ghz has one value: no plot)
    assert sorted(os.listdir(tmp_path / "p")) == sorted(
        f"sweep-fake-{m}-{k}.{e}" for m in ("t", "f") for k in ("k", "mode") for e in ("png", "svg"))
    assert text.count("plot: ") == 8
    series = sweep.plot_series(sweep.load_spec(spec), rows_of(out))
    assert sorted(series[("fake", "t", "k")]) == ["a, mode=x", "a, mode=y", "b, mode=x", "b, mode=y"]
    rob = load_profile("skylake-ddr4").values["core"]["rob_entries"]
    assert series[("fake", "t", "k")]["a, mode=y"] == [(1.0, 2.0 * rob), (2.0, 4.0 * rob), (3.0, 6.0 * rob)]


def test_parquet_beside_the_csv(capsys, calls, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    spec = write(tmp_path, FAKE.replace("to = 4", "to = 13"))   # k = 13 raises: a row without value
    out = str(tmp_path / "r.csv")
    assert sweep_cli(capsys, spec, "--out", out, "--workers", "1")[0] == 0
    table = pq.read_table(str(tmp_path / "r.parquet")).to_pylist()
    rows = rows_of(out)
    assert len(table) == len(rows)
    assert [t["value"] for t in table] == [float(r["value"]) if r["value"] else None for r in rows]
    assert [t["error"] for t in table] == [r["error"] for r in rows]
    assert any(t["status"] == "error" and t["value"] is None for t in table)
    assert [t["point_id"] for t in table] == [r["point_id"] for r in rows]


# ---------------------------------------------------------------------------- a real scenario
# Dask's workers and a killed subprocess do not see a monkeypatch: a real, tiny study.
REAL = """
[sweep]
scenario = "dax-write-usercopy"
variants = ["memmap=pmem", "bypass"]

[options]
ios = [{ios}]

[overrides]
"media.optane.read_latency_ns" = {values}
"""


def test_a_dask_local_cluster_gives_the_rows_of_serial_and_pool(capsys, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    from emu.machine import Machine
    Machine.warmup()   # the workers load the core from numba's on-disk cache
    # the L1 IP-stride prefetcher off (the study's reading "ip-stride evicted"): the struct
    # page read stays on the path
    spec = write(tmp_path, REAL.format(ios=20, values="[150, 600]")
                 + '"cache.l1d.prefetcher" = ["next_line"]\n')
    got = {}
    for how, extra in (("serial", ["--workers", "1"]), ("pool", ["--workers", "2"])):
        out = str(tmp_path / f"{how}.csv")
        code, _, err = sweep_cli(capsys, spec, "--out", out, *extra)
        assert code == 0, err
        got[how] = rows_of(out)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        out = str(tmp_path / "dask.csv")
        code, _, err = sweep_cli(capsys, spec, "--out", out, "--scheduler",
                                 cluster.scheduler_address)
        assert code == 0, err
        got["dask"] = rows_of(out)
    assert key(got["serial"]) == key(got["pool"]) == key(got["dask"])
    rows = got["serial"]
    assert {r["status"] for r in rows} == {"ok"} and len({r["point_id"] for r in rows}) == 2
    iops = {(r["media.optane.read_latency_ns"], r["variant"]): float(r["value"])
            for r in rows if r["metric"] == "iops"}
    assert set(iops) == {(lat, v) for lat in ("150", "600") for v in ("memmap=pmem", "bypass")}
    # the struct page read of the checked copy is on Optane: slower reads, fewer IOPS
    assert iops[("600", "memmap=pmem")] < iops[("150", "memmap=pmem")]


def test_sigkill_mid_way_then_resume_gives_one_set_of_rows_per_point(capsys, tmp_path):
    values = "{ from = 100, to = 1000, step = 100 }"   # 10 points
    spec = write(tmp_path, REAL.format(ios=300, values=values))
    out = tmp_path / "r.csv"
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "emu.studies.cli", "sweep", spec, "--out",
                             str(out), "--workers", "2", "--quiet"], env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if out.exists() and len(out.read_bytes().splitlines()) > 1 + 10:   # a point or more
                break
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)   # the sweep and its workers
        proc.wait()
    before = rows_of(out)
    assert 0 < len({r["point_id"] for r in before}) < 10
    code, _, err = sweep_cli(capsys, spec, "--out", str(out), "--workers", "2", "--resume")
    assert code == 0, err
    rows = rows_of(out)
    ids = sweep.load_spec(spec).points
    per = {}
    for r in rows:
        per.setdefault(r["point_id"], []).append((r["variant"], r["metric"]))
    assert set(per) == {p.id for p in ids}
    for pid, got in per.items():
        assert len(got) == len(set(got)) == 2 * 6, pid   # 2 variants x 6 metrics, none twice
    assert {r["status"] for r in rows} == {"ok"}


def test_the_sweep_prints_its_results_as_a_table(capsys, calls, tmp_path):
    # fake's metric t of variant a is rob_entries x k (skylake-ddr4: 224 entries), of b
    # k / freq_ghz (2.5): a table of the swept key, variant, metric and value per row
    out = str(tmp_path / "r.csv")
    spec = write(tmp_path, '[sweep]\nscenario = "fake"\nmetrics = ["t"]\n[options]\nk = [1, 2]\n')
    code, text, _ = sweep_cli(capsys, spec, "--out", out, "--workers", "1")
    assert code == 0
    header, *rows = text.split("\n\n")[1].splitlines()
    assert header.split() == ["scenario", "profile", "k", "variant", "metric", "value", "status",
                              "error"]
    assert sorted(tuple(r.split()) for r in rows) == sorted(
        [("fake", "skylake-ddr4", "1", "a", "t", "224", "ok"),
         ("fake", "skylake-ddr4", "1", "b", "t", "0.4", "ok"),
         ("fake", "skylake-ddr4", "2", "a", "t", "448", "ok"),
         ("fake", "skylake-ddr4", "2", "b", "t", "0.8", "ok")])
    # --json holds the same table; to_frame() has every column of the CSV, values as numbers
    code, text, _ = sweep_cli(capsys, spec, "--out", str(tmp_path / "j.csv"), "--workers", "1",
                              "--json")
    table = json.loads(text)["table"]
    assert table["columns"] == header.split()
    assert sorted(r[3:6] for r in table["rows"]) == [["a", "t", "224"], ["a", "t", "448"],
                                                      ["b", "t", "0.4"], ["b", "t", "0.8"]]
    pytest.importorskip("pandas")   # the optional extra .ci/run installs
    f = sweep.SweepResults.read(out).to_frame()
    assert f.shape == (4, 11)   # point_id, scenario, profile, k, then the 7 row columns
    assert sorted(f["value"]) == [0.4, 0.8, 224, 448]
