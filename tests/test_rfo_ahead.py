"""Store RFOs ahead of an older flush's write-back (core.rfo_ahead_stores, emu._handlers
rfo_ahead): N pairs of (a store to an uncached line, CLWB of it), then SFENCE. The stores'
RFOs overlap like a run of load misses, so the N lines cost about one memory latency, not N.

The machine: skylake-ddr4 at 2.5 GHz, prefetchers off, timing only, its DRAM on one channel
whose reads wait for its writes (media.dram.reads_wait_for_writes, as the Optane DIMMs of
cascadelake-optane): read_latency_ns 90 = 225 cycles, write_accept_ns 57.3 = round(143.25)
= 143 cycles, sfence_cycles 6; a line occupies the channel 64 B / 105.6 GB/s = 1.52 cycles
to read and 64 B / 76.8 GB/s = 2.08 cycles to write.
"""
from emu import Machine
from isa import Program

LAT, ACCEPT, SFENCE = 225, 143, 6


def pairs_cycles(n, ahead=None):
    over = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none",
            "media.dram.reads_wait_for_writes": True, "media.dram.channels": 1}
    if ahead is not None:
        over["core.rfo_ahead_stores"] = ahead
    m = Machine("skylake-ddr4", over, functional=False)
    v = m.profile.values
    assert (v["media"]["dram"]["read_latency_ns"], v["media"]["dram"]["write_accept_ns"],
            v["instr"]["sfence_cycles"], m.freq_ghz) == (90.0, 57.3, SFENCE, 2.5)
    p = Program()
    for k in range(n):
        p.store(0x100000 + 64 * k, size=8, value=1)
        p.clwb(0x100000 + 64 * k)
    return m.run(p.sfence()).cycles


def test_a_lone_store_and_clwb_pays_one_rfo_then_the_write_back():
    # the RFO leaves at cycle 0 and is back at 225, when the store commits; the CLWB's
    # write-back starts then and is accepted 143 later; SFENCE waits for it: 225 + 143 + 6
    assert pairs_cycles(1) == LAT + ACCEPT + SFENCE == 374


def test_store_misses_before_clwbs_overlap_like_load_misses():
    # N <= the 10 LFBs: all N RFOs leave in the first cycles, back by 225 + N x 1.52
    # (the read side), then N write-backs, the last accepted by 143 + N x 2.08 after the
    # first commit: at most 374 + N x (2 + 3) cycles, against N x 368 when each RFO waits
    # behind the older line's write-back (one memory latency a line)
    n = 8
    assert pairs_cycles(n) <= LAT + ACCEPT + SFENCE + n * (2 + 3) == 414
    assert pairs_cycles(n, ahead=0) >= n * (LAT + ACCEPT) == 2944


def test_rfos_ahead_are_bounded_by_the_key():
    # one ahead: flush k sends store k + 1's RFO before its own write-back, but store
    # k + 2's is sent at flush k + 1, after write-back k took the channel at commit k: the
    # lines go two per memory latency, 4 x (225 + a few) for 8 lines
    n = 8
    assert n // 2 * (LAT + ACCEPT) <= pairs_cycles(n, ahead=1) <= n // 2 * (LAT + ACCEPT + 16)
