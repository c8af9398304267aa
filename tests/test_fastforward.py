"""Machine.run(program, repeat=N) is bit-identical to the program run N times back to back
(drain=False, then drain()): cycles, every counter, the whole state, memory and the crash
image; and it fast-forwards where the state repeats."""
import numpy as np
import pytest

from emu import Machine
from emu.results import UnmappedAccess
from isa import Program
from isa.ops import Op
from tests.test_timeshift import CONFIGS

# op mixes: loads, dependent loads, stores, SFENCE, MFENCE, WORK, locked ops, LFENCE, CLWB,
# CLFLUSH, NT stores, REP MOVSB. The first two repeat within a few dozen repetitions; the
# others mostly never do (WC buffers and the write-back snapshots in rotation, the fast
# string's fractional cycle), which tests the runs that find no repetition
MIXES = ("ldsSMw", "ldsxwL", "ldscfSMnxwLr")


def _body(base, other, seed, size, mix):
    """A random body of the ops of `mix` over a small footprint (so that it can repeat)."""
    rng = np.random.default_rng(seed)
    p = Program()
    with p.function("body"):
        for i in range(int(rng.integers(20, 120))):
            a = (other if i % 4 == 0 else base) + int(rng.integers(0, size)) // 8 * 8
            k = mix[int(rng.integers(0, len(mix)))]
            if k in "ld":
                p.load(a, dependent=k == "d")
            elif k == "s":
                p.store(a, b"abcdefgh")
            elif k == "n":
                p.movnt(a, b"q" * 8)
            elif k in "cf":
                p.clwb(a) if k == "c" else p.clflush(a)
            elif k in "SML":
                {"S": p.sfence, "M": p.mfence, "L": p.lfence}[k]()
            elif k == "w":
                p.work(int(rng.integers(0, 200)))
            elif k == "x":
                p.lock_rmw(a, b"12345678")
            else:
                p.rep_movsb(base + size + (a & 0xFFF), a, int(rng.integers(1, 3000)))
    return p


def _regions(m):
    regions = list(m.regions.values())
    other = next((r for r in regions if m.profile.values["media"][r["media"]]["kind"] != "dram"),
                 regions[-1])
    return regions[0]["base"], other["base"]


def _same(a, b):
    assert np.array_equal(a.S, b.S)
    assert a.stats() == b.stats()
    assert np.array_equal(a.pt, b.pt) and np.array_equal(a.frames, b.frames)
    ca, cb = a.crash(), b.crash()
    for r in ca.regions.values():
        assert ca.read(r["base"], 1 << 16) == cb.read(r["base"], 1 << 16)


@pytest.mark.parametrize("mix", MIXES)
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("profile, overrides", CONFIGS)
def test_repeat_is_n_runs(profile, overrides, seed, mix):
    plain, fast = Machine(profile, overrides), Machine(profile, overrides)
    base, other = _regions(plain)
    body = _body(base, other, seed, 1 << (10 + seed % 4), mix)
    n = 60 + seed
    r = fast.run(body, repeat=n)
    assert r.cycles == _plain(plain, body, n) and r.ops == n * len(body)
    _same(plain, fast)


def _plain(m, body, n):
    start = m.cycles
    for _ in range(n):
        m.run(body, drain=False)
    return m.drain() - start


# Optane DIMMs taking writes in at one DIMM's sustained rate ([IZ19] 2.3 GB/s) instead of
# their bus's: the fenced write-backs wait for the intake, and the media keeps up
SLOW_INTAKE = {"media.optane.bus_gbps": 2.3}


@pytest.mark.parametrize("profile, over, ff", [
    ("skylake-ddr4", None, True), ("haswell-nvdimm-n", None, True),
    ("cascadelake-optane", SLOW_INTAKE, True), ("cascadelake-optane", None, False)])
