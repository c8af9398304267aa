"""Branches on loaded values, the branch predictor and nested transient windows.

Expected values come from the semantics of the operations (an unsigned compare of the
loaded bytes, little-endian) and from hand counts of a 2-bit saturating counter (Smith,
"A study of branch prediction strategies", ISCA 1981: counters 0-1 predict "not", 2-3
predict "in", each outcome moves the counter one step towards it).
"""
import numpy as np
import pytest

from emu import Machine
from isa import LOADED, Program, ProgramError
from isa.ops import (
    COL_FLAGS,
    COL_OP,
    COL_SRC,
    FLAG_DEPENDENT,
    FLAG_VALUE_INDEX,
    FLAG_VALUE_LIMIT,
    Op,
)
from kernels import dmapool as dp
from tests.test_dmapool import COSTS, event_ops

BOUND = 0x200000      # an 8-byte variable the branches load
OUT = 0x6000          # a byte the branch bodies store


def _machine(value, functional=True, **kw):
    m = Machine("skylake-ddr4", functional=functional, **kw)
    if functional:
        m.write(BOUND, int(value).to_bytes(8, "little"))
    return m


def _ran(m, index, limit, size=8):
    """Whether the body (a store of b'Y' at OUT) of `if (index < limit)` ran, one operand
    LOADED from BOUND."""
    p = Program().load(BOUND, size)
    with p.guarded(index, limit):
        p.store(OUT, b"Y")
    m.run(p)
    return m.read(OUT, 1) == b"Y"


@pytest.mark.parametrize("value, index, ran", [(16, 5, True), (16, 15, True), (16, 16, False),
                                               (3, 5, False), (0, 0, False)])
def test_branch_on_a_loaded_limit(value, index, ran):
    assert _ran(_machine(value), index, LOADED) == ran


@pytest.mark.parametrize("value, limit, ran", [(5, 16, True), (16, 16, False),
                                               (2**64 - 1, 16, False), (2**63, 2**62, False)])
def test_branch_on_a_loaded_index_is_unsigned(value, limit, ran):
    # the loaded bytes compare as an unsigned 64-bit number: 2**64 - 1 is no small index
    assert _ran(_machine(value), LOADED, limit) == ran


def test_loaded_value_is_its_bytes_only():
    # a 1-byte load of 0x...0105 is 5: in bounds of 16 (the other bytes are not loaded)
    assert _ran(_machine(0x0105), LOADED, 16, size=1)
    assert not _ran(_machine(0x0105), LOADED, 16, size=2)   # 0x105 = 261


def test_without_functional_memory_the_value_is_zero():
    # documented: no bytes are kept, so the loaded value is 0 (0 < 16 holds, 5 < 0 not)
    m = _machine(0, functional=False)
    p = Program().load(BOUND, 8)
    with p.guarded(LOADED, 16):
        p.work(1000)
    p.load(BOUND, 8)
    with p.guarded(5, LOADED):
        p.work(100_000)
    assert 1000 <= m.run(p).cycles < 100_000


def test_an_indexed_load_after_a_value_branch_uses_the_loaded_index():
    m = _machine(7)
    p = Program().load(BOUND, 8)
    with p.guarded(LOADED, 16):
        p.load_indexed(0x1000000, 4096, 1)
    m.run(p)
    assert m.cached(0x1000000 + 7 * 4096) == "l1d"


def test_a_value_branch_resolves_after_the_data():
    # predicted "out", actually in: the penalty follows the branch's resolution, which
    # waits for the bound's miss to memory (more than the LLC's hit time)
    prof = Machine("skylake-ddr4").profile
    penalty = prof.get("instr.branch_mispredict_cycles")
    resolve = prof.get("instr.branch_resolve_cycles")
    cycles = {}
    for guess in (True, False):
        m = _machine(16)
        m.run(Program().clflush(BOUND).mfence())
        cycles[guess] = m.run(Program().load(BOUND, 8).branch(5, LOADED, 0,
                                                              predict_in=guess)).cycles
    llc = prof.get("cache.llc.hit_cycles")
    assert cycles[False] - cycles[True] >= resolve + penalty
    assert cycles[False] >= llc + resolve + penalty


