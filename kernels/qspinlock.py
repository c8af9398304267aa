"""include/asm-generic/qspinlock.h and kernel/locking/qspinlock.c as emitted ops: the queued
spinlock's lock and unlock on x86-64, and spin_lock / spin_unlock over them, for programs
that run on Machine(cores=N) (functional memory: the lock word's value decides the path).

Sources read (torvalds/linux through the search tool's read_file; the stored versions are
named by commit, the v6.6 tag itself was not among them):
- include/asm-generic/qspinlock.h at commit 0b77b97066628deef03a6eac7b29e5c3756f4ab0 (the
  v5/v6 form): queued_spin_lock is `atomic_try_cmpxchg_acquire(&lock->val, &val,
  _Q_LOCKED_VAL)` from 0, else queued_spin_lock_slowpath(lock, val); queued_spin_trylock is
  `atomic_read(&lock->val)`, and if it is 0 that same cmpxchg; queued_spin_unlock is
  `smp_store_release(&lock->locked, 0)`, on x86 a plain byte store (TSO: a store is a
  release) - arch/x86/include/asm/qspinlock.h (commit 0b77b97066628deef03a6eac7b29e5c3756f4ab0,
  store id 965426939) names it native_queued_spin_unlock, "a smp_store_release() on the
  least-significant byte", sets _Q_PENDING_LOOPS to 1 << 9 and makes
  queued_fetch_set_pending_acquire a LOCK BTS of the pending bit followed by an
  atomic_read of the word.
- kernel/locking/qspinlock.c at commit 0200fbdd431519d730b5d399a12840ec832b27cc (store id
  1086182802; the struct qnode form, after 2658687568cd's mcs_nodes), the whole native
  slowpath: the pending path and the MCS queue (encode_tail, decode_tail, xchg_tail with
  _Q_PENDING_BITS == 8, the link into prev->next, the head's wait, the claim); and the
  2022 patch (store id 680515501) that turns the pending path's wait for the owner into
  `smp_cond_load_acquire(&lock->locked, !VAL)`, the form of later kernels.
- kernel/locking/mcs_spinlock.h at commit 01b944fe1cd4e21a2a9ed51adbdbafe2d5e905ba (store
  id 358329110): struct mcs_spinlock {next; int locked; int count}, and
  arch_mcs_spin_lock_contended / arch_mcs_spin_unlock_contended (wait for `locked` to be
  non-zero; store 1 into it).
- include/asm-generic/qspinlock_types.h at commit 60a5825e9cbeed329d6a6fc0705b21d7c33c9e42
  (store id 868693739): the lock word's fields with NR_CPUS < 16K.
- include/linux/spinlock_api_smp.h (store id 1414151981): __raw_spin_lock is
  preempt_disable(), spin_acquire() (lockdep), do_raw_spin_lock -> arch_spin_lock =
  queued_spin_lock; __raw_spin_unlock is do_raw_spin_unlock -> queued_spin_unlock, then
  preempt_enable().

The lock word (NR_CPUS < 16K): byte 0 `locked`, byte 1 `pending`, bytes 2-3 the MCS queue's
tail: bits 16-17 the node index, 18-31 the CPU + 1. Each CPU's qnodes[MAX_NODES] (struct
mcs_spinlock, 16 bytes without CONFIG_PARAVIRT_SPINLOCKS: one 64-byte line) are at the
caller's address for that CPU (`QNodes`).

A program is a fixed sequence of ops, so the slowpath's control flow is branches on the value
the last recording op read (isa.Program.forward / jump / land), and its data-dependent
addresses (decode_tail's prev, the next node of the hand-over) are one compare per CPU the
caller declares, each leading to that CPU's store.

Departures from the kernel:
- Without a QNodes (the callers of the first version) queued_spin_lock emits the pending
  path alone (`_pending_path_only`), for two contending CPUs at most: with a third, two
  could set pending at once there (a LOCK XADD) and the lock would be wrong.
- decode_tail's per_cpu_ptr (a load of __per_cpu_offset[cpu], an add) and the hand-over's
  `&next->locked` are a chain of compares over the declared CPUs (two fused cmp+jcc each,
  statically predicted, one misprediction where it matches), then a store to that CPU's
  node: a few cycles more than the kernel's address arithmetic.
- Every branch of the slowpath is statically predicted to skip its body (a branch op
  without an ip: no predictor history); `(val & _Q_TAIL_MASK) == tail` and the other
  equalities are two compares each.
- `if (val == _Q_PENDING_VAL)` waits for the pending hand-over without the bound of
  _Q_PENDING_LOOPS (512 on x86): a WAIT has no count of its checks. The state it waits out,
  (0,1,0), ends as soon as the pending CPU runs its next store, so the wait ends.
- queued_fetch_set_pending_acquire's LOCK BTS of bit 8 is a LOCK XCHG of 1 into the pending
  byte (it only ever holds 0 or 1: the same old bit and the same word after), then the
  kernel's atomic_read of the word; where the bit was already set that read comes before
  the queue as in the kernel, but the branch on it is one compare of the old bit, one of
  the tail (the kernel ORs them into one value).
- `next = READ_ONCE(node->next); if (next) prefetchw(next);` is the load; the PREFETCHW is
  left out (no op). Later `if (!next) next = smp_cond_load_relaxed(&node->next, (VAL))`
  is that wait, whose first check reads the `next` the load found where it was non-zero
  (the kernel keeps it in a register; a node's `next` is written once).
- The node's index is 0 (no nesting in an interrupt): idx >= MAX_NODES does not arise.
  node->count++ and the release's __this_cpu_dec are a load and a store of it.
- The pending path's `if (val & _Q_LOCKED_MASK)` before its wait for the owner is the
  wait's own first check (a load that finds the byte 0 ends it at once).
- virt_spin_lock (CONFIG_PARAVIRT's test-and-set fallback for guests) is off: bare metal,
  the static key disabled; pv_* hooks are the native no-ops.
- preempt_disable()/preempt_enable() (a per-CPU count) and lockdep are left out: a kernel
  without CONFIG_PREEMPT_COUNT and CONFIG_DEBUG_LOCK_ALLOC.
"""
from dataclasses import dataclass