def test_a_repeating_copy_is_fast_forwarded(profile, over, ff):
    # a 64 KiB copy written back and fenced, into the last region (DRAM, NVDIMM, Optane):
    # after a few passes each leaves the machine as the one before, moved along its clocks
    # (on Optane with a slow intake the media keeps up); where the media's backlog grows
    # pass by pass (the DIMMs' bus takes writes faster than the media writes them) it never
    # repeats, all of it runs
    plain, fast = Machine(profile, over), Machine(profile, over)
    base = list(plain.regions.values())[-1]["base"]
    body = Program().rep_movsb(base + (1 << 22), base, 1 << 16).flush_range(
        base + (1 << 22), 1 << 16, Op.CLWB).sfence()
    for m in (plain, fast):
        m.write(base, bytes(range(256)) * 256)
    r = fast.run(body, repeat=200)
    assert r.cycles == _plain(plain, body, 200)
    assert (r.fast_forwarded >= 150) if ff else r.fast_forwarded == 0
    _same(plain, fast)


def test_several_cores_run_every_repetition():
    # docs/machine.md: with N > 1 cores nothing is fast-forwarded; the body that repeats on
    # one core (the copy above) runs all its repetitions, as a program of as many copies does
    plain, fast = Machine("skylake-ddr4", cores=2), Machine("skylake-ddr4", cores=2)
    one = Machine("skylake-ddr4")
    base = list(plain.regions.values())[-1]["base"]
    body = Program().rep_movsb(base + (1 << 22), base, 1 << 16).flush_range(
        base + (1 << 22), 1 << 16, Op.CLWB).sfence()
    assert one.run(body, repeat=50).fast_forwarded > 0
    r = fast.run(body, repeat=50)
    assert r.fast_forwarded == 0 and r.cycles == _plain(plain, body, 50)
    _same(plain, fast)


def test_random_bodies_reach_fast_forward():
    # the bit-identity test above is only as good as the bodies that fast-forward in it
    got = []
    for profile, overrides in CONFIGS:
        for seed in range(4):
            m = Machine(profile, overrides)
            base, other = _regions(m)
            got.append(m.run(_body(base, other, seed, 1 << (10 + seed % 4), MIXES[0]),
                             repeat=60 + seed).fast_forwarded)
    assert sum(g > 0 for g in got) >= 12, got


@pytest.mark.parametrize("kw, match", [({"repeat": 0}, "repeat=0"), ({"repeat": 2.0}, "repeat"),
                                       ({"repeat": True}, "repeat")])
def test_bad_repeats(kw, match):
    with pytest.raises(ValueError, match=match):
        Machine("skylake-ddr4").run(Program().load(0), **kw)


def test_rounds_of_drained_runs_with_ways_in_rotation(monkeypatch):
    # dmapool-test's rounds: two programs alternate, each drained; the pair repeats in
    # time, with the caches' ways (LRU's order words renamed with them) and the stream
    # prefetcher's rows in another order each pair. run_rounds == the rounds run one by
    # one, and most pairs are fast-forwarded
    from emu.studies.scenarios import dmapool_test
    from kernels import dmapool
    skipped, run_rounds = [], Machine.run_rounds
    monkeypatch.setattr(Machine, "run_rounds", lambda *a: skipped.append(
        run_rounds(*a)) or skipped[-1])
    got = {ff: dmapool_test.run_row("skylake-ddr4", {}, "list", dmapool.PARMS[0], 30, ff)
           for ff in (True, False)}
    assert got[True] == got[False] and skipped[0].fast_forwarded >= 10, skipped
    progs = [Program().loads(np.arange(0, 1 << 16, 64) + k * 4096) for k in range(2)]
    plain, fast = Machine("skylake-ddr4"), Machine("skylake-ddr4")
    cycles = sum(plain.run(progs[i % 2]).cycles for i in range(80))
    r = fast.run_rounds(progs, 40)
    assert r.cycles == cycles and r.fast_forwarded > 20
    _same(plain, fast)


