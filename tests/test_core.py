"""Exact-cycle, functional, fault, tiny-cache and determinism tests of the compiled core.

Expected values come from the profile's numbers and hand calculation, never from a
previous run: e.g. a load that misses everywhere on an idle machine completes exactly at
the media's load-to-use latency, round(ns * GHz) cycles.
"""
import tomllib
from pathlib import Path

import numpy as np
import pytest

from emu import Machine, UnmappedAccess
from emu.studies.scenarios.common import with_user_region
from isa import Program
from isa.program import ProgramError
from memmodel.profile import load_profile

NO_PF = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}


def machine(profile="skylake-ddr4", extra=None, **kw):
    return Machine(profile, {**NO_PF, **(extra or {})}, **kw)


def cycles_of(m, ns):
    return int(round(ns * m.freq_ghz))


def run1(m, build):
    p = Program()
    build(p)
    return m.run(p).cycles


# ------------------------------------------------------------------ exact cycles
def test_l1_hit_costs_l1_latency():
    m = machine()
    run1(m, lambda p: p.load(0x1000))
    assert run1(m, lambda p: p.load(0x1008)) == 4  # [ILX] L1D 4 cycles, same line


def test_dram_miss_costs_load_to_use_latency():
    m = machine()
    assert run1(m, lambda p: p.load(0x1000)) == cycles_of(m, 90.0)


def test_l2_hit_costs_l2_latency():
    # L1: one set of 2 ways, so three lines evict the first from L1 but not from L2
    m = machine(extra={"cache.l1d.size_bytes": 128, "cache.l1d.ways": 2})
    run1(m, lambda p: p.load(0x0).load(0x40).load(0x80))
    assert run1(m, lambda p: p.load(0x0)) == 14


def test_llc_hit_costs_llc_latency():
    m = machine(extra={"cache.l1d.size_bytes": 128, "cache.l1d.ways": 2,
                       "cache.l2.size_bytes": 256, "cache.l2.ways": 4})
    run1(m, lambda p: [p.load(a * 64) for a in range(6)])
    assert run1(m, lambda p: p.load(0x0)) == 70


def test_optane_random_and_buffered_reads():
    m = machine("cascadelake-optane")
    base = m.regions["pmem0"]["base"]
    assert run1(m, lambda p: p.load(base)) == cycles_of(m, 305.0)
    # the next 64 B of the same 256 B XPLine is served from the on-DIMM buffer
    assert run1(m, lambda p: p.load(base + 64)) == cycles_of(m, 169.4)


def test_nvdimm_n_miss_is_dram_like():
    m = machine("haswell-nvdimm-n")
    base = m.regions["nvdimm0"]["base"]
    nv = m.profile.values["media"]["nvdimm"]["read_latency_ns"]
    assert run1(m, lambda p: p.load(base)) == cycles_of(m, nv)


def test_remote_numa_adds_interconnect_latency():
    m = machine()
    base = m.regions["dram1"]["base"]
    # skylake-ddr4's remote latency, the Gold 6140 MLC output's 144.3 - 90.2 ns
    assert run1(m, lambda p: p.load(base)) == cycles_of(m, 90.0) + cycles_of(m, 54.1)


def test_dependent_loads_serialise_independent_ones_overlap():
    lat = None
    m = machine()
    lat = cycles_of(m, 90.0)
    # 8 independent misses to different channels/lines fit in 10 LFBs: they overlap
    t_indep = run1(m, lambda p: [p.load(0x100000 + i * 4096) for i in range(8)])
    assert lat <= t_indep < 2 * lat
    m = machine()
    t_dep = run1(m, lambda p: [p.load(0x100000 + i * 4096, dependent=True) for i in range(8)])
    assert t_dep == 8 * lat


def test_lfbs_bound_overlapping_misses():
    m = machine()
    lat = cycles_of(m, 90.0)
    lfb = m.profile.values["core"]["lfb_entries"]
    # lfb+1 independent misses: the last waits for the first fill buffer to free
    t = run1(m, lambda p: [p.load(0x200000 + i * 8192) for i in range(lfb + 1)])
    assert t >= 2 * lat


def test_posted_store_miss_does_not_stall_but_finishes_at_rfo():
    m = machine()
    lat = cycles_of(m, 90.0)
    assert run1(m, lambda p: p.store(0x3000, b"\x01")) == lat