from isa import LOADED

_Q_LOCKED_VAL = 1
_Q_PENDING_VAL = 1 << 8
_Q_PENDING_MASK = 0xFF << 8
_Q_LOCKED_PENDING_MASK = 0xFFFF
_Q_TAIL_OFFSET = 16            # _Q_TAIL_IDX_OFFSET: the tail half-word (xchg_tail)
_Q_TAIL_IDX_OFFSET = 16
_Q_TAIL_CPU_OFFSET = 18
_Q_TAIL_CPU_BITS = 14          # 32 - _Q_TAIL_CPU_OFFSET: NR_CPUS < 16K
LOCK_BYTES = 4                 # struct qspinlock: one atomic_t
MAX_NODES = 4
# struct mcs_spinlock on x86-64: the next pointer, then `locked` and `count`
MCS_NEXT, MCS_LOCKED, MCS_COUNT = 0, 8, 12
MCS_BYTES = 16                 # struct qnode without CONFIG_PARAVIRT_SPINLOCKS
PERCPU_STRIDE = 4096           # QNodes' default: one CPU's per-CPU copy a page from the next


@dataclass(frozen=True)
class QNodes:
    """Where each CPU's `static DEFINE_PER_CPU_ALIGNED(struct qnode, qnodes[MAX_NODES])` is:
    CPU c's at base + c * stride, for the `ncpus` CPUs that may take the lock (each
    program's CPU number, as smp_processor_id() gives it, is below ncpus)."""
    base: int
    ncpus: int
    stride: int = PERCPU_STRIDE

    def __post_init__(self):
        for name in ("base", "ncpus", "stride"):
            if not isinstance(getattr(self, name), int) or isinstance(getattr(self, name), bool):
                raise ValueError(f"QNodes: {name} {getattr(self, name)!r} is not an int")
        if not 1 <= self.ncpus < 1 << _Q_TAIL_CPU_BITS:
            raise ValueError(f"QNodes: ncpus {self.ncpus} not in 1..{(1 << _Q_TAIL_CPU_BITS) - 1}"
                             " (the tail's CPU field holds the CPU + 1 in 14 bits)")
        if self.base < 0 or self.base % 64:
            raise ValueError(f"QNodes: base {self.base:#x} is not a 64-byte aligned address "
                             "(DEFINE_PER_CPU_ALIGNED)")
        if self.stride < MAX_NODES * MCS_BYTES or self.stride % 64:
            raise ValueError(f"QNodes: stride {self.stride} is not a multiple of 64 of at least "
                             f"{MAX_NODES * MCS_BYTES} (one CPU's qnodes)")

    def node(self, cpu, idx=0):
        """per_cpu_ptr(&qnodes[idx].mcs, cpu)."""
        return self.base + cpu * self.stride + idx * MCS_BYTES

    def check_cpu(self, cpu):
        if not isinstance(cpu, int) or isinstance(cpu, bool) or not 0 <= cpu < self.ncpus:
            raise ValueError(f"queued_spin_lock: cpu {cpu!r} not in 0..{self.ncpus - 1} "
                             "(QNodes.ncpus)")