def test_value_comparisons_are_validated():
    with pytest.raises(ProgramError, match="both LOADED"):
        Program().load(BOUND, 8).branch(LOADED, LOADED, 0)
    with pytest.raises(ProgramError, match="both LOADED"):
        Program().load(BOUND, 8).index_mask(LOADED, LOADED)
    with pytest.raises(ProgramError, match="comparison of the previous load's value"):
        Program().store(BOUND, b"a").branch(LOADED, 16, 0).validate()
    with pytest.raises(ProgramError, match="comparison of the previous load's value"):
        Program().load(BOUND, 16).index_mask(5, LOADED).validate()
    with pytest.raises(ProgramError, match="comparison of the previous load's value"):
        Program().branch(5, LOADED, 0).validate()
    ops = Program().load(BOUND, 8).branch(LOADED, 16, 0).ops.copy()
    ops[1, COL_FLAGS] |= FLAG_VALUE_LIMIT
    with pytest.raises(ProgramError, match=r"op 1 \(BRANCH .*\): index and limit both"):
        Program.from_array(ops)
    ops = Program().load(BOUND, 8).work(1).ops.copy()
    ops[1, COL_FLAGS] = FLAG_VALUE_INDEX   # WORK does not compare
    with pytest.raises(ProgramError, match="flag not allowed"):
        Program.from_array(ops)
    # a chain of comparisons of one value is valid: each passes the value on
    Program().load(BOUND, 8).branch(LOADED, 16, 2).index_mask(LOADED, 16) \
        .load_indexed(0x1000, 64, 1).validate()


# -- the branch predictor -------------------------------------------------------------
IP = 0x401000   # a branch site
BIMODAL = {"core.branch_history_bits": 0}   # one counter per site: counted by hand below


def _pattern(outcomes, ip=IP, guesses=None):
    """A branch per outcome (True: in bounds), each guarding a WORK op: all at site `ip`,
    or (guesses given) without an ip, statically predicted as `guesses` say."""
    p = Program()
    for k, inside in enumerate(outcomes):
        kw = {"ip": ip} if guesses is None else {"predict_in": guesses[k]}
        with p.guarded(1 if inside else 5, 3, **kw):
            p.work(2)
    return p


def _counter(m, ip=IP):
    return int(m.layout.view(m.S, "bpred")[ip % m.profile.get("core.branch_predictor_entries")])


def test_a_site_counter_on_a_hand_counted_pattern():
    # T T N T N N N T T from counter 1 (profile branch_counter_init): the counter before
    # each is 1 2 3 2 3 2 1 0 1, so the guesses are N T T T T T N N N and 6 of them are
    # wrong (the 1st, 3rd, 5th, 6th, 8th, 9th); it ends at 2
    outcomes = [True, True, False, True, False, False, False, True, True]
    guesses = [False, True, True, True, True, True, False, False, False]
    assert sum(g != o for g, o in zip(guesses, outcomes)) == 6
    m, ref = Machine("skylake-ddr4", BIMODAL), Machine("skylake-ddr4", BIMODAL)
    assert m.profile.get("core.branch_counter_init") == 1
    r = m.run(_pattern(outcomes))
    assert r.cycles == ref.run(_pattern(outcomes, guesses=guesses)).cycles
    assert m.stats()["sites"] == ref.stats()["sites"]
    assert _counter(m) == 2 and _counter(ref) == 1   # a branch without an ip trains nothing


def test_global_history_learns_an_alternating_pattern():
    # T N T N ...: one counter per site goes 1 2 1 2 ... and guesses every outcome wrong;
    # with 2 history bits (gshare) a T follows history 0b10 and an N 0b01 once the pattern
    # runs, each with a counter of its own: only the 1st and 3rd guesses are wrong (the
    # counters used: T at ip^0 (1, wrong), N at ip^1 (1, right), T at ip^2 (1, wrong),
    # N at ip^1 (0), T at ip^2 (2, right), ...)
    outcomes = [k % 2 == 0 for k in range(12)]
    bimodal = [not o for o in outcomes]
    gshare = [False, False, False] + outcomes[3:]
    for bits, guesses in ((0, bimodal), (2, gshare)):
        over = {"core.branch_history_bits": bits}
        m, ref = Machine("skylake-ddr4", over), Machine("skylake-ddr4", over)
        assert m.run(_pattern(outcomes)).cycles == ref.run(
            _pattern(outcomes, guesses=guesses)).cycles