@pytest.mark.parametrize("profile, overrides", [
    ("skylake-ddr4", {}),
    # a 20-way LRU LLC keeps a stamp per way (memmodel.policies.lru): its stamps move with
    # the ways and along the level's clock, where a 16-way set's order word is renamed
    ("broadwell-ddr4", {"cache.l2.size_bytes": 65536, "cache.llc.size_bytes": 163840})])
def test_streams_through_the_llc_with_its_ways_in_rotation(profile, overrides):
    # 256 KiB of loads a round through a smaller cache: every set's lines move on by a
    # few ways from one pair of rounds to the next
    progs = [Program().loads(np.arange(0, 1 << 18, 64) + k * 4096) for k in range(2)]
    plain, fast = Machine(profile, overrides), Machine(profile, overrides)
    cycles = sum(plain.run(progs[i % 2]).cycles for i in range(60))
    r = fast.run_rounds(progs, 30)
    assert r.cycles == cycles and r.fast_forwarded > 10
    _same(plain, fast)


def test_runs_leave_the_program_as_it_was():
    # the machine's site ids are written into the program's SITE rows for a run and put
    # back after, also when the run faults; the sites still count their own ops
    m = Machine("skylake-ddr4")
    base = _regions(m)[0]
    with (q := Program()).function("first"):
        q.load(base)
    m.run(q)                        # the machine's ids now differ from the program's
    p = Program()
    with p.function("a"):
        p.loads(base + 64 * np.arange(3))
    with p.function("b"):
        p.loads(base + 4096 + 64 * np.arange(5))
    before = p.ops.copy()
    m.run(p)
    m.run_rounds([p, p], 3)
    assert np.array_equal(p.ops, before)
    sites = m.stats()["sites"]
    assert (sites["first"]["loads"], sites["a"]["loads"], sites["b"]["loads"]) == (1, 21, 35)
    with p.function("c"):
        p.load(max(r["base"] + r["size_bytes"] for r in m.regions.values()))   # no region
    before = p.ops.copy()
    with pytest.raises(UnmappedAccess):
        m.run(p)
    assert np.array_equal(p.ops, before)


@pytest.mark.parametrize("k", [1, 2, 7, 64, 101])
def test_power_is_k_applications(k):
    """fastforward._power against the map applied k times one by one, on a word map that
    leaves most words in place (as a cache's ways map does) and moves the others in cycles
    of several lengths."""
    from emu.fastforward import _power
    rng = np.random.default_rng(k)
    n = 500
    P = np.arange(n)
    moved = rng.choice(n, 60, replace=False)
    P[moved] = moved[rng.permutation(60)]
    cs = [rng.integers(-5, 5, n), np.zeros(n, dtype=np.int64)]
    x = rng.integers(0, 1000, n)
    want = [x.copy(), x.copy()]
    for _ in range(k):
        want = [w[P] + c for w, c in zip(want, cs)]
    rp, rcs = _power(P, cs, k)
    for w, rc in zip(want, rcs):
        assert np.array_equal(x[rp] + rc, w)


@pytest.mark.parametrize("profile, overrides", CONFIGS)
def test_fill_buffers_are_kept_in_order_of_their_times(profile, overrides):
    # memmodel._hierarchy.take_lfb: the buffers are one state for one set of times (what
    # lets a body whose misses turn the buffers round repeat word for word); random misses
    # with the prefetchers' fills leave them in order, and busy with different times
    m = Machine(profile, overrides)
    r = next(iter(m.regions.values()))
    rng = np.random.default_rng(1)
    seen = set()
    for _ in range(20):
        lines = rng.integers(0, min(r["size_bytes"] >> 6, 1 << 18), 64)
        m.run(Program().loads(r["base"] + lines * 64), drain=False)
        lfb = m.layout.view(m.S, "lfb")
        assert np.all(np.diff(lfb) >= 0), lfb
        seen.add(len(set(lfb.tolist())))
    assert max(seen) > 1
