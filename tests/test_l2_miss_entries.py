"""The L2's miss entries (cache.l2.mshr_entries, Intel's superqueue): every L2 miss, demand
or L2-streamer prefetch, holds one from its request until its data is back, so at most N
lines are in flight below the L2 and a stream reads at most N x 64 B per memory latency.

The machine is made so that nothing else binds: 1 GHz (a cycle is a ns), 32 fill buffers
(more than N), 64 DRAM channels interleaved by 64 B at 10 TB/s (consecutive lines never
queue on a channel), a 200 ns load-to-use latency.
"""
import numpy as np
import pytest

from emu import Machine
from isa import Program

N = 4          # L2 miss entries
LAT = 200      # cycles: media.dram.read_latency_ns at 1 GHz
FREE = {"core.freq_ghz": 1.0, "core.lfb_entries": 32, "cache.l1d.prefetcher": "none",
        "media.dram.read_latency_ns": float(LAT), "media.dram.read_bw_gbps": 10000.0,
        "media.dram.channels": 64, "media.dram.interleave_bytes": 64}


def machine(entries=N, l2_prefetcher="none"):
    return Machine("skylake-ddr4", {**FREE, "cache.l2.mshr_entries": entries,
                                    "cache.l2.prefetcher": l2_prefetcher})


def misses(m, n):
    """Cycles of n independent loads of fresh lines (each misses every level)."""
    return m.run(Program().loads(0x100000 + np.arange(n, dtype=np.int64) * 64)).cycles


def test_n_misses_overlap_the_next_waits_for_an_entry():
    # N misses issue within a few cycles and overlap: all done before 2 x LAT
    assert misses(machine(), N) < 2 * LAT
    # the (N+1)-th finds every entry busy until the first miss is back (>= LAT), then
    # takes LAT itself
    assert misses(machine(), N + 1) >= 2 * LAT
    # one entry more and it overlaps again
    assert misses(machine(entries=N + 1), N + 1) < 2 * LAT


@pytest.mark.parametrize("l2_prefetcher", ["none", "stream"])
def test_a_stream_reads_n_lines_per_latency(l2_prefetcher):
    # 4096 lines: at most N in flight below the L2 (demand misses wait for an entry, the
    # streamer's prefetches that find none are dropped), so the k-th line's data cannot be
    # back before (k // N + 1) x LAT: the stream takes at least 4096 / N x LAT = 204800
    # cycles, N x 64 B / 200 ns = 1.28 GB/s. Kept busy, it takes little more (the L1 and
    # L2 lookups between one entry's data and the next request: under 5 % here).
    n = 4096
    t = misses(machine(l2_prefetcher=l2_prefetcher), n)
    assert n // N * LAT <= t <= n // N * LAT * 1.05
