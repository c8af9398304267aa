"""kernels/qspinlock.py on two to eight cores, and the ops it is built of (WAIT, LOCK
CMPXCHG/XADD/XCHG, recorded values, forward branches): mutual exclusion of a shared counter's
increments, counted by hand; the same increments without the lock lose updates (so the count
can fail), and so do they under the first version's pending path alone with three CPUs (the
race its docstring names); the MCS queue hands the lock over in the order the CPUs queued
(FIFO, Mellor-Crummey and Scott's property that qspinlock.c keeps); a wait that no store can
end stops the run with WaitForever instead of hanging."""
import numpy as np
import pytest

from emu import Machine, WaitForever
from isa import LOADED, Program, ProgramError
from isa.ops import COL_ADDR, COL_OP, COL_SIZE, Op
from kernels.qspinlock import MCS_COUNT, QNodes, encode_tail, spin_lock, spin_unlock

LOCK, COUNTER, QNODES = 0x100000, 0x101000, 0x200000


@pytest.fixture(scope="module")
def two():
    return Machine("skylake-ddr4", cores=2)


def _clear(m):
    m.write(LOCK, bytes(8))
    m.write(COUNTER, bytes(8))


def _increments(n, rng, locked):
    p = Program().work(int(rng.integers(0, 300)))
    for _ in range(n):
        if locked:
            spin_lock(p, LOCK)
        p.load(COUNTER, 8, record="counter").work(int(rng.integers(0, 50)))
        p.store(COUNTER, size=8, value=1, plus_recorded=True)
        if locked:
            spin_unlock(p, LOCK)
        p.work(int(rng.integers(0, 200)))
    return p


@pytest.mark.parametrize("seed", range(4))
def test_two_cores_increment_under_the_lock_exactly_2n_times(two, seed):
    n = 25
    rng = np.random.default_rng(seed)
    _clear(two)
    r = two.run([_increments(n, rng, True), _increments(n, rng, True)])
    assert int.from_bytes(two.read(COUNTER, 8), "little") == 2 * n
    assert two.read(LOCK, 4) == bytes(4)   # unlocked, no pending bit left
    for c in r.cores:   # each core found the lock held at times: the slowpath ran
        assert any(v for k, v in c.values.items() if isinstance(k, int)), c.values


def test_the_same_increments_without_the_lock_lose_some(two):
    n = 25
    counts = []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        _clear(two)
        two.run([_increments(n, rng, False), _increments(n, rng, False)])
        counts.append(int.from_bytes(two.read(COUNTER, 8), "little"))
    assert all(n <= c <= 2 * n for c in counts)
    assert min(counts) < 2 * n, counts


def test_a_locked_add_is_atomic_across_cores(two):
    _clear(two)
    ps = [Program(), Program()]
    for k, p in enumerate(ps):
        p.work(7 * k)
        for _ in range(30):
            p.lock_xadd(COUNTER, 1, 8)
    two.run(ps)
    assert int.from_bytes(two.read(COUNTER, 8), "little") == 60


def test_a_wait_ends_when_the_other_cores_store_lands():
    two = Machine("skylake-ddr4", cores=2)   # both clocks at 0
    r = two.run([Program().work(2000).store(LOCK, size=4, value=5),
                 Program().wait(LOCK, 5, 4, record="seen").load(COUNTER, 8, record="c")])
    assert r.cores[1].values == {"seen": 5, "c": 0}
    assert r.cores[1].cycles > 2000 // 4   # it waited for core 0's WORK, at least issued


def test_waits_no_store_can_end_stop_the_run(two):
    _clear(two)
    with pytest.raises(WaitForever, match="core 0 op 0.*core 1 op 1"):
        two.run([Program().wait(LOCK, 1, 4), Program().store(COUNTER, size=8, value=3)
                 .wait(COUNTER, 4, 8)])
    one = Machine("skylake-ddr4")
    with pytest.raises(WaitForever, match="no other core"):
        one.run(Program().wait(LOCK, 1, 4))


