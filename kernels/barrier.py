"""arch/x86/include/asm/barrier.h (v4.15 and later): the full memory barrier.

`smp_mb()` is `lock; addl $0,-4(%rsp)`, a locked add to the stack slot below the stack
pointer, since commit 450cbdd0125c ("locking/x86: Use LOCK ADD for smp_mb() instead of
MFENCE", v4.15): as strong as MFENCE for ordinary memory, and cheaper. The slot is dead (below
the stack pointer), so the emulated add writes a zero there.
"""


def smp_mb(p, stack):
    """The locked add at `stack` (the kernel stack pointer) - 4."""
    p.lock_rmw(stack - 4, size=4, value=0)
