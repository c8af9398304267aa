"""The memory side's timing mechanisms, against hand calculations from the profile's numbers.

A write-combining buffer's line sent at cycle t (memmodel._wc) is acknowledged, which is what
SFENCE waits for, at t + wc_ack_ns (+ numa.remote_latency_ns for a remote line), and the
buffer is free again at t + wc_hold_ns (+ numa.remote_hold_ns), each plus any wait for a WPQ
slot. Expected values are computed here from the profile, never taken
from a previous run. NT stores commit from the store buffer in order, one a cycle
(store_commit_cycles), the first a cycle after it dispatches: the k-th NT store of a program
(from 0) reaches its WC buffer at cycle k + 1.
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
# skylake-ddr4 at 2.5 GHz: wc_ack_ns 83.7 ns = round(209.25) = 209 cycles, wc_hold_ns 140.7 ns
# = round(351.75) = 352, write_accept_ns 57.3 ns = round(143.25) = 143, remote_latency_ns
# 54.1 ns = 135, remote_hold_ns 138.8 ns = 347, sfence_cycles 6.
def test_a_lone_nt_line_and_its_fence_wait_for_its_acknowledgement():
    m = machine()
    v = m.profile.values
    ack = cyc(m, v["media"]["dram"]["wc_ack_ns"])
    assert ack == 209
    # the line reaches its buffer at cycle 1: 1 + 209 + 6
    assert nt_stream(m, 0x10000, 1) == 1 + ack + v["instr"]["sfence_cycles"] == 216


def test_a_stream_of_nt_lines_sends_one_line_per_hold_per_buffer():
    # W buffers, each held P cycles: once the first W lines have filled them, line k waits
    # for the buffer line k - W used, so every further W lines take exactly P cycles
    # (issue, 4 movnt a cycle, is far faster); N = 1000 more lines take N / W * P. Both
    # runs end the same acknowledgement after their last line.
    v = machine().profile.values
    w = v["core"]["wc_buffers"]
    p_cyc = cyc(machine(), v["media"]["dram"]["wc_hold_ns"])
    n = 1000
    t1 = nt_stream(machine(), 0x100000, n)
    t2 = nt_stream(machine(), 0x100000, 2 * n)
    assert t2 - t1 == n // w * p_cyc == 100 * 352
    # the bandwidth this predicts: W x 64 B per P, the 4.55 GB/s the value was inferred from
    m = machine()
    gbps = n * 64 / ((t2 - t1) / m.freq_ghz)
    assert gbps == pytest.approx(w * 64 / v["media"]["dram"]["wc_hold_ns"], rel=2e-3)
    assert gbps == pytest.approx(4.55, rel=3e-3)


def test_a_remote_nt_line_adds_the_interconnect():
    m = machine()
    v = m.profile.values
    remote = m.regions["dram1"]["base"]
    ack = cyc(m, v["media"]["dram"]["wc_ack_ns"])
    hold = cyc(m, v["media"]["dram"]["wc_hold_ns"])
    link = cyc(m, v["numa"]["remote_latency_ns"])
    extra = cyc(m, v["numa"]["remote_hold_ns"])
    assert (link, extra) == (135, 347)   # 54.1 ns and 138.8 ns at 2.5 GHz
    sf = v["instr"]["sfence_cycles"]
    # a lone remote line is acknowledged the link's latency later: 1 + 209 + 135 + 6
    assert nt_stream(machine(), remote, 1) == 1 + ack + link + sf == 351
    # in a stream, every W remote lines take P + R: the 2.29 GB/s the value was inferred
    # from (the link's 64 B / 34.3 GB/s = 5 cycles a line never queues them)
    w = v["core"]["wc_buffers"]
    n = 1000
    d = nt_stream(machine(), remote, 2 * n) - nt_stream(machine(), remote, n)
    assert d == n // w * (hold + extra)
    assert n * 64 / (d / m.freq_ghz) == pytest.approx(2.29, rel=3e-3)


def test_the_acknowledgement_waits_for_a_wpq_slot():
    # One channel, a one-entry WPQ drained at 0.64 GB/s: 64 B in 100 ns = 250 cycles.
    # Two lines leave their buffers at cycles 1 and 2. Line 0: accepted at 1 + 143, drained
    # 144..394, acknowledged at 1 + 209 = 210. Line 1: arrives at 2 + 143 = 145, its slot is
    # free at 394 (249 cycles of stall), so it is acknowledged at 2 + 209 + 249 = 460.
    # SFENCE +6.
    m = machine(extra={"media.dram.channels": 1, "media.dram.wpq_entries": 1,
                       "media.dram.write_bw_gbps": 0.64})
    assert cyc(m, 57.3) == 143
    assert nt_stream(m, 0x10000, 2) == 2 + 209 + 249 + 6 == 466
    assert m.stats()["media"]["dram"]["wpq_full_stall_cycles"] == 249


def test_an_acknowledgement_no_later_than_the_accept_is_the_accept():
    # wc_ack_ns = write_accept_ns: a lone line is acknowledged when the controller accepts it
    # (a remote one, the link's latency later), never before
    m = machine(extra={"media.dram.wc_ack_ns": 57.3})
    sf = m.profile.values["instr"]["sfence_cycles"]
    assert nt_stream(m, 0x10000, 1) == 1 + cyc(m, 57.3) + sf
    m = machine(extra={"media.dram.wc_ack_ns": 57.3})
    assert nt_stream(m, m.regions["dram1"]["base"], 1) == 1 + cyc(m, 57.3) + cyc(m, 54.1) + sf
    m = machine(extra={"media.dram.wc_ack_ns": 10.0})
    assert nt_stream(m, 0x10000, 1) == 1 + cyc(m, 57.3) + sf


def test_clwb_write_backs_still_wait_for_the_accept_only():
    # the posting round trip is the WC buffer's: a CLWB write-back is done for SFENCE when
    # the WPQ accepts it (write_accept_ns), as before
    m = machine()
    v = m.profile.values
    m.run(Program().store(0x8000, b"x" * 8))
    m.run(Program().lfence())
    t = m.run(Program().clwb(0x8000).sfence()).cycles
    assert t == cyc(m, v["media"]["dram"]["write_accept_ns"]) + v["instr"]["sfence_cycles"]


# ------------------------------------------------------------------ Optane DIMMs
# cascadelake-optane at 2.2 GHz, one DIMM of the six (4 KiB interleave): a WC buffer's line is
# acknowledged K = round(87.2 x 2.2) = round(191.84) = 192 cycles after it leaves and the
# buffer held P = round(140.7 x 2.2) = 310, WPQ accept A = round(62.3 x 2.2) = 137, 4 WPQ
# entries; the DIMM's bus takes a 64 B write in at 21.3 GB/s: 64 x 2.2 / 21.3 = 6.61 cycles
# (6769 / 1024); the tests of the WPQ behind the intake set it to 2.3 GB/s ([IZ19]'s one-DIMM
# rate, SLOW_BUS), slower than the WC buffers send lines: 61.217 cycles (62687 / 1024); it
# moves a buffered 64 B out at 37.6 / 6 GB/s: 22.47 cycles (23007 / 1024),
# its media writes an XPLine (256 B) at 12.5 / 6 GB/s: 270.34 cycles (276824 / 1024) and
# reads one (random read) in round(305 x 2.2) = 671 cycles, or serves a buffered one in
# round(169.4 x 2.2) = 373.
OPTANE = "cascadelake-optane"
FP = 1024
BUS_IN_FP, IN_FP, BUS_FP, WR_FP = 6769, 62687, 23007, 276824
SLOW_BUS = {"media.optane.bus_gbps": 2.3}


def cdiv(x):
    return -(-x // FP)


def test_optane_constants_are_the_profile_s():
    m = machine(OPTANE)
    o = m.profile.values["media"]["optane"]
    assert (cyc(m, o["wc_ack_ns"]), cyc(m, o["wc_hold_ns"]), cyc(m, o["write_accept_ns"]),
            o["wpq_entries"]) == (192, 310, 137, 4)
    assert round(64 * 2.2 / o["bus_gbps"] * FP) == BUS_IN_FP
    assert round(64 * 2.2 / 2.3 * FP) == IN_FP
    assert round(64 * 2.2 / (o["read_bw_gbps"] / o["channels"]) * FP) == BUS_FP
    assert round(256 * 2.2 / (o["write_bw_gbps"] / o["channels"]) * FP) == WR_FP
    assert (cyc(m, o["read_latency_ns"]), cyc(m, o["buffer_read_latency_ns"])) == (671, 373)


def dimm(m, k, page=0):
    """Address of the k-th 64 B line of the page-th 4 KiB block of DIMM 0 (the interleave
    puts every sixth 4 KiB block on it), 1 GiB into pmem0."""
    return m.regions["pmem0"]["base"] + (1 << 30) + page * 6 * 4096 + 64 * k


def test_an_optane_burst_queues_in_the_wpq_at_the_dimm_s_intake_rate():
    # 8 lines of one 4 KiB block + SFENCE. Line k leaves its WC buffer at k + 1 (commits, one
    # a cycle). Lines 0-3 are accepted at 138..141 and taken in one after another from 138:
    # their WPQ slots are free at cdiv(138 x 1024 + (j + 1) x 62687) = 200, 261, 322, 383.
    # Line 4+j arrives at 5 + j + 137 = 142 + j and waits for slot j: acknowledged at
    # (5 + j) + 192 + (slot_j - (142 + j)) = slot_j + 55: 255, 316, 377, 438. The fence
    # ends at 438 + 6.
    m = machine(OPTANE, SLOW_BUS)
    slots = [cdiv(138 * FP + (j + 1) * IN_FP) for j in range(4)]
    assert slots == [200, 261, 322, 383]
    acked = [s + 55 for s in slots]
    p = Program()
    for k in range(8):
        p.movnt(dimm(m, k), size=64, value=1)
    assert m.run(p.sfence()).cycles == acked[-1] + 6 == 444
    assert m.stats()["media"]["optane"]["wpq_full_stall_cycles"] == \
        sum(s - (142 + j) for j, s in enumerate(slots)) == 592


def test_a_clwb_burst_goes_through_the_same_wpq_and_intake():
    # Lines of DIMM 0 stored (cached, dirty), then written back by back-to-back CLWBs and an
    # SFENCE. The flush unit issues a CLWB a cycle: write-back j is accepted at a + j for
    # j < 4 (a: the first accept), and is done for SFENCE then. Write-back 4 + j waits for
    # WPQ slot j, free when the DIMM has taken line j in: slot 3 at cdiv(a x 1024 +
    # 4 x 62687) = a + 245. So 8 write-backs end 245 - 3 = 242 cycles after 4 do: the same
    # intake NT lines go through (the last test), not a write-back's own route.
    def burst(lines):
        m = machine(OPTANE, SLOW_BUS)
        p = Program()
        for k in range(lines):
            p.store(dimm(m, k), b"x" * 64)
        m.run(p.work(20000))
        p = Program()
        for k in range(lines):
            p.clwb(dimm(m, k))
        return m.run(p.sfence(), drain=False).cycles, m.stats()["media"]["optane"]
    (t4, c4), (t8, c8) = burst(4), burst(8)
    assert t8 - t4 == cdiv(4 * IN_FP) - 3 == 242
    assert (c4["wpq_full_stall_cycles"], c8["line_writes"]) == (0, 8)
    assert c8["wpq_full_stall_cycles"] > 0


def test_a_longer_optane_burst_is_taken_at_the_dimm_s_intake_rate():
    # The DIMM takes a line every 61.2 cycles, slower than the 10 WC buffers send them (one
    # every 310 / 10 = 31): past the first lines every write waits for a WPQ slot, and each
    # further line adds one intake time (120 lines are 30 XPLines: the 64-entry XPBuffer
    # takes them all, the media writes them in the background). 60 more lines: 60 x 61.2
    # cycles, within a cycle of rounding.
    def burst(lines):
        m = machine(OPTANE, SLOW_BUS)
        p = Program()
        for k in range(lines):
            p.movnt(dimm(m, k % 64, k // 64), size=64, value=1)
        return m.run(p.sfence()).cycles
    assert abs(burst(120) - burst(60) - 60 * IN_FP / FP) <= 1


def test_a_sustained_stream_to_one_dimm_runs_at_its_media_write_rate():
    # Once the 64-entry XPBuffer is full of XPLines waiting for the media, a new XPLine
    # takes the entry of the oldest when its media write is done: one XPLine per 270.34
    # cycles, 64 B x 4 / (270.34 / 2.2 GHz) = 2.08 GB/s (12.5 / 6). The 10 WC buffers send
    # an XPLine's 4 lines in 4 x 310 / 10 = 124 cycles (the bus takes them in 4 x 6.61), so
    # its buffer gains 146 cycles of media work an XPLine and is full after 64 x 270.34 / 146
    # = ~119 XPLines: both streams run past that.
    def stream(xplines):
        m = machine(OPTANE)
        p = Program()
        for k in range(4 * xplines):
            p.movnt(dimm(m, k % 64, k // 64), size=64, value=1)
        return m.run(p.sfence()).cycles
    n = 1024
    d = stream(2 * n) - stream(n)
    assert d == pytest.approx(n * WR_FP / FP, abs=n)   # within a cycle an XPLine (rounding)
    assert n * 256 / (d / 2.2) == pytest.approx(12.5 / 6, rel=5e-3)


def fill_one_xpline(m):
    """4 NT lines (one XPLine) to DIMM 0 and SFENCE: the lines leave at cycles 1-4, are
    accepted at 138-141, taken in by 138 x 1024 + 4 x 62687 = 392060 FP (slot 3 above,
    cycle 382.9: done at 383); the XPLine, whole, is written to the media from 383 x 1024 =
    392192 to 392192 + 276824 = 669016 FP (cycle 653.3). The fence ends when the last line
    is acknowledged, 4 + 192, + 6 = 202."""
    p = Program()
    for k in range(4):
        p.movnt(dimm(m, k), size=64, value=1)
    return p.sfence()


def test_a_read_waits_behind_its_dimm_s_media_writes_and_not_another_s():
    media_busy = 383 * FP + WR_FP
    # a line of another XPLine of DIMM 0, issued at 202: it misses the buffer and reads
    # the media when the XPLine's write is done: 654 + 671
    m = machine(OPTANE, SLOW_BUS)
    assert m.run(fill_one_xpline(m).load(dimm(m, 8))).cycles == cdiv(media_busy) + 671 == 1325
    assert m.stats()["media"]["optane"]["read_queue_cycles"] == cdiv(media_busy) - 202
    # the same on DIMM 1 (the next 4 KiB block): idle media, 202 + 671
    m = machine(OPTANE, SLOW_BUS)
    assert m.run(fill_one_xpline(m).load(dimm(m, 0) + 4096)).cycles == 202 + 671
    # DIMM 0 again where reads do not wait for writes: their own timeline
    m = machine(OPTANE, {"media.optane.reads_wait_for_writes": False})
    assert m.run(fill_one_xpline(m).load(dimm(m, 8))).cycles == 202 + 671


def test_a_read_of_the_just_written_xpline_is_served_from_the_buffer():
    # the XPBuffer holds the XPLine whole: a read of it needs the DIMM's bus, not the media,
    # whose write of it is still going on; the bus is taking line 3 in until 392060 FP
    # (cycle 382.9), so the read, issued at 202, starts at 383: 383 + 373
    m = machine(OPTANE, SLOW_BUS)
    assert m.run(fill_one_xpline(m).load(dimm(m, 1))).cycles == cdiv(138 * FP + 4 * IN_FP) \
        + 373 == 756
    assert m.stats()["media"]["optane"]["xpbuffer_hits"] == 1


def test_a_chunk_of_an_xpline_still_being_read_waits_for_its_data():
    # two independent loads of chunks 0 and 1 of one XPLine both issue at cycle 0 (a lone
    # load of DIMM 0 returns at 0 + 671). The first misses the buffer: the media reads the
    # XPLine and its data is back at 0 + 671. The second finds the entry, but the buffer
    # does not hold the bytes yet: its data is the first's, at max(0 + 373, 671) = 671,
    # not 0 + 373. WORK of 1000 cycles on the second's data ends at 671 + 1000 = 1671.
    m = machine(OPTANE)
    p = Program().load(dimm(m, 0)).load(dimm(m, 1)).work(1000, dependent=True)
    assert m.run(p).cycles == 671 + 1000 == 1671
    c = m.stats()["media"]["optane"]
    assert (c["xpline_reads"], c["xpbuffer_hits"]) == (1, 1)
    # issued once the XPLine is in (its address from the first's data, at 671), the second
    # is a plain buffered read: 671 + 373 = 1044
    m = machine(OPTANE)
    assert m.run(Program().load(dimm(m, 0)).load(dimm(m, 1), dependent=True)).cycles \
        == 671 + 373 == 1044


def test_a_whole_xpline_rewritten_before_its_media_write_begins_joins_it():
    # XPLines a, b, c written whole, then c again: a's media write starts at 227, b's and
    # c's queue behind it (from 497.3 and 767.6); c's second copy (lines 12-15, which leave
    # from cycle 310 on as the first buffers are posted, and reach the DIMM ~137 cycles
    # later) is whole before c's media write begins, so that write takes it: three media
    # writes, not four. An XPLine written whole after the media is idle is a fourth.
    # The intake is set to the bus's read rate (64 B in 22.47 cycles, 37.6 / 6 GB/s) so
    # that the media, not the intake, is what the XPLines queue for.
    fast = {"media.optane.bus_gbps": 37.6 / 6}
    m = machine(OPTANE, fast)
    p = Program()
    for x in (0, 1, 2, 2):
        for k in range(4):
            p.movnt(dimm(m, 4 * x + k), size=64, value=1)
    m.run(p.sfence())
    c = m.stats()["media"]["optane"]
    assert (c["xpline_writes"], c["read_modify_writes"]) == (3, 0)
    m.run(Program().work(5000))
    m.run(fill_one_xpline(m))   # a, whose media write is long done
    assert m.stats()["media"]["optane"]["xpline_writes"] == 4


def test_a_hot_region_that_fits_the_buffer_is_written_once_per_write():
    # [YA20] Fig. 9: writes to a hot region that fits the XPBuffer reach the media about
    # once each (write amplification ~1.0). 16 XPLines (4 KiB) rewritten whole 8 times,
    # the media idle between rounds: 8 x 16 XPLine writes, and no reads.
    m = machine(OPTANE)
    for _ in range(8):
        p = Program()
        for k in range(64):
            p.movnt(dimm(m, k), size=64, value=1)
        m.run(p.sfence().work(20000))
    c = m.stats()["media"]["optane"]
    assert (c["xpline_writes"], c["xpline_reads"], c["line_writes"]) == (128, 0, 512)


@pytest.mark.parametrize("gap_lines, same", [(4, False), (24, True), (28, False), (48, True)])
def test_a_read_takes_the_channel_its_address_interleaves_to(gap_lines, same):
    """(addr // interleave_bytes) % channels: skylake-ddr4 has 6 channels, 256 B apart, so
    lines 24 (6 x 4) apart share a channel and a second read issued with the first queues
    behind it for the channel's read occupancy; lines 4 or 28 (7 interleaves) apart do not."""
    m = machine()
    o = m.profile.values["media"]["dram"]
    assert (o["channels"], o["interleave_bytes"]) == (6, 256)
    base = 0x100000
    m.run(Program().load(base).load(base + 64 * gap_lines))
    queued = m.stats()["media"]["dram"]["read_queue_cycles"]
    assert (queued > 0) == same