def test_cmpxchg_xadd_and_recorded_values_on_one_core():
    m = Machine("skylake-ddr4")
    m.write(LOCK, (0x1234).to_bytes(4, "little"))
    r = m.run(Program()
              .lock_cmpxchg(LOCK, 0, 7, 4, record="fail")      # finds 0x1234: no write
              .lock_cmpxchg(LOCK, 0x1234, 7, 4, record="ok")   # writes 7
              .lock_xadd(LOCK, -8, 4, record="before")         # 7 - 8 wraps at 4 bytes
              .load(LOCK, 4, record="after")
              .store(COUNTER, size=8, value=100, plus_recorded=True)
              .lock_rmw(COUNTER, size=8, value=9, record="xchg"))
    assert r.values == {"fail": 0x1234, "ok": 0x1234, "before": 7, "after": 0xFFFFFFFF,
                        "xchg": 100 + 0xFFFFFFFF}
    assert m.read(COUNTER, 8) == (9).to_bytes(8, "little")


def test_a_core_forwards_its_own_pending_store_byte_by_byte():
    two = Machine("skylake-ddr4", cores=2)   # both clocks at 0
    two.write(COUNTER, bytes(range(1, 9)))
    r = two.run([Program().store(COUNTER + 2, b"\xaa\xbb").store(COUNTER + 3, b"\xcc")
                 .load(COUNTER, 8, record="mine"),
                 Program().load(COUNTER, 8, record="other")])
    assert r.cores[0].values["mine"] == int.from_bytes(b"\x01\x02\xaa\xcc\x05\x06\x07\x08",
                                                        "little")
    # core 1 loads at the same cycle, before core 0's stores leave its store buffer
    assert r.cores[1].values["other"] == int.from_bytes(bytes(range(1, 9)), "little")
    assert two.read(COUNTER, 8) == b"\x01\x02\xaa\xcc\x05\x06\x07\x08"


@pytest.mark.parametrize("build, why", [
    (lambda p: p.wait(LOCK + 2, 0, 4), "aligned"),
    (lambda p: p.wait(LOCK, 0, 3), "1, 2, 4 or 8"),
    (lambda p: p.lock_xadd(LOCK + 1, 1, 2), "aligned"),
    (lambda p: p.load(LOCK, 16, record=True), "at most 8"),
    (lambda p: p.store(LOCK, size=8, value=1, plus_recorded=True), "no op before it records"),
    (lambda p: p.load(LOCK, 8, flags=2, record=True), "exception-table"),
])
def test_bad_value_ops_are_refused(build, why):
    p = Program()
    build(p)
    with pytest.raises(ProgramError, match=why):
        p.validate()


def test_value_ops_need_functional_memory():
    m = Machine("skylake-ddr4", functional=False)
    with pytest.raises(ValueError, match="functional memory"):
        m.run(Program().load(LOCK, 8, record="x"))


# -- the MCS queue: three to eight CPUs -------------------------------------------------

def _word(m, addr, n=8):
    return int.from_bytes(m.read(addr, n), "little")


def _locked_increments(cpu, qnodes, k, rng, start, inside, outside, pending_only=False):
    """k times: lock, a non-atomic increment of the counter (the value it found recorded
    as "seen<j>"), WORK inside, unlock, WORK outside; `inside`/`outside`: (low, high)
    cycles of WORK, drawn per iteration."""
    p = Program().work(start)
    for j in range(k):
        if pending_only:
            spin_lock(p, LOCK)
        else:
            spin_lock(p, LOCK, cpu, qnodes)
        p.load(COUNTER, 8, record=f"seen{j}").work(int(rng.integers(*inside)))
        p.store(COUNTER, size=8, value=1, plus_recorded=True)
        spin_unlock(p, LOCK)
        p.work(int(rng.integers(*outside)))
    return p


def _contend(n, k, seed, inside=(0, 400), outside=(0, 100), pending_only=False):
    m = Machine("skylake-ddr4", cores=n)
    q = QNodes(QNODES, n)
    rng = np.random.default_rng(seed)
    ps = [_locked_increments(c, q, k, rng, int(rng.integers(0, 300)), inside, outside,
                             pending_only) for c in range(n)]
    return m, q, m.run(ps), ps


@pytest.mark.parametrize("n", [3, 4, 8])
def test_n_cpus_increment_under_the_queued_lock_exactly_n_times_k(n):
    k = 12
    for seed in range(3):
        m, q, r, _ = _contend(n, k, seed)   # no WaitForever
        assert _word(m, COUNTER) == n * k
        assert m.read(LOCK, 4) == bytes(4)   # unlocked, no pending bit, no tail
        for c in range(n):   # each CPU's qnodes[0].mcs.count back to 0 (no node in use)
            assert _word(m, q.node(c) + MCS_COUNT, 4) == 0
        # every value a CPU found under the lock is one no other CPU found: each
        # increment saw the one before it
        seen = sorted(v for c in r.cores for name, v in c.values.items()
                      if isinstance(name, str) and name.startswith("seen"))
        assert seen == list(range(n * k))