def encode_tail(cpu, idx):
    """(cpu + 1) << _Q_TAIL_CPU_OFFSET | idx << _Q_TAIL_IDX_OFFSET: the tail can tell no
    tail (0) from CPU 0's."""
    return (cpu + 1) << _Q_TAIL_CPU_OFFSET | idx << _Q_TAIL_IDX_OFFSET


def queued_spin_lock(p, lock, cpu=None, qnodes=None):
    """The fast path's LOCK CMPXCHG of 0 -> locked; the slowpath's ops guarded by a branch
    on the value it found (statically predicted uncontended: `likely`). The value is
    recorded under the CMPXCHG's op index (RunResult.values: not 0 where it contended).
    `cpu` and `qnodes` (a QNodes): this program's CPU and the CPUs' queue nodes, for the
    whole slowpath with its MCS queue; without them the pending path alone (two CPUs)."""
    if (cpu is None) != (qnodes is None):
        raise ValueError("queued_spin_lock: give both cpu and qnodes, or neither")
    if qnodes is not None:
        if not isinstance(qnodes, QNodes):
            raise ValueError(f"queued_spin_lock: qnodes {qnodes!r} is not a QNodes")
        qnodes.check_cpu(cpu)
    p.lock_cmpxchg(lock, 0, _Q_LOCKED_VAL, LOCK_BYTES, record=True)
    with p.guarded(0, LOADED, predict_in=False):   # taken when val != 0
        if qnodes is None:
            _pending_path_only(p, lock)
        else:
            queued_spin_lock_slowpath(p, lock, cpu, qnodes)


def _pending_path_only(p, lock):
    """The first version's slowpath, for two CPUs: wait out a pending hand-over, set
    pending, wait for the owner's unlock, then take the lock and clear pending in one
    16-bit store (clear_pending_set_locked with _Q_PENDING_BITS == 8)."""
    p.wait(lock, 0, LOCK_BYTES, mask=_Q_PENDING_MASK)
    p.lock_xadd(lock, _Q_PENDING_VAL, LOCK_BYTES)
    p.wait(lock, 0, 1)   # smp_cond_load_acquire(&lock->locked, !VAL)
    p.store(lock, size=2, value=_Q_LOCKED_VAL)


def _goto_if_equal(p, value):
    """`if (VAL == value) goto L` on the value the op before read: a label for land()
    (VAL > value skips the second compare; VAL < value falls through it)."""
    p.branch(LOADED, value + 1, 1, predict_in=False)   # VAL <= value: to the next compare
    return p.forward(LOADED, value, predict_in=False)   # VAL == value: not below it


def _switch(p, cases):
    """`switch (VAL) { case v: store ...; }` over (value, (addr, size, stored)) cases: the
    compares first, each to its case's store, then the stores, each jumping to the end."""
    labels = [_goto_if_equal(p, v) for v, _ in cases]
    ends = [p.jump()] if cases else []   # no case matched
    for k, (label, (_, (addr, size, stored))) in enumerate(zip(labels, cases)):
        p.land(label)
        p.store(addr, size=size, value=stored)
        if k + 1 < len(cases):
            ends.append(p.jump())
    p.land(*ends)


def queued_spin_lock_slowpath(p, lock, cpu, qnodes):
    """queued_spin_lock_slowpath(lock, val) with val the value the op before read (the fast
    path's CMPXCHG): the pending path, else the MCS queue."""
    done, queue = [], []
    # if (val == _Q_PENDING_VAL) val = atomic_cond_read_relaxed(&lock->val, VAL != PENDING)
    pend = [p.forward(LOADED, _Q_PENDING_VAL + 1, predict_in=False),
            p.forward(_Q_PENDING_VAL - 1, LOADED, predict_in=False)]
    p.wait(lock, _Q_PENDING_VAL, LOCK_BYTES, not_equal=True, record=True)
    p.land(*pend)
    # if (val & ~_Q_LOCKED_MASK) goto queue;
    queue.append(p.forward(LOADED, _Q_PENDING_VAL, predict_in=False))
    # val = queued_fetch_set_pending_acquire(lock): LOCK BTS, then atomic_read
    p.lock_rmw(lock + 1, size=1, value=1, record=True)
    was_set = p.forward(LOADED, 1, predict_in=False)   # the old pending bit clear
    p.load(lock, LOCK_BYTES)
    tail_seen = p.forward(LOADED, 1 << _Q_TAIL_OFFSET, predict_in=False)   # no tail
    p.wait(lock, 0, 1)   # smp_cond_load_acquire(&lock->locked, !VAL)
    p.store(lock, size=2, value=_Q_LOCKED_VAL)   # clear_pending_set_locked
    done.append(p.jump())   # return
    p.land(tail_seen)
    p.store(lock + 1, size=1, value=0)   # clear_pending: ours was the bit set
    queue.append(p.jump())
    p.land(was_set)
    p.load(lock, LOCK_BYTES)   # the atomic_read after a BTS that found the bit set
    p.land(*queue)
    _queue(p, lock, cpu, qnodes)
    p.land(*done)


