"""kernels/qspinlock.py on two cores, and the ops it is built of (WAIT, LOCK CMPXCHG/XADD,
recorded values): mutual exclusion of a shared counter's increments, counted by hand; the
same increments without the lock lose updates (so the count can fail); a wait that no
store can end stops the run with WaitForever instead of hanging."""
import numpy as np
import pytest

from emu import Machine, WaitForever
from isa import Program, ProgramError
from kernels.qspinlock import spin_lock, spin_unlock

LOCK, COUNTER = 0x100000, 0x101000


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