def test_the_queue_is_used_and_the_pending_path_alone_is_not_enough():
    """With three CPUs some xchg_tail finds a previous tail (a CPU links behind another),
    and the first version's pending path alone loses increments on some of these runs:
    two CPUs set pending at once (LOCK XADD), both take the lock."""
    m, q, r, ps = _contend(3, 12, 0)
    linked = 0
    for c in range(3):   # the old tails the 16-bit xchg_tail ops recorded: another CPU's
        xchg_tail = np.flatnonzero((ps[c].ops[:, COL_OP] == Op.LOCK_RMW)
                                   & (ps[c].ops[:, COL_SIZE] == 2)).tolist()
        linked += sum(r.cores[c].values[i] in {encode_tail(o, 0) >> 16 for o in range(3)
                                               if o != c} for i in xchg_tail)
    assert linked > 0
    counts = [_word(_contend(3, 20, seed, pending_only=True)[0], COUNTER)
              for seed in range(10)]
    assert all(c <= 60 for c in counts)
    assert min(counts) < 60, counts


def _queued_behind(ps, r, c):
    """{iteration j: the CPU whose node was the tail when CPU c's j-th lock queued} (the old
    tail its 16-bit xchg_tail recorded; 0, no predecessor, also where the op was skipped)."""
    ops = ps[c].ops
    xchg_tail = np.flatnonzero((ops[:, COL_OP] == Op.LOCK_RMW) & (ops[:, COL_SIZE] == 2))
    return {j: (r.cores[c].values[int(i)] >> 2) - 1 for j, i in enumerate(xchg_tail)
            if r.cores[c].values[int(i)]}


def _seen(r, c, k):
    return [r.cores[c].values[f"seen{j}"] for j in range(k)]


@pytest.mark.parametrize("n", [3, 5])
def test_the_lock_goes_round_in_the_order_the_cpus_arrive(n):
    """CPU c starts 1500 * c cycles after CPU 0 (more than a slowpath's few line transfers
    before its xchg_tail), each critical section is 6000 cycles of WORK and nothing is done
    between unlock and the next lock: CPU 1 arrives while CPU 0 holds the lock (it spins as
    the pending CPU), the others queue in the order they arrive, and each CPU re-queues at
    the tail on its next lock. FIFO: the j-th lock of CPU c is the (c + j * n)-th taken, so
    it finds the counter at c + j * n."""
    k = 3
    m = Machine("skylake-ddr4", cores=n)
    q = QNodes(QNODES, n)
    rng = np.random.default_rng(0)
    ps = [_locked_increments(c, q, k, rng, 1500 * c, (6000, 6001), (0, 1)) for c in range(n)]
    r = m.run(ps)
    for c in range(n):
        assert _seen(r, c, k) == [c + j * n for j in range(k)]
        # from its second lock on, each CPU queued behind the CPU before it in the round
        assert {j: p for j, p in _queued_behind(ps, r, c).items() if j > 0} == \
            {j: (c - 1) % n for j in range(1, k)}
    assert _word(m, COUNTER) == n * k


def test_a_contended_run_is_deterministic():
    runs = []
    for _ in range(2):
        m, q, r, _ = _contend(4, 8, 7)
        runs.append(([c.values for c in r.cores], [c.cycles for c in r.cores],
                     m.read(COUNTER, 8), m.read(QNODES, 4 * q.stride)))
    assert runs[0] == runs[1]


def test_random_timing_never_breaks_exclusion():
    """Random start offsets, critical sections and gaps (as tests/test_litmus_cores.py
    perturbs timing), dense and sparse, three to six CPUs: the count is always exact."""
    rng = np.random.default_rng(39)
    for run in range(12):
        n = int(rng.integers(3, 7))
        inside = (0, int(rng.choice([20, 300, 2000])))
        outside = (0, int(rng.choice([1, 50, 1000])))
        m, q, r, ps = _contend(n, 6, int(rng.integers(1 << 30)), inside, outside)
        assert _word(m, COUNTER) == n * 6, (run, n, inside, outside)
        assert m.read(LOCK, 4) == bytes(4)
        # FIFO whatever the timing: a lock that queued behind CPU p's node is the next
        # taken after one of p's (no CPU can take it between: the tail is set, so the fast
        # path's CMPXCHG from 0, the pending path and the queue's trylock all fail)
        for c in range(n):
            seen = _seen(r, c, 6)
            for j, p in _queued_behind(ps, r, c).items():
                assert seen[j] - 1 in _seen(r, p, 6), (run, c, j, p)