def test_a_mispredicted_out_costs_the_penalty_without_a_transient_body():
    # a site trained "out" (counter 0), then in bounds: the guess "out" is wrong, the
    # penalty is paid, and no body ran down the wrong path (there is none to run)
    m = Machine("skylake-ddr4", {"core.branch_counter_init": 0, **BIMODAL})
    p = Program()
    with p.guarded(1, 3, ip=IP):
        p.load(0x1000000, 8)
    m.run(p)
    assert m.stats()["sites"]["(none)"]["mispredict"] > 0 and m.transient_lines() == []


def test_predictor_state_is_kept_hashed_and_fast_forwarded():
    m = Machine("skylake-ddr4", BIMODAL)
    before = m.state_hash()
    m.run(_pattern([True] * 3))
    assert m.state_hash() != before and _counter(m) == 3
    m.reset_stats()   # counters of events go; the predictor's state stays, as the caches'
    assert _counter(m) == 3
    # repeated bodies with predicted branches: repeat=N is N runs, fast-forwarded once the
    # counters saturate
    body = _pattern([True, False, True, True])
    over = {"core.branch_history_bits": 3}
    plain, fast = Machine("skylake-ddr4", over), Machine("skylake-ddr4", over)
    for _ in range(50):
        plain.run(body, drain=False)
    end = plain.drain()
    r = fast.run(body, repeat=50)
    assert r.cycles == end and np.array_equal(plain.S, fast.S) and r.fast_forwarded > 0


def test_branch_ips_are_validated():
    with pytest.raises(ProgramError, match="predicted by the branch predictor"):
        Program().branch(1, 2, 0, predict_in=True, ip=IP)
    with pytest.raises(ProgramError, match="negative instruction address"):
        Program().branch(1, 2, 0, ip=-4)
    with pytest.raises(ProgramError, match="not a bool"):
        Program().branch(1, 2, 0, predict_in="yes")
    ops = Program().branch(1, 2, 0, ip=IP).ops.copy()
    ops[0, COL_SRC] = -1
    with pytest.raises(ProgramError, match=r"op 0 \(BRANCH .*\): negative instruction"):
        Program.from_array(ops)


# -- nested transient windows ---------------------------------------------------------
NO_PF = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}
A, B, C = 0x1000000, 0x1100000, 0x1200000   # lines of distinct pages, never used otherwise


def _slow_bound(m, p):
    """The bound (16) comes from memory: an outer branch on it resolves after the miss."""
    m.write(BOUND, (16).to_bytes(8, "little"))
    p.clflush(BOUND).mfence().load(BOUND, 8)


def _transient(inner):
    """Lines filled down the wrong path of an outer branch (99 < *BOUND, guessed in) whose
    body is `inner(p)`."""
    m = Machine("skylake-ddr4", NO_PF)
    p = Program()
    _slow_bound(m, p)
    with p.guarded(99, LOADED):
        inner(p)
    m.run(p)
    return {ln * 64 for ln in m.transient_lines()}


def test_a_nested_branch_keeps_the_window_open():
    # the inner branch also waits for the slow bound (its value passed on): both are
    # pending, the path follows the inner guess (in) into its body and past it
    def inner(p):
        p.load(BOUND, 8)           # an L1D miss too: the inner check resolves after the outer
        with p.guarded(98, LOADED):
            p.load(A, 8)
        p.load(B, 8)
    assert _transient(inner) == {A, B}


def test_a_nested_branch_guessed_out_skips_its_body_on_the_wrong_path():
    def inner(p):
        with p.guarded(5, 3, predict_in=False):   # guessed out, and out: resolved right
            p.load(A, 8)
        p.load(B, 8)
    assert _transient(inner) == {B}


