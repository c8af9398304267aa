"""The instruction window (issue 13 §1): in-order retirement, stores that commit after they
retire, the load buffer, LFENCE as the SDM words it, WORK as a dependent chain, locked RMWs.

Each test sets up a miss whose latency M is measured alone on the same machine, then checks
what the mechanism implies by hand: whether a second, independent miss overlaps the first
(about M in all) or has to wait for it (about 2 M).
"""
import pytest

from emu import Machine
from isa import Program

NO_PF = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}
A, B, C, D = 0x100000, 0x200000, 0x300000, 0x400000   # distinct lines, sets and pages


def machine(**overrides):
    return Machine("skylake-ddr4", {**NO_PF, **overrides})


def miss_latency():
    """Cycles of one load miss to DRAM on a cold machine."""
    return machine().run(Program().load(A)).cycles


def warm(m, *lines):
    m.run(Program().loads(list(lines)))


def test_a_store_commits_only_after_an_older_miss_completes():
    """Stores behind a load miss stay in the store buffer (56 entries) until the miss
    completes and they retire. 55 of them fit: a later independent miss dispatches at once
    and overlaps the first. 57 do not: the 57th waits for the first to commit, after the
    miss, so the second miss starts only then."""
    M = miss_latency()
    for n, overlapped in ((55, True), (57, False)):
        m = machine()
        warm(m, B)
        p = Program().load(A)
        for k in range(n):
            p.store(B + 8 * (k % 8), size=8)
        t = m.run(p.load(D)).cycles
        if overlapped:
            assert t < 1.3 * M, (n, t, M)
        else:
            assert t > 1.9 * M, (n, t, M)


def test_the_load_buffer_holds_loads_until_they_retire():
    """72 load-buffer entries: a miss and 71 L1 hits behind it fill it; one more load waits
    until the miss retires, so a miss after it no longer overlaps the first."""
    M = miss_latency()
    for hits, overlapped in ((70, True), (72, False)):
        m = machine()
        warm(m, B)
        p = Program().load(A)
        for k in range(hits):
            p.load(B + 8 * (k % 8))
        t = m.run(p.load(D)).cycles
        assert (t < 1.3 * M) if overlapped else (t > 1.9 * M), (hits, t, M)


def test_lfence_waits_for_older_work_and_blocks_younger_loads():
    """A WORK chain of 1000 cycles, then a miss: without a fence the miss dispatches once
    the window has room for it (1000 - ROB cycles in) and overlaps the chain's end; after
    an LFENCE it starts only when the chain is done (SDM: LFENCE executes once every older
    instruction completed, nothing younger before it completes)."""
    m = machine()
    M = miss_latency()
    rob = m.profile.values["core"]["rob_entries"]
    lfence = m.profile.values["instr"]["lfence_cycles"]
    refill = m.profile.values["instr"]["lfence_refill_cycles"]   # the load's issue after it
    free = machine().run(Program().work(1000).load(A)).cycles
    fenced = machine().run(Program().work(1000).lfence().load(A)).cycles
    assert free == pytest.approx(max(1000, 1000 - rob + M), abs=4)
    assert fenced == pytest.approx(1000 + lfence + refill + M, abs=4)


def test_work_overlaps_an_independent_miss_and_follows_a_dependent_one():
    M = miss_latency()
    alone = machine().run(Program().load(A).work(100)).cycles
    after = machine().run(Program().load(A).work(100, dependent=True)).cycles
    assert alone == pytest.approx(max(M, 100), abs=2)
    assert after == pytest.approx(M + 100, abs=2)
    # consecutive WORK ops are one chain: their cycles add up
    assert machine().run(Program().work(300).work(200)).cycles == pytest.approx(500, abs=2)


def test_a_locked_rmw_costs_its_latency_and_drains_the_store_buffer():
    m = machine()
    lock = m.profile.values["instr"]["lock_rmw_cycles"]
    warm(m, B)
    p = Program()
    for _ in range(10):
        p.lock_rmw(B, size=8, value=1)
    t = m.run(p).cycles
    assert 10 * lock <= t <= 10 * lock + 10
    assert m.read(B, 8) == (1).to_bytes(8, "little")
    # a store that misses (its RFO goes to DRAM) holds the locked op back until it commits
    M = miss_latency()
    m = machine()
    warm(m, B)
    t = m.run(Program().store(A, size=8).lock_rmw(B)).cycles
    assert t >= M + lock


def test_stac_serializes_only_when_the_profile_says_so():
    M = miss_latency()
    for serialize, overlapped in ((0, True), (1, False)):
        m = Machine("skylake-ddr4", {**NO_PF, "instr.stac_clac_serialize": serialize}, smap=True)
        t = m.run(Program().load(A).stac().load(D).clac()).cycles
        assert (t < 1.3 * M) if overlapped else (t > 1.9 * M), (serialize, t, M)


def test_nt_stores_wait_for_wc_buffers_in_the_store_buffer_not_at_dispatch():
    """12 full-line NT stores and 10 WC buffers: the 11th waits for a buffer to be free
    again (its hold, wc_hold_ns: P cycles), but in the store buffer, so a chain of four
    dependent misses after them starts at once: the run takes as long as the chain alone.
    Had the 11th stalled dispatch, the chain would start P cycles late."""
    m = machine()
    post = round(m.profile.values["media"]["dram"]["wc_hold_ns"] * m.freq_ghz)

    def chase(p):
        p.load(A)
        for a in (B, C + 0x10000, D):
            p.load(a, dependent=True)
        return p
    p = Program()
    for k in range(12):
        p.movnt(C + 64 * k, size=64, value=k)
    cycles = m.run(chase(p)).cycles
    alone = machine().run(chase(Program())).cycles
    assert alone > 2 * post
    assert cycles <= alone + 10, (cycles, alone, post)


def test_behind_a_miss_the_window_frees_at_the_retire_width():
    """A miss, then WORK of 2 x ROB uops (one chain, all dispatched at once by the issue
    model), then a load that needs a window slot: the chain's first ROB uops complete while
    the miss is outstanding, but retire only after it, at the retire width: the load's slot
    frees ROB / width cycles after the miss is done (plus the chain's own completions).
    Halving the width doubles that wait."""
    def run(width):
        m = machine(**{"core.retire_uops_per_cycle": width})
        rob = m.profile.values["core"]["rob_entries"]
        p = Program().load(A).work(2 * rob).load(D)
        return m.run(p).cycles, rob
    t4, rob = run(4)
    t2, _ = run(2)
    assert t2 - t4 >= rob // 4 - 2


def test_the_op_after_a_draining_lfence_executes_a_refill_later():
    # [SO-LFENCE]: the uops past an LFENCE issue once it retires, so a younger load starts
    # instr.lfence_refill_cycles after the LFENCE's own lfence_cycles; back to back, the next
    # LFENCE's issue is in its own measured cost ([ILX] 4.25 c): no refill between them
    from emu.studies.validate.benchmarks import fence_cycles, lfence_extra_cycles
    from isa.ops import Op
    m = Machine("skylake-ddr4")
    lfence = m.profile.get("instr.lfence_cycles")
    refill = m.profile.get("instr.lfence_refill_cycles")
    assert refill > 0
    assert fence_cycles(Machine("skylake-ddr4"), Op.LFENCE) == pytest.approx(lfence, abs=0.01)
    # a chain of L1D hits, an LFENCE after each: each costs the fence and the refill more
    assert lfence_extra_cycles(m) == pytest.approx(lfence + refill, abs=0.01)