def test_the_queue_reaches_over_the_declared_cpus_only():
    q = QNodes(QNODES, 4)
    assert q.node(3) == QNODES + 3 * 4096
    assert encode_tail(0, 0) == 1 << 18 and encode_tail(2, 1) == 3 << 18 | 1 << 16
    for bad, why in ((dict(cpu=4, qnodes=q), "cpu 4 not in 0..3"),
                     (dict(cpu=1), "both cpu and qnodes"),
                     (dict(cpu=0, qnodes=0x2000), "not a QNodes")):
        with pytest.raises(ValueError, match=why):
            spin_lock(Program(), LOCK, **bad)
    for kw, why in ((dict(base=QNODES + 8, ncpus=2), "64-byte aligned"),
                    (dict(base=QNODES, ncpus=0), "ncpus 0 not in 1..16383"),
                    (dict(base=QNODES, ncpus=1 << 14), "not in 1..16383"),
                    (dict(base=QNODES, ncpus=2, stride=32), "stride 32"),
                    (dict(base=QNODES, ncpus=2.0), "not an int")):
        with pytest.raises(ValueError, match=why):
            QNodes(**kw)


# -- the ops the slowpath is built of -----------------------------------------------------

def test_a_not_equal_wait_ends_when_the_value_changes():
    two = Machine("skylake-ddr4", cores=2)   # both clocks at 0
    two.write(LOCK, (7).to_bytes(8, "little"))
    r = two.run([Program().work(2000).store(LOCK, size=8, value=0x1234),
                 Program().wait(LOCK, 7, 8, not_equal=True, record="next")])
    assert r.cores[1].values == {"next": 0x1234}
    one = Machine("skylake-ddr4")
    one.write(LOCK, (0x0107).to_bytes(4, "little"))
    assert one.run(Program().wait(LOCK, 0x0007, 4, mask=0xFF00, not_equal=True,
                                  record="v")).values == {"v": 0x0107}
    with pytest.raises(WaitForever):   # the masked bytes equal: no other core to change them
        one.run(Program().wait(LOCK, 0x0107, 4, mask=0xFF, not_equal=True))
    with pytest.raises(ProgramError, match="not equal"):
        Program().wait(LOCK, 1, 4, at_least=True, not_equal=True).validate()


def test_forward_branches_make_an_else_and_a_goto():
    """`if (v == 5) {a = 1} else {a = 2}; b = 3` as forward() / jump() / land(), on both
    values: the else is reached by the compare's skip, the then-part jumps over it."""
    m = Machine("skylake-ddr4")
    for v, a in ((5, 1), (6, 2), (4, 2)):
        m.write(COUNTER, bytes(24))
        m.write(LOCK, v.to_bytes(8, "little"))
        p = Program().load(LOCK, 8)
        not_le = p.forward(LOADED, 6)      # v <= 5
        not_ge = p.forward(4, LOADED)      # v >= 5
        p.store(COUNTER, size=8, value=1)
        end = p.jump()
        p.land(not_le, not_ge).store(COUNTER, size=8, value=2)
        p.land(end).store(COUNTER + 8, size=8, value=3)
        m.run(p)
        assert (_word(m, COUNTER), _word(m, COUNTER + 8)) == (a, 3), v
    with pytest.raises(ProgramError, match="not a branch"):
        Program().load(LOCK, 8).land(0)


# -- the slowpath's two races, each set up by hand --------------------------------------

def _recorded(ps, r, c, op, size=None, addr=None):
    """The values CPU c's ops of kind `op` (and `size`, `addr`) recorded, in program order
    (0 where the op was skipped)."""
    ops = ps[c].ops
    sel = ops[:, COL_OP] == op
    if size is not None:
        sel &= ops[:, COL_SIZE] == size
    if addr is not None:
        sel &= ops[:, COL_ADDR] == addr
    return [r.cores[c].values.get(int(i), 0) for i in np.flatnonzero(sel)]


