"""Other cores' traffic on the memory side (Machine(background=...), memmodel.media._channels
background): periodic streams that take the channels' timelines before the core's own
requests, in closed form; exact under time shifts and fast-forward; checked before use."""
import copy

import numpy as np
import pytest

from emu import Machine, timeshift
from emu.studies.fio import FioResult, loaded_run, run_jobs
from emu.studies.scenarios import dax_read_copy_mc as rcm
from emu.studies.scenarios import dax_write_usercopy as dwu
from isa import Program
from kernels.read_write import ksys_pwrite64
from memmodel.layout import MH
from memmodel.media import CH, N_MPARAMS, _dispatch
from memmodel.media import _channels as chn
from memmodel.profile import load_profile
from tests.test_fastforward import _body, _plain, _regions, _same
from tests.test_timeshift import _program

# one DRAM channel at 2 GHz moving a 64-byte line in 10 cycles: 64 B x 2 cycles/ns /
# 12.8 GB/s = 10 cycles = 10240 FP units
ONE_CHANNEL = {"core.freq_ghz": 2.0, "media.dram.channels": 1, "media.dram.read_bw_gbps": 12.8}


def _row(m, addr):
    p = int(m.S[MH.MP])   # media 0: dram
    return p, int(chn.channel_row(m.S, p, addr))


def test_a_read_starts_where_the_closed_form_puts_the_busy_pointer():
    m = Machine("skylake-ddr4", ONE_CHANNEL, background={"dram": {"read_gbps": 6.4}})
    idle = Machine("skylake-ddr4", ONE_CHANNEL)
    lat = round(m.profile.get("media.dram.read_latency_ns") * 2.0)
    p, row = _row(m, 0)
    # background period: 64 B x 2 / 6.4 GB/s = 20 cycles = 20480 FP; occupancy o = 10240
    assert m.S[row + CH.BG_RD_PERIOD] == 20480 and m.S[row + CH.BG_RD_NEXT] == 0
    # a read reaching the channel at cycle 1005 = 1029120 FP: arrivals at 0, 20480, ...
    # up to it: k = 1029120 // 20480 + 1 = 51; busy = max(0 + 51 x 10240,
    # 0 + 50 x 20480 + 10240) = 1034240 FP = cycle 1010 (P >= o: the last arrival's end)
    assert _dispatch.read(m.S, 0, 0, 1005, False, 1) == 1010 + lat
    assert _dispatch.read(idle.S, 0, 0, 1005, False, 1) == 1005 + lat
    # the read holds the channel from 1034240 for 10240; the next arrival is the 52nd,
    # at 51 x 20480 = 1044480
    assert m.S[row + CH.RD_BUSY] == 1034240 + 10240
    assert m.S[row + CH.BG_RD_NEXT] == 51 * 20480


def test_arrivals_faster_than_served_pile_up_from_the_first():
    # the closed form's other branch, on a state set by hand (the API refuses a rate above
    # the peak): period 5120 < o = 10240, first arrival at 1024, busy 0, read at cycle 100
    m = Machine("skylake-ddr4", ONE_CHANNEL)
    p, row = _row(m, 0)
    m.S[row + CH.BG_RD_PERIOD], m.S[row + CH.BG_RD_NEXT] = 5120, 1024
    lat = round(m.profile.get("media.dram.read_latency_ns") * 2.0)
    # k = (102400 - 1024) // 5120 + 1 = 19 + 1 = 20; busy = max(0 + 20 x 10240,
    # 1024 + 20 x 10240) = 205824 FP; start = ceil(205824 / 1024) = 201 (200.999...)
    assert _dispatch.read(m.S, 0, 0, 100, False, 1) == 201 + lat
    assert m.S[row + CH.BG_RD_NEXT] == 1024 + 20 * 5120


def _chase(m, n=400):
    # dependent loads over a large span of the pmem region: every one a media read
    base = m.regions["pmem0"]["base"]
    addrs = base + np.random.default_rng(7).integers(0, 1 << 30, n) // 64 * 64
    p = Program()
    for a in addrs:
        p.load(int(a), dependent=True)
    return m.run(p).cycles


def test_loaded_latency_grows_with_the_background_rate():
    got = [_chase(Machine("cascadelake-optane", background=({"optane": {"read_gbps": r}}
                                                              if r else None)))
           for r in (0, 10, 20, 37)]
    assert got == sorted(got) and len(set(got)) == 4, got
    # writes of other cores load the reads too (Optane reads wait for writes)
    assert _chase(Machine("cascadelake-optane",
                          background={"pmem0": {"write_gbps": 10}})) > got[0]


