"""The memory side's timing mechanisms, against hand calculations from the profile's numbers.

Write-combining buffers are held for the posting round trip (memmodel._wc): a buffer sent
at cycle t is free again at t + wc_post_ns (+ numa.remote_post_ns for a remote line), plus
any wait for a WPQ slot. Expected values are computed here from the profile, never taken
from a previous run.
"""
import pytest

from emu import Machine
from isa import Program

NO_PF = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}


def machine(profile="skylake-ddr4", extra=None, **kw):
    return Machine(profile, {**NO_PF, **(extra or {})}, functional=False, **kw)


def cyc(m, ns):
    return int(round(ns * m.freq_ghz))


def nt_stream(m, base, lines):
    """Cycles of `lines` full-line NT stores to consecutive lines from `base`, then SFENCE."""
    p = Program()
    for i in range(lines):
        p.movnt(base + 64 * i, size=64, value=1)
    return m.run(p.sfence()).cycles


# ------------------------------------------------------------------ WC buffer posting
def test_one_nt_line_holds_its_buffer_for_the_posting_round_trip():
    m = machine()
    v = m.profile.values
    post = cyc(m, v["media"]["dram"]["wc_post_ns"])    # 140.7 ns at 2.5 GHz: 352 cycles
    assert post == 352
    assert nt_stream(m, 0x10000, 1) == post + v["instr"]["sfence_cycles"]


def test_a_stream_of_nt_lines_sends_one_line_per_round_trip_per_buffer():
    # W buffers, each held P cycles: once the first W lines have filled them, line k waits
    # for the buffer line k - W used, so every further W lines take exactly P cycles
    # (issue, 4 movnt a cycle, is far faster); N = 1000 more lines take N / W * P.
    v = machine().profile.values
    w = v["core"]["wc_buffers"]
    p_cyc = cyc(machine(), v["media"]["dram"]["wc_post_ns"])
    n = 1000
    t1 = nt_stream(machine(), 0x100000, n)
    t2 = nt_stream(machine(), 0x100000, 2 * n)
    assert t2 - t1 == n // w * p_cyc == 100 * 352
    # the bandwidth this predicts: W x 64 B per P, the 4.55 GB/s the value was inferred from
    m = machine()
    gbps = n * 64 / ((t2 - t1) / m.freq_ghz)
    assert gbps == pytest.approx(w * 64 / v["media"]["dram"]["wc_post_ns"], rel=2e-3)
    assert gbps == pytest.approx(4.55, rel=3e-3)


def test_a_remote_nt_line_adds_the_interconnect_round_trip():
    m = machine()
    v = m.profile.values
    remote = m.regions["dram1"]["base"]
    post = cyc(m, v["media"]["dram"]["wc_post_ns"])
    extra = cyc(m, v["numa"]["remote_post_ns"])          # 138.8 ns: 347 cycles
    assert extra == 347
    sf = v["instr"]["sfence_cycles"]
    assert nt_stream(machine(), 0x10000, 1) == post + sf
    assert nt_stream(machine(), remote, 1) == post + extra + sf
    # in a stream, every W remote lines take P + R: the 2.29 GB/s the value was inferred
    # from (the link's 64 B / 34.3 GB/s = 5 cycles a line never queues them)
    w = v["core"]["wc_buffers"]
    n = 1000
    d = nt_stream(machine(), remote, 2 * n) - nt_stream(machine(), remote, n)
    assert d == n // w * (post + extra)
    assert n * 64 / (d / m.freq_ghz) == pytest.approx(2.29, rel=3e-3)


def test_the_post_waits_for_a_wpq_slot():
    # One channel, a one-entry WPQ drained at 0.64 GB/s: 64 B in 100 ns = 250 cycles.
    # Two lines leave their buffers at cycle 0. Line 0: accepted at 0 + 143 (write_accept_ns
    # 57.3 ns), drained 143..393, posted at 0 + 352. Line 1: arrives at 143, its slot is
    # free at 393 (250 cycles of stall), so it is posted 250 cycles late: 602. SFENCE +6.
    m = machine(extra={"media.dram.channels": 1, "media.dram.wpq_entries": 1,
                       "media.dram.write_bw_gbps": 0.64})
    assert cyc(m, 57.3) == 143
    assert nt_stream(m, 0x10000, 2) == 352 + 250 + 6 == 608
    assert m.stats()["media"]["dram"]["wpq_full_stall_cycles"] == 250


def test_posting_no_longer_than_the_accept_is_the_accept():
    # wc_post_ns = write_accept_ns and remote_post_ns = remote_latency_ns give back a buffer
    # held until the controller accepts the line (the model before the posting round trip)
    m = machine(extra={"media.dram.wc_post_ns": 57.3, "numa.remote_post_ns": 59.6})
    v = m.profile.values
    sf = v["instr"]["sfence_cycles"]
    assert nt_stream(m, 0x10000, 1) == cyc(m, 57.3) + sf
    m = machine(extra={"media.dram.wc_post_ns": 57.3, "numa.remote_post_ns": 59.6})
    assert nt_stream(m, m.regions["dram1"]["base"], 1) == cyc(m, 57.3) + cyc(m, 59.6) + sf


def test_clwb_write_backs_still_wait_for_the_accept_only():
    # the posting round trip is the WC buffer's: a CLWB write-back is done for SFENCE when
    # the WPQ accepts it (write_accept_ns), as before
    m = machine()
    v = m.profile.values
    m.run(Program().store(0x8000, b"x" * 8))
    m.run(Program().lfence())
    t = m.run(Program().clwb(0x8000).sfence()).cycles
    assert t == cyc(m, v["media"]["dram"]["write_accept_ns"]) + v["instr"]["sfence_cycles"]