def test_the_queue_s_trylock_takes_a_lock_freed_while_the_node_was_set_up():
    """The word is (0,1,1): an owner and a pending CPU, both played by core 1, whose two
    stores (the hand-over to the pending CPU, its release) leave its store buffer once its
    read-for-ownership of the line is done (a miss to DRAM, a few hundred cycles). CPU 0
    starts 150 cycles in: its fast path still finds (0,1,1) and queues; by its
    queued_spin_trylock the word is 0, so the trylock takes the lock: goto release (no wait
    as the queue's head, no claim)."""
    two = Machine("skylake-ddr4", cores=2)
    q = QNodes(QNODES, 2)
    two.write(LOCK, (0x101).to_bytes(4, "little"))
    two.write(q.node(0), b"\xff" * 12)   # next and locked as an earlier use left them
    p0 = Program().work(150)
    spin_lock(p0, LOCK, 0, q)
    p1 = Program().store(LOCK, size=2, value=1).store(LOCK, size=1, value=0)
    ps = [p0, p1]
    r = two.run(ps)
    assert _recorded(ps, r, 0, Op.LOCK_RMW, 4)[0] == 0x101   # the fast path found it
    assert two.read(LOCK, 4) == (1).to_bytes(4, "little")    # CPU 0 holds it, no tail
    assert _word(two, q.node(0), 8) == 0 and _word(two, q.node(0) + 8, 4) == 0   # set up
    assert _word(two, q.node(0) + MCS_COUNT, 4) == 0   # count++ and the release's --
    wait_head = _recorded(ps, r, 0, Op.WAIT, 4, LOCK)[-1]
    claim = _recorded(ps, r, 0, Op.LOCK_RMW, 4)[-1]
    assert (wait_head, claim) == (0, 0)   # both skipped (they would record the tail)


def test_a_tail_queued_under_a_new_pending_bit_undoes_it_and_queues_behind():
    """The word is (0,0,1) (core 2 owns it until cycle 3000). CPU 0 finds it so and goes
    for pending; between its fast path and its LOCK BTS, CPU 1 (core 1, by hand: the ops of
    a queue's head) puts its tail in. CPU 0's BTS finds the bit clear and the word a tail:
    it clears pending again and queues behind CPU 1, which hands it the MCS lock once it
    has the lock and has released it."""
    three = Machine("skylake-ddr4", cores=3)
    q = QNodes(QNODES, 3)
    three.write(LOCK, (1).to_bytes(4, "little"))
    p0 = Program()
    spin_lock(p0, LOCK, 0, q)
    n1, tail1 = q.node(1), encode_tail(1, 0)
    p1 = (Program().work(100).store(n1, size=8, value=0).store(n1 + 8, size=4, value=0)
          .lock_rmw(LOCK + 2, size=2, value=tail1 >> 16)         # xchg_tail
          .wait(LOCK, 0, 4, mask=0xFFFF)                          # the head's wait
          .store(LOCK, size=1, value=1)                           # set_locked (tail is 0's)
          .wait(n1, 0, 8, not_equal=True, record="next")          # CPU 0 linked in
          .work(500).store(q.node(0) + 8, size=4, value=1)        # hand-over
          .work(500).store(LOCK, size=1, value=0))                # unlock
    p2 = Program().work(3000).store(LOCK, size=1, value=0)
    ps = [p0, p1, p2]
    r = three.run(ps)
    assert _recorded(ps, r, 0, Op.LOCK_RMW, 4)[0] == 1   # the fast path found the owner
    assert _recorded(ps, r, 0, Op.LOCK_RMW, 1) == [0]    # the BTS found pending clear
    assert _recorded(ps, r, 0, Op.LOCK_RMW, 2) == [tail1 >> 16]   # queued behind CPU 1
    assert r.cores[1].values["next"] == q.node(0)
    assert three.read(LOCK, 4) == (1).to_bytes(4, "little")   # CPU 0 holds it, tail cleared


def test_uncontended_the_queue_costs_nothing():
    """Uncontended, the fast path's CMPXCHG finds 0 and the slowpath is skipped by one branch
    statically predicted so, however long: the same cycles as the pending path's version."""
    cycles = []
    for q in (None, QNodes(QNODES, 8)):
        m = Machine("skylake-ddr4")
        p = Program()
        for _ in range(20):
            spin_lock(p, LOCK, *((0, q) if q else ()))
            p.load(COUNTER, 8).work(10)
            spin_unlock(p, LOCK)
        cycles.append(m.run(p).cycles)
    assert cycles[0] == cycles[1]
