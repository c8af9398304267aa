"""include/asm-generic/qspinlock.h and kernel/locking/qspinlock.c as emitted ops: the queued
spinlock's lock and unlock on x86-64, and spin_lock / spin_unlock over them, for programs
that run on Machine(cores=N) (functional memory: the lock word's value decides the path).

Sources read (torvalds/linux through the search tool's read_file; the stored versions are
named by commit, the v6.6 tag itself was not among them):
- include/asm-generic/qspinlock.h at commit 0b77b97066628deef03a6eac7b29e5c3756f4ab0 (the
  v5/v6 form): queued_spin_lock is `atomic_try_cmpxchg_acquire(&lock->val, &val,
  _Q_LOCKED_VAL)` from 0, else queued_spin_lock_slowpath(lock, val); queued_spin_unlock is
  `smp_store_release(&lock->locked, 0)`, on x86 a plain byte store (TSO: a store is a
  release) - arch/x86/include/asm/qspinlock.h (commit 3d34933a1c9a) names it
  native_queued_spin_unlock, "a smp_store_release() on the least-significant byte".
- kernel/locking/qspinlock.c at commit 2658687568cd36cc1250106032d540454c0046c9, the
  slowpath's pending path (what two CPUs take: the queue starts at a third), and the 2022
  patch (store id 680515501) that turns its wait for the owner into
  `smp_cond_load_acquire(&lock->locked, !VAL)`, the form of later kernels.
- include/linux/spinlock_api_smp.h (store id 1414151981): __raw_spin_lock is
  preempt_disable(), spin_acquire() (lockdep), do_raw_spin_lock -> arch_spin_lock =
  queued_spin_lock; __raw_spin_unlock is do_raw_spin_unlock -> queued_spin_unlock, then
  preempt_enable().

The lock word (asm-generic/qspinlock_types.h, NR_CPUS < 16K): byte 0 `locked`, byte 1
`pending`, bytes 2-3 the MCS queue's tail.

Departures from the kernel:
- Two CPUs contend, at most: the MCS queue, which a third contender joins (its fetch-set of
  pending finds the bit set), is not modelled, since a program is a fixed sequence of ops
  and with two CPUs the pending path is the whole slowpath. With three, two could set
  pending at once here (the LOCK XADD below), and the lock would be wrong.
- `if (val == _Q_PENDING_VAL)` waits a bounded _Q_PENDING_LOOPS (512 on x86) for a pending
  hand-over before queueing; here the wait for `pending` to clear is unbounded (the queue
  it would fall back to is not modelled).
- queued_fetch_set_pending_acquire (LOCK BTS of the pending bit, or atomic_fetch_or) is a
  LOCK XADD of _Q_PENDING_VAL: the same when the bit is clear, which the wait before it
  makes it.
- The `if (val & _Q_LOCKED_MASK)` before the wait for the owner is the wait's own first
  check (a load that finds the byte 0 ends it at once).
- preempt_disable()/preempt_enable() (a per-CPU count) and lockdep are left out: a kernel
  without CONFIG_PREEMPT_COUNT and CONFIG_DEBUG_LOCK_ALLOC.
"""
from isa import LOADED

_Q_LOCKED_VAL = 1
_Q_PENDING_VAL = 1 << 8
_Q_PENDING_MASK = 0xFF << 8
LOCK_BYTES = 4   # struct qspinlock: one atomic_t


def queued_spin_lock(p, lock):
    """The fast path's LOCK CMPXCHG of 0 -> locked; the slowpath's ops guarded by a branch
    on the value it found (statically predicted uncontended: `likely`). The value is
    recorded under the CMPXCHG's op index (RunResult.values: not 0 where it contended)."""
    p.lock_cmpxchg(lock, 0, _Q_LOCKED_VAL, LOCK_BYTES, record=True)
    with p.guarded(0, LOADED, predict_in=False):   # taken when val != 0
        queued_spin_lock_slowpath(p, lock)


def queued_spin_lock_slowpath(p, lock):
    """The pending path: wait out a pending hand-over, set pending, wait for the owner's
    unlock, then take the lock and clear pending in one 16-bit store
    (clear_pending_set_locked with _Q_PENDING_BITS == 8)."""
    p.wait(lock, 0, LOCK_BYTES, mask=_Q_PENDING_MASK)
    p.lock_xadd(lock, _Q_PENDING_VAL, LOCK_BYTES)
    p.wait(lock, 0, 1)   # smp_cond_load_acquire(&lock->locked, !VAL)
    p.store(lock, size=2, value=_Q_LOCKED_VAL)


def queued_spin_unlock(p, lock):
    """smp_store_release(&lock->locked, 0): a byte store."""
    p.store(lock, size=1, value=0)


def spin_lock(p, lock):
    queued_spin_lock(p, lock)


def spin_unlock(p, lock):
    queued_spin_unlock(p, lock)