# ------------------------------------------------------------------ functional
def test_random_stores_and_copies_match_numpy_model():
    rng = np.random.default_rng(1)
    m = machine()
    size = 3 * 4096 + 100
    base = 0x10000
    model = np.zeros(2 * size, dtype=np.uint8)
    p = Program()
    for _ in range(300):
        kind = rng.integers(0, 5)
        if kind == 0:
            a = int(rng.integers(0, 2 * size - 64))
            data = rng.integers(0, 256, int(rng.integers(1, 65)), dtype=np.uint8)
            p.store(base + a, data)
            model[a:a + len(data)] = data
        elif kind == 1:
            n = int(rng.choice([4, 8, 16, 32, 64]))
            a = int(rng.integers(0, (2 * size - 64) // n)) * n
            data = rng.integers(0, 256, n, dtype=np.uint8)
            p.movnt(base + a, data)
            model[a:a + n] = data
        else:
            n = int(rng.integers(0, 700))
            s = int(rng.integers(0, 2 * size - n))
            d = int(rng.integers(0, 2 * size - n))
            [p.rep_movsb, p.nt_copy, p.careful_copy][kind - 2](base + d, base + s, n)
            for k in range(n):  # forward byte copy, as rep movsb defines overlap
                model[d + k] = model[s + k]
    p.sfence()
    m.run(p)
    assert np.array_equal(np.frombuffer(m.read(base, 2 * size), dtype=np.uint8), model)


def test_store_immediate_is_little_endian():
    m = machine()
    m.run(Program().store(0x500, size=4, value=0x11223344))
    assert m.read(0x500, 4) == bytes([0x44, 0x33, 0x22, 0x11])


def test_memory_grows_with_touched_pages_not_mapped_size():
    m = machine("cascadelake-optane")
    pmem = m.regions["pmem0"]
    assert pmem["size_bytes"] >= 1 << 40
    before = m.frames.nbytes + m.pt.nbytes
    p = Program()
    for i in range(200):
        p.store(pmem["base"] + i * (1 << 30), b"x")  # 200 pages, 1 GiB apart
    m.run(p)
    assert m.read(pmem["base"] + 5 * (1 << 30), 1) == b"x"
    used = m.frames.nbytes + m.pt.nbytes - before
    assert used < 16 * 1024 * 1024  # pages touched x 4 KiB plus tables, not 1.5 TiB
    assert m.S.nbytes < 64 * 1024 * 1024


# ------------------------------------------------------------------ faults
def test_unmapped_access_is_a_precise_fault_and_keeps_state():
    m = machine()
    end = max(r["base"] + r["size_bytes"] for r in m.regions.values())
    p = Program().site("setup").store(0x40, b"ok").load(end + 0x10).store(0x80, b"no")
    with pytest.raises(UnmappedAccess) as e:
        m.run(p)
    assert e.value.op_index == 2 and e.value.addr == end + 0x10 and e.value.site == "setup"
    assert str(end + 0x10) in str(e.value) or hex(end + 0x10) in str(e.value)
    assert m.read(0x40, 2) == b"ok" and m.read(0x80, 2) == b"\0\0"


def test_copy_from_unmapped_source_faults_before_any_effect():
    m = machine()
    end = max(r["base"] + r["size_bytes"] for r in m.regions.values())
    with pytest.raises(UnmappedAccess) as e:
        m.run(Program().rep_movsb(0x1000, end - 64, 128))
    assert e.value.addr == end and e.value.op_index == 0
    assert m.stats()["levels"]["l1d"]["misses"] == 0


# ------------------------------------------------------------------ tiny caches
def test_remainder_without_division_equals_the_remainder():
    """jit.remainder (a float reciprocal, corrected) against Python's %, for counts that are
    not powers of two (Haswell's LLC: 36864 sets; 6 channels), values near their multiples
    and up to and beyond 2**52, where it falls back to %."""
    from memmodel import jit
    rng = np.random.default_rng(5)
    for sets in (3, 6, 12, 36864, 45056, (1 << 20) - 1):
        inv = int(np.float64(1.0 / sets).view(np.int64))
        lines = [0, 1, sets - 1, sets, sets + 1, (1 << 52) - 1, 1 << 52, (1 << 57) + 3]
        lines += [int(q) * sets + d for q in rng.integers(0, (1 << 52) // sets, 300)
                  for d in (-1, 0, 1) if int(q) * sets + d >= 0]
        lines += [int(x) for x in rng.integers(0, 1 << 58, 2000)]
        for line in lines:
            assert jit.remainder(line, sets, inv) == line % sets, (sets, line)


def test_tiny_lru_cache_contents_by_hand():
    # one level of 2 sets x 2 ways: line L goes to set L % 2
    prof = {"profile": {"inherit": "skylake-ddr4"}}
    m = Machine(prof, {**NO_PF, "cache.l1d.size_bytes": 256, "cache.l1d.ways": 2})
    p = Program()
    for line in (0, 2, 0, 4, 1, 3, 5, 3):
        p.load(line * 64)
    m.run(p)
    # set 0: 0,2 -> touch 0 -> 4 evicts 2 (LRU) => {0,4}; set 1: 1,3 -> 5 evicts 1 -> {3,5}
    assert m.cache_contents("l1d") == [[0, 4], [3, 5]]


def test_tiny_fifo_cache_contents_by_hand():
    m = machine(extra={"cache.l1d.size_bytes": 256, "cache.l1d.ways": 2,
                       "cache.l1d.policy": "fifo"})
    p = Program()
    for line in (0, 2, 0, 4):
        p.load(line * 64)
    m.run(p)
    # FIFO ignores the re-use of 0: 4 evicts 0, the oldest fill
    assert m.cache_contents("l1d")[0] == [2, 4]


def test_tiny_plru_cache_contents_by_hand():
    m = machine(extra={"cache.l1d.size_bytes": 256, "cache.l1d.ways": 4,
                       "cache.l1d.policy": "plru"})
    p = Program()
    # one set of 4 ways: fill 0,1,2,3 (ways 0..3), touch 0 -> tree points to the right
    # half, then to way 2 (its left child, as way 3 was filled after way 2): 4 evicts 2
    for line in (0, 1, 2, 3, 0, 4):
        p.load(line * 64)
    m.run(p)
    assert m.cache_contents("l1d") == [[0, 1, 3, 4]]


def test_dirty_victim_is_written_back_to_memory():
    m = machine(extra={"cache.l1d.size_bytes": 64, "cache.l1d.ways": 1,
                       "cache.l2.size_bytes": 64, "cache.l2.ways": 1,
                       "cache.llc.size_bytes": 64, "cache.llc.ways": 1})
    # every level holds one line. The dirty L1 victim moves into L2 (write-back allocate,
    # no fetch); L2's dirty victim moves into the LLC; only the LLC's goes to memory.
    m.run(Program().store(0x0, b"a").load(0x40))
    assert m.dirty_lines("l1d") == [] and m.dirty_lines("l2") == [0]
    m.run(Program().load(0x80))
    assert m.dirty_lines("llc") == [0] and m.stats()["media"]["dram"]["line_writes"] == 0
    m.run(Program().load(0xC0))
    assert m.stats()["media"]["dram"]["line_writes"] == 1


# ------------------------------------------------------------------ determinism
def test_same_program_profile_and_seed_give_identical_results():
    # a 64 KiB L2 under a 256 KiB footprint: the random victims decide which lines hit
    def go(seed):
        m = machine(extra={"cache.l2.policy": "random", "cache.l2.size_bytes": 65536},
                    seed=seed)
        rng = np.random.default_rng(7)
        p = Program()
        p.loads(rng.integers(0, 1 << 18, 2000) // 8 * 8)
        p.stores(rng.integers(0, 1 << 18, 500) // 8 * 8)
        r = m.run(p)
        return r.cycles, m.stats()
    assert go(3) == go(3)
    assert go(3)[1]["levels"]["l2"] != go(4)[1]["levels"]["l2"]


# ------------------------------------------------------------------ prefetchers
def test_next_line_prefetcher_fetches_the_following_line_within_the_page():
    m = Machine("skylake-ddr4", {"cache.l2.prefetcher": "none"})
    m.run(Program().load(0x1000).load(0x1FC0))  # second miss: the last line of the page
    l1 = {line for s in m.cache_contents("l1d") for line in s}
    assert 0x1040 >> 6 in l1          # line after the first miss
    assert 0x2000 >> 6 not in l1      # never across the 4 KiB page
    assert m.stats()["levels"]["l1d"]["prefetch_fills"] == 1


def test_stream_prefetcher_runs_ahead_of_an_ascending_miss_stream():
    m = Machine("skylake-ddr4", {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "stream"})
    deg = m.profile.values["prefetch"]["stream_degree_lines"]
    m.run(Program().load(0x0).load(0x40).load(0x80))  # two confirmations of one stream
    l2 = {line for s in m.cache_contents("l2") for line in s}
    assert m.stats()["levels"]["l2"]["prefetch_fills"] == 2 * deg
    assert set(range(3, 3 + deg)) <= l2


def test_prefetched_line_counts_as_useful_when_demanded():
    m = Machine("skylake-ddr4", {"cache.l2.prefetcher": "none"})
    m.run(Program().load(0x0).load(0x40))
    assert m.stats()["levels"]["l1d"]["prefetch_useful"] == 1


# ------------------------------------------------------------------ media behaviour
def _dimm0_xplines(base, n, dimms=6, interleave=4096, xpline=256):
    """Addresses of n distinct XPLines that all live on the first DIMM of the interleave set."""
    per_page = interleave // xpline
    return [base + (k // per_page) * dimms * interleave + (k % per_page) * xpline for k in range(n)]


def test_optane_partial_xplines_cost_read_modify_writes():
    m = machine("cascadelake-optane")
    media = m.profile.values["media"]["optane"]
    entries = media["xpbuffer_entries"]
    p = Program()
    for a in _dimm0_xplines(m.regions["pmem0"]["base"], 2 * entries):
        p.movnt(a, size=64, value=1)  # one 64 B line of each 256 B XPLine
    m.run(p.sfence())
    c = m.stats()["media"]["optane"]
    # the buffer holds `entries` XPLines; each further one evicts a partially written one
    assert c["read_modify_writes"] == entries and c["xpline_writes"] == entries


def test_optane_whole_xplines_are_written_without_reading():
    m = machine("cascadelake-optane")
    entries = m.profile.values["media"]["optane"]["xpbuffer_entries"]
    p = Program()
    for a in _dimm0_xplines(m.regions["pmem0"]["base"], 2 * entries):
        for k in range(4):
            p.movnt(a + 64 * k, size=64, value=1)
    m.run(p.sfence())
    c = m.stats()["media"]["optane"]
    # every XPLine is written to the media once, when the buffer holds it whole (the
    # buffer combines, [YA20] Fig. 9): 2 x entries media writes, none at its eviction (the
    # evicted XPLines were clean) and no reads
    assert c["read_modify_writes"] == 0 and c["xpline_writes"] == 2 * entries
    assert c["xpline_reads"] == 0


def test_write_bandwidth_bounds_a_stream_of_posted_writes():
    # one channel: every NT line is drained by the same channel at its write bandwidth, and
    # the write-pending queue makes the core wait once it is full
    m = machine(extra={"media.dram.channels": 1, "media.dram.wpq_entries": 4})
    d = m.profile.values["media"]["dram"]
    lines = 2000
    p = Program()
    for i in range(lines):
        p.movnt(0x100000 + 64 * i, size=64, value=i)
    r = m.run(p.sfence())
    per_line = 64 / d["write_bw_gbps"] * m.freq_ghz  # cycles per line at the write bandwidth
    assert r.cycles >= (lines - d["wpq_entries"]) * per_line
    assert m.stats()["media"]["dram"]["wpq_full_stall_cycles"] > 0


# ------------------------------------------------------------------ fences, fast strings
def test_sfence_waits_for_the_nt_line_to_be_acknowledged():
    m = machine()
    d = m.profile.values
    # a full-line movnt dispatched at 0 commits from the store buffer a cycle later (after it
    # retires) into a WC buffer that leaves at once; the fence waits for the line's
    # acknowledgement: wc_ack_ns = 83.7 ns, at 2.5 GHz round(209.25) = 209 cycles (not the
    # WPQ accept, 57.3 ns = 143 cycles, which it includes, nor the buffer's hold, 140.7 ns =
    # 352), then costs its own sfence_cycles (6): 1 + 209 + 6 = 216
    ack = cycles_of(m, d["media"]["dram"]["wc_ack_ns"])
    assert ack == 209 > cycles_of(m, d["media"]["dram"]["write_accept_ns"])
    assert ack < cycles_of(m, d["media"]["dram"]["wc_hold_ns"]) == 352
    t = run1(m, lambda p: p.movnt(0x4000, size=64, value=1).sfence())
    assert t == 1 + ack + d["instr"]["sfence_cycles"] == 216


def test_dependent_work_waits_for_the_loaded_data():
    dram = cycles_of(machine(), 90.0)
    assert run1(machine(), lambda p: p.load(0x1000).work(10)) == dram          # overlaps
    assert run1(machine(), lambda p: p.load(0x1000).work(10, dependent=True)) == dram + 10


def test_dependent_copies_wait_for_the_loaded_address_and_give_their_data():
    from isa.ops import FLAG_DEPENDENT
    dram = cycles_of(machine(), 90.0)

    def copy_after_miss(flags):
        m = machine()
        run1(m, lambda p: p.load(0x8000).load(0x9000))        # source and destination cached
        return run1(m, lambda p: p.load(0x1000).careful_copy(0x9000, 0x8000, 8, flags=flags))
    # dependent: the copy's source load (an L1 hit) starts when the missed load's data is back
    assert copy_after_miss(FLAG_DEPENDENT) >= dram + 4 > copy_after_miss(0)

    def load_after_copy(dependent):
        m = machine()
        run1(m, lambda p: p.load(0x8000).load(0x9000))        # load line, destination cached
        return run1(m, lambda p: p.careful_copy(0x9000, 0x1000, 8).load(0x8000,
                                                                       dependent=dependent))
    # a load that takes its address from the copied data waits for the copy's source (a
    # DRAM miss), then hits L1
    assert load_after_copy(True) >= dram + 4 > load_after_copy(False)


def test_lfence_waits_for_an_outstanding_load():
    m = machine()
    lat = cycles_of(m, 90.0)
    t = run1(m, lambda p: p.load(0x8000).lfence())
    assert t == lat + m.profile.values["instr"]["lfence_cycles"]


def test_clflushes_serialise_clflushopts_overlap():
    lines = 8
    m = machine()
    run1(m, lambda p: [p.load(0xA000 + 64 * i) for i in range(lines)])  # clean, cached
    instr = m.profile.values["instr"]
    t_cl = run1(m, lambda p: [p.clflush(0xA000 + 64 * i) for i in range(lines)])
    assert t_cl == lines * instr["clflush_cycles"]
    m = machine()
    run1(m, lambda p: [p.load(0xA000 + 64 * i) for i in range(lines)])
    t_opt = run1(m, lambda p: [p.clflushopt(0xA000 + 64 * i) for i in range(lines)])
    assert t_opt == lines * instr["clflushopt_cycles"]  # one flush unit: throughput-bound
    assert t_opt < t_cl


def test_rep_movsb_long_copy_writes_whole_lines_without_rfo():
    m = machine()
    thr = m.profile.values["instr"]["rep_movsb_nrfo_threshold_bytes"]
    n = max(thr, 4096)
    m.write(0x20000, bytes(n))
    m.run(Program().load(0x20000).rep_movsb(0x40000, 0x20000, n))
    src_lines = n // 64
    # the source is read (one line was loaded before); the destination is never read
    assert m.stats()["media"]["dram"]["line_reads"] == src_lines
    m2 = machine()
    small = 512
    assert small < thr
    m2.run(Program().rep_movsb(0x40000, 0x20000, small))
    assert m2.stats()["media"]["dram"]["line_reads"] == 2 * small // 64  # source + RFO of dest


def test_address_ranges_beyond_physical_memory_are_rejected_before_running():
    m = machine()
    for p in (Program().load((1 << 63) - 4, size=8),
              Program().rep_movsb(0x1000, 0x2000, 1 << 62),
              Program().rep_movsb(0x1000, (1 << 52) - 8, 64)):
        with pytest.raises(ProgramError, match="52-bit physical address space"):
            m.run(p)
    assert m.stats()["levels"]["l1d"]["misses"] == 0


def test_function_sites_nest_and_charge_self_time():
    m = Machine("skylake-ddr4")
    p = Program()
    with p.function("outer"):
        p.work(10)
        with p.function("inner"):
            p.work(5)
        p.work(7)
    p.work(3)
    m.run(p)
    sites = m.stats()["sites"]
    # self time: the outer function's 10 + 7 cycles, the inner's 5, then "(none)" again
    assert (sites["outer"]["cycles"], sites["inner"]["cycles"]) == (17, 5)
    assert sites["(none)"]["cycles"] == 3


def test_a_loop_site_takes_the_ops_outside_functions_and_the_wait_at_the_end():
    m = Machine("skylake-ddr4")
    p = Program()
    with p.loop("loop"):
        p.work(3)
        with p.function("f"):
            p.work(5)
            p.store(0x10000, size=8, value=1)   # a miss: still draining after the last op
    r = m.run(p)
    sites = m.stats()["sites"]
    assert sites["(none)"]["cycles"] == 0
    assert sites["f"]["cycles"] == 5
    assert sites["loop"]["cycles"] == r.cycles - 5 > 3   # its work and the store's drain
    assert m.read(0x10000, 8) == (1).to_bytes(8, "little")


# ------------------------------------------------------------------ another core
# PEER_WRITE: expected cycles by hand (skylake-ddr4: L1 hit 4, LLC hit 70, peer_hitm_ns 49 at
# 2.5 GHz = 122.5 -> 122 cycles, Python's round half to even)
A = 0x10000
PROFILES = Path(__file__).resolve().parent.parent / "memmodel" / "profiles"


def hitm_cycles(m):
    return int(round(m.profile.get("cache.llc.peer_hitm_ns") * m.freq_ghz))


def test_a_line_another_core_wrote_costs_a_transfer_then_hits_l1():
    m = machine()
    run1(m, lambda p: p.load(A))
    assert run1(m, lambda p: p.load(A)) == 4
    assert run1(m, lambda p: p.peer_write(A, b"PEERPEER")) == 0   # no issue slot here
    assert run1(m, lambda p: p.load(A + 8)) == hitm_cycles(m) == 125   # 49.9 ns at 2.5 GHz = 124.75
    assert run1(m, lambda p: p.load(A + 16)) == 4
    lv = m.stats()["levels"]
    assert lv["llc"]["peer_transfers"] == 1
    assert lv["l1d"]["misses"] == lv["l2"]["misses"] == 2    # the first load and after the write
    assert m.read(A, 8) == b"PEERPEER"


def test_a_transfer_costs_at_least_an_llc_hit():
    m = machine(extra={"cache.llc.peer_hitm_ns": 1.0})
    run1(m, lambda p: p.peer_write(A, size=8, value=7))
    assert run1(m, lambda p: p.load(A)) == 70      # max(LLC hit 70, 2.5 -> 2 cycles)


def test_a_line_never_cached_here_comes_from_the_writer_not_from_dram():
    m = machine()
    run1(m, lambda p: p.peer_write(A, size=8, value=0x1122334455667788))
    assert run1(m, lambda p: p.load(A)) == hitm_cycles(m)
    assert m.stats()["media"]["dram"]["line_reads"] == 0
    assert m.read(A, 8) == (0x1122334455667788).to_bytes(8, "little")


def test_our_dirty_copy_goes_to_the_writer_without_a_memory_write():
    m = machine()
    run1(m, lambda p: p.store(A, b"ourbytes"))
    run1(m, lambda p: p.peer_write(A + 8, b"theirs!!"))
    assert m.stats()["media"]["dram"]["line_writes"] == 0
    assert m.read(A, 16) == b"ourbytestheirs!!"
    assert run1(m, lambda p: p.store(A, b"again...")) == hitm_cycles(m)
    assert m.stats()["levels"]["llc"]["peer_transfers"] == 1


def test_a_write_across_two_lines_takes_both():
    m = machine()
    run1(m, lambda p: p.load(A).load(A + 64))
    run1(m, lambda p: p.peer_write(A + 60, b"12345678"))
    run1(m, lambda p: p.load(A).load(A + 64))
    assert m.stats()["levels"]["llc"]["peer_transfers"] == 2
    assert m.read(A + 60, 8) == b"12345678"


def test_smap_does_not_apply_to_another_cores_write():
    values = load_profile("skylake-ddr4").values
    m = Machine("skylake-ddr4", dict(NO_PF), smap=True, regions=with_user_region(values))
    user = m.regions["user0"]["base"]
    run1(m, lambda p: p.peer_write(user, b"guest!!!"))
    assert m.read(user, 8) == b"guest!!!"


def test_bad_peer_writes_are_refused():
    with pytest.raises(ProgramError, match="65 data bytes not in 1..64"):
        Program().peer_write(A, bytes(65))
    with pytest.raises(ProgramError, match="size 0 not in 1..64"):
        Program().peer_write(A, size=0)
    # a hierarchy of one level has no private level for the writer to take the line from
    raw = tomllib.loads((PROFILES / "skylake-ddr4.toml").read_text())
    l1, llc = raw["cache"]["l1d"], raw["cache"]["llc"]
    raw["cache"] = {"l1d": {**l1, "inclusive": llc["inclusive"],
                            "peer_hitm_ns": llc["peer_hitm_ns"],
                            "peer_hit_ns": llc["peer_hit_ns"]}}
    m = Machine(raw, {"cache.l1d.prefetcher": "none"})
    with pytest.raises(ValueError, match="one level"):
        m.run(Program().peer_write(A, b"x"))


def test_a_line_another_core_read_costs_our_next_store_an_invalidation():
    m = machine()
    line = A >> 6
    run1(m, lambda p: p.store(A, b"mine...."))
    plain = run1(m, lambda p: p.store(A + 8, b"again..."))      # an L1 hit, not shared
    assert run1(m, lambda p: p.peer_read(A, 8)) == 0
    # the modified line was forwarded: clean here, dirty at the last level, shared
    assert line not in m.dirty_lines("l1d") and line in m.dirty_lines("llc")
    assert run1(m, lambda p: p.load(A + 16)) == 4                 # reading a shared line: a hit
    shared = run1(m, lambda p: p.store(A + 24, b"upgrade."))
    # the store's data is ready once the other copy is invalidated instead of after an L1 hit
    assert shared == plain - 4 + hitm_cycles(m)
    assert run1(m, lambda p: p.store(A + 32, b"ours...."))  == plain  # no longer shared
    assert m.stats()["levels"]["l1d"]["peer_upgrades"] == 1
    assert line in m.dirty_lines("l1d")


def test_another_cores_read_of_a_line_not_held_here_changes_nothing():
    m = machine()
    run1(m, lambda p: p.load(A))
    before = [m.cache_contents(lv) for lv in ("l1d", "l2", "llc")]
    run1(m, lambda p: p.peer_read(A + 4096))
    assert [m.cache_contents(lv) for lv in ("l1d", "l2", "llc")] == before


def test_a_store_that_finds_a_shared_line_below_l1_upgrades_there():
    # L1: one set of 2 ways, so two more lines push A out of L1 but not out of L2
    m = machine(extra={"cache.l1d.size_bytes": 128, "cache.l1d.ways": 2})
    run1(m, lambda p: p.load(A))
    run1(m, lambda p: p.peer_read(A))
    run1(m, lambda p: p.load(A + 64).load(A + 128))
    run1(m, lambda p: p.store(A, b"12345678"))
    lv = m.stats()["levels"]
    assert lv["l2"]["peer_upgrades"] == 1 and lv["l1d"]["peer_upgrades"] == 0
    run1(m, lambda p: p.store(A + 8, b"12345678"))                  # unshared since
    assert m.stats()["levels"]["l1d"]["peer_upgrades"] == 0


def test_reading_a_line_another_core_wrote_leaves_it_shared():
    # the writer keeps a shared copy after sending the line: a later store here waits for
    # its invalidation; a store straight after the write takes the line for ownership
    m = machine()
    run1(m, lambda p: p.peer_write(A, b"theirs!!"))
    run1(m, lambda p: p.load(A))
    run1(m, lambda p: p.store(A + 8, b"ours...."))
    assert m.stats()["levels"]["l1d"]["peer_upgrades"] == 1
    m = machine()
    run1(m, lambda p: p.peer_write(A, b"theirs!!"))
    run1(m, lambda p: p.store(A + 8, b"ours...."))
    run1(m, lambda p: p.store(A + 16, b"again..."))
    lv = m.stats()["levels"]
    assert lv["llc"]["peer_transfers"] == 1 and lv["l1d"]["peer_upgrades"] == 0