def test_a_nested_branch_guessed_wrong_sends_the_path_the_right_way():
    # 5 < 3 guessed in: it resolves a cycle after issue, long before the outer branch; the
    # wrong inner body is still at its work when it does, so its load never issues, and
    # after the penalty the path goes on past the body, within the outer window
    def inner(p):
        with p.guarded(5, 3, predict_in=True):
            p.work(60)
            p.load(A, 8)
        p.load(B, 8)
    assert _transient(inner) == {B}

    # guessed out but in: the wrong way skips the body (and is at its work when the inner
    # branch resolves); the right way then goes into the body and on past it
    def inner_in(p):
        with p.guarded(1, 3, predict_in=False):
            p.load(A, 8)
        p.work(60)
        p.load(B, 8)
    assert _transient(inner_in) == {A, B}


def test_a_fence_in_a_nested_body_ends_the_window():
    def inner(p):
        with p.guarded(1, 3):
            p.lfence()
            p.load(A, 8)
        p.load(B, 8)
    assert _transient(inner) == set()


def test_transient_branches_do_not_train_the_predictor():
    m = Machine("skylake-ddr4", {**NO_PF, **BIMODAL})
    p = Program()
    _slow_bound(m, p)
    with p.guarded(99, LOADED):
        for _ in range(3):
            with p.guarded(1, 3, ip=IP):
                p.load(A, 8)
    m.run(p)
    assert _counter(m) == 1 and m.transient_lines() == []   # guessed out (1): no body


# -- kernel walks' exits --------------------------------------------------------------
def test_the_maple_scan_exits_are_predicted_branches_after_their_pivots():
    # mtree_lookup_walk: `if (pivots[offset] >= mas->index) break;` after each pivot load.
    # Freeing block 0 of a 8192-block pool (levels of 513, 33, 3, 1 nodes, entry 1): the
    # root and two internal nodes at slot 0 leave at pivot 0 (out), the leaf at slot 1 goes
    # on at pivot 0 (in: 0 < 1) and leaves at pivot 1: branches (index, limit) (0,0) x 3,
    # (0,1), (1,1), each at site IP_MTREE_SCAN, waiting for the pivot loaded just before
    pool = dp.DmaPool("maple", 16, 16, 0, 1 << 32)
    p = dp.dmapool_test_alloc(pool, 8192, COSTS)
    walk = event_ops(p, "mtree_load", 0)
    at = [k for k, row in enumerate(walk) if row[0] == Op.BRANCH]
    assert [walk[k][1:3] for k in at] == [(0, 0), (0, 0), (0, 0), (0, 1), (1, 1)]
    assert all(walk[k - 1][0] == Op.LOAD for k in at)
    ops = p.ops[p.ops[:, COL_OP] == Op.BRANCH]
    assert set(ops[:, COL_SRC].tolist()) == {dp.IP_MTREE_SCAN}
    assert np.all(ops[:, COL_FLAGS] == FLAG_DEPENDENT)


def test_the_page_list_walk_tests_each_page_it_visits():
    # pool_find_block (RFC v2, assumed: one test per page): 12 blocks of 1024 bytes, 4 a
    # page, 3 pages; block 0 is in the oldest page, last in the list (position 2): the walk
    # tests pages 0, 1 (go on) and 2 (stop), each after that page's vaddr load
    pool = dp.DmaPool("list", 1024, 1024, 0, 1 << 32)
    p = dp.dmapool_test_alloc(pool, 12, COSTS)
    walk = event_ops(p, "pool_find_block", 0)
    at = [k for k, row in enumerate(walk) if row[0] == Op.BRANCH]
    assert [walk[k][1:3] for k in at] == [(0, 2), (1, 2), (2, 2)]
    assert [walk[k - 1][1] for k in at] == [int(pool.page(j)) + dp.PAGE_VADDR for j in (2, 1, 0)]
    ops = p.ops[p.ops[:, COL_OP] == Op.BRANCH]
    assert set(ops[:, COL_SRC].tolist()) == {dp.IP_FIND_BLOCK}