def test_no_background_is_the_default():
    m = Machine("cascadelake-optane", background={"optane": {"read_gbps": 0}})
    assert m.background is None and _chase(m) == _chase(Machine("cascadelake-optane"))


BG = {"dram": {"read_gbps": 30, "write_gbps": 20}, "optane": {"read_gbps": 8, "write_gbps": 4}}


@pytest.mark.parametrize("seed", range(2))
def test_repeat_with_background_is_n_runs(seed):
    plain, fast = (Machine("cascadelake-optane", background=BG) for _ in range(2))
    base, other = _regions(plain)
    body = _body(base, other, seed, 1 << 12, "ldscfSMnxwLr")
    r = fast.run(body, repeat=40)
    assert r.cycles == _plain(plain, body, 40)
    _same(plain, fast)


def test_a_body_in_the_caches_is_fast_forwarded_with_background():
    # 16 KiB of pmem loaded, then hit in the caches: the channels (and their streams' next
    # arrivals) are left behind, the repetitions repeat
    plain, fast = (Machine("cascadelake-optane", background=BG) for _ in range(2))
    base = plain.regions["pmem0"]["base"]
    body = Program().loads([base + 64 * i for i in range(256)]).work(50)
    r = fast.run(body, repeat=200)
    assert r.fast_forwarded >= 150 and r.cycles == _plain(plain, body, 200)
    _same(plain, fast)


def test_a_shifted_machine_with_background_runs_as_the_original_shifted():
    a = Machine("cascadelake-optane", background=BG)
    base, other = a.regions["dram0"]["base"], a.regions["pmem0"]["base"]
    a.run(_program(base, other, 1))
    b = copy.deepcopy(a)
    deltas = {"cycles": 987_654_321, "uops": 1, "loads": 1, "mem": 1, "stream": 1}
    timeshift.shift(b, deltas)
    assert a.run(_program(base, other, 2)).cycles == b.run(_program(base, other, 2)).cycles
    timeshift.shift(a, deltas)
    assert np.array_equal(a.S, b.S)


@pytest.mark.parametrize("bg, err, match", [
    ([1], TypeError, "must be a dict"),
    ({"nope": {"read_gbps": 1}}, ValueError, "no media or region"),
    ({"optane": {"reads": 1}}, ValueError, "must be a dict of"),
    ({"optane": {"read_gbps": -1}}, ValueError, "finite number >= 0"),
    ({"optane": {"read_gbps": float("nan")}}, ValueError, "finite number >= 0"),
    ({"optane": {"read_gbps": True}}, ValueError, "finite number >= 0"),
    ({"optane": {"write_gbps": 12.6}}, ValueError, "above its write_bw_gbps 12.5"),
    ({"pmem0": {"read_gbps": 20}, "pmem1": {"read_gbps": 20}}, ValueError,
     "40 GB/s of background on media 'optane' is above its read_bw_gbps 37.6"),
])
def test_bad_background_is_refused(bg, err, match):
    with pytest.raises(err, match=match):
        Machine("cascadelake-optane", background=bg)


# ---- fio --jobs N: the others' traffic at the job's own rate (emu.studies.fio.loaded_run)