def _queue(p, lock, cpu, qnodes):
    """queue: to release: of queued_spin_lock_slowpath."""
    node = qnodes.node(cpu)
    tail = encode_tail(cpu, 0)
    others = [c for c in range(qnodes.ncpus) if c != cpu]
    release = []
    p.load(node + MCS_COUNT, 4, record=True)   # idx = node->count++ (0: no nesting)
    p.store(node + MCS_COUNT, size=4, value=1, plus_recorded=True)
    p.store(node + MCS_LOCKED, size=4, value=0)   # node->locked = 0
    p.store(node + MCS_NEXT, size=8, value=0)     # node->next = NULL
    # if (queued_spin_trylock(lock)) goto release;
    p.load(lock, LOCK_BYTES)
    busy = p.forward(LOADED, 1, predict_in=False)
    p.lock_cmpxchg(lock, 0, _Q_LOCKED_VAL, LOCK_BYTES, record=True)
    failed = p.forward(LOADED, 1, predict_in=False)
    release.append(p.jump())
    p.land(busy, failed)
    # smp_wmb(): a compiler barrier on x86. old = xchg_tail(lock, tail): the tail half-word
    p.lock_rmw(lock + _Q_TAIL_OFFSET // 8, size=2, value=tail >> _Q_TAIL_OFFSET, record=True)
    first = p.forward(0, LOADED, predict_in=False)   # if (old & _Q_TAIL_MASK)
    # prev = decode_tail(old); WRITE_ONCE(prev->next, node);
    _switch(p, [(encode_tail(c, 0) >> _Q_TAIL_OFFSET, (qnodes.node(c) + MCS_NEXT, 8, node))
                for c in others])
    p.wait(node + MCS_LOCKED, 0, 4, not_equal=True)   # arch_mcs_spin_lock_contended
    p.load(node + MCS_NEXT, 8)   # next = READ_ONCE(node->next); (prefetchw left out)
    p.land(first)
    # val = atomic_cond_read_acquire(&lock->val, !(VAL & _Q_LOCKED_PENDING_MASK));
    p.wait(lock, 0, LOCK_BYTES, mask=_Q_LOCKED_PENDING_MASK, record=True)
    # if ((val & _Q_TAIL_MASK) == tail && atomic_try_cmpxchg_relaxed(&lock->val, &val,
    #     _Q_LOCKED_VAL)) goto release;  (val's locked and pending bytes are 0 here)
    mine = _goto_if_equal(p, tail)
    contended = p.jump()
    p.land(mine)
    p.lock_cmpxchg(lock, tail, _Q_LOCKED_VAL, LOCK_BYTES, record=True)
    release.append(_goto_if_equal(p, tail))
    p.land(contended)
    p.store(lock, size=1, value=_Q_LOCKED_VAL)   # set_locked
    # if (!next) next = smp_cond_load_relaxed(&node->next, (VAL));
    p.wait(node + MCS_NEXT, 0, 8, not_equal=True, record=True)
    # arch_mcs_spin_unlock_contended(&next->locked): smp_store_release(, 1)
    _switch(p, [(qnodes.node(c), (qnodes.node(c) + MCS_LOCKED, 4, 1)) for c in others])
    p.land(*release)
    # release: __this_cpu_dec(qnodes[0].mcs.count);
    p.load(node + MCS_COUNT, 4, record=True)
    p.store(node + MCS_COUNT, size=4, value=-1, plus_recorded=True)


def queued_spin_unlock(p, lock):
    """smp_store_release(&lock->locked, 0): a byte store."""
    p.store(lock, size=1, value=0)


def spin_lock(p, lock, cpu=None, qnodes=None):
    queued_spin_lock(p, lock, cpu, qnodes)


def spin_unlock(p, lock):
    queued_spin_unlock(p, lock)