def _fake_job(values, calls, per_io_bytes=4096, alone_iops=400e3):
    """run_once of a job that writes `per_io_bytes` of Optane an I/O, alone at alone_iops,
    and gets what the background leaves of the media's write peak."""
    peak = values["media"]["optane"]["write_bw_gbps"] * 1e9

    def run_once(bg, n):
        calls.append(bg)
        others = bg["optane"]["write_gbps"] * 1e9 if bg else 0.0
        iops = min(alone_iops, (peak - others) / per_io_bytes) or 1.0
        return FioResult(ios=1, jobs=1, cycles=1, ns_per_io=1e9 / iops, iops=iops, sites={},
                         media={"optane": {"line_reads": 0, "line_writes": per_io_bytes // 64}})
    return run_once


def test_one_job_is_one_plain_run():
    values, calls = load_profile("cascadelake-optane").values, []
    r, loaded = loaded_run(_fake_job(values, calls), values, 1, 8)
    assert calls == [None] and loaded == {"iterations": 0, "search_iterations": 0,
                                          "background": None, "converged": True}
    assert r.iops == 400e3


def test_the_fixed_point_shares_the_peak():
    # 48 jobs writing 4 KiB an I/O, 12.5 GB/s between them: each gets 12.5e9 / 48 / 4096
    # = 63578 IOPS, the others 47 x that = 12.24 GB/s; the first loaded run is there
    values, calls = load_profile("cascadelake-optane").values, []
    r, loaded = loaded_run(_fake_job(values, calls), values, 48, 8)
    share = 12.5e9 / 48 / 4096
    assert loaded["converged"] and 0 <= share - 1e9 / r.ns_per_io <= 0.01 * share
    assert 48 * 4096 * 1e9 / r.ns_per_io <= 12.5e9
    assert loaded["background"]["optane"]["write_gbps"] == pytest.approx(47 * share * 4096 / 1e9)
    assert len(calls) == 1 + loaded["iterations"]


def test_dax_read_copy_mc_48_jobs_read_at_most_the_media_peak():
    # 48 jobs over the 2 sockets' Optane (37.6 GB/s each); the old 1/k channel shares read
    # 99.8 GB/s
    peak = 2 * load_profile("cascadelake-optane").get("media.optane.read_bw_gbps")
    for v in rcm.VARIANTS:
        d = rcm.run_variant("cascadelake-optane", {}, v, 2 << 20, 48, 10, 256 << 20)
        assert 48 * d["pmem_reads_per_io"] * 64 / d["ns_per_io"] <= peak, v
        assert d["jobs_loaded"]["iterations"] >= 1


def test_dax_write_usercopy_48_jobs_write_at_most_the_media_peak():
    # one socket's 6 DIMMs write 12.5 GB/s; the old shares wrote ~34. A run long enough
    # (the default 20000 I/Os) for the DIMMs' backlog to reach the core. The job may
    # end with its DIMMs' XPBuffers full of writes the media has not written yet (6 x 16
    # KiB), so its rate may pass its share by that much over its 20000 x 4 KiB
    peak = load_profile("cascadelake-optane").get("media.optane.write_bw_gbps")
    d = dwu.run_variant("cascadelake-optane", {}, "bypass", 4096, 48, 20000, 1 << 30)
    buffered = 6 * 16 * 1024 / (20000 * 4096)
    assert 48 * d["pmem_writes_per_io"] * 64 / d["ns_per_io"] <= peak * (1 + buffered)


def test_one_job_is_todays_run():
    # --jobs 1: the machine and run of before (no background, no shares)
    d = dwu.run_variant("cascadelake-optane", {}, "memmap=pmem", 4096, 1, 500, 1 << 24)
    m, (f,), user, _ = dwu.build("cascadelake-optane", {}, "memmap=pmem", 1 << 24)
    data = np.random.default_rng(5).integers(0, 256, 4096, dtype=np.uint8)
    m.write(user["base"], data)
    ranges = [(user["base"], user["base"] + user["size_bytes"])]
    r = run_jobs(m, lambda p, k, job: ksys_pwrite64(p, f, user["base"], 4096,
                                                    (k % 4096) * 4096, ranges),
                 500, 1, "write", ramp_ios=50)
    assert d["iops"] == r.iops and d["jobs_loaded"]["iterations"] == 0


def test_reads_and_writes_sharing_optane_s_media_stay_a_stable_queue():
    # Optane reads and writes share each DIMM's media: 8 GB/s of reads and 4 GB/s of writes
    # over 6 DIMMs use 1.33 / 6.27 + 0.67 / 2.08 = 0.53 of it, a stable queue: a chain of
    # dependent reads pays a bounded wait each, so twice the chain takes twice the time
    # (within 20 %). Applying the write stream's window after the read stream's put every
    # write of a long window behind the last read, and the wait grew without bound.
    def chain(n):
        m = Machine("cascadelake-optane", background={"optane": {"read_gbps": 8,
                                                                  "write_gbps": 4}})
        rng = np.random.default_rng(1)
        addrs = m.regions["pmem0"]["base"] + rng.integers(0, 1 << 30, n) // 64 * 64
        p = Program()
        for a in addrs:
            p.load(int(a), dependent=True)
        return m.run(p).cycles
    one, two = chain(150), chain(300)
    assert 1.6 * one <= two <= 2.4 * one
    assert two < 300 * 2 * 671   # under twice an idle read each


def test_the_predicted_loaded_latency_starts_idle_and_grows_with_the_load():
    # docs/validation.md "Loaded latency": with no background a random Optane read is the
    # profile's idle 305 ns (671 cycles at 2.2 GHz, within the chase's cycle rounding); a
    # queue's wait cannot shrink as its load grows
    from emu.studies.validate.loaded import FRACTIONS, loaded_ns
    for kind in ("read", "write"):
        ns = [loaded_ns("optane", kind, f) for f in FRACTIONS]
        assert ns[0] == pytest.approx(671 / 2.2, abs=0.5)
        assert all(a <= b for a, b in zip(ns, ns[1:])) and ns[-1] > ns[0]
