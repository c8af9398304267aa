"""Hardened usercopy (CONFIG_HARDENED_USERCOPY): the checks run before a copy to or from
user space whose size is not a compile-time constant.

Follows include/linux/thread_info.h (v5.x) `check_copy_size` / `check_object_size` and
mm/usercopy.c `__check_object_size` (docs/kernel-paths.md §1.1-1.3) in the order bogus
address, heap object, stack object, kernel text. The blob read, 010e85f9, is v5.2 or later
(its SPDX GPL-2.0-only line) and checks the stack before the heap; the older heap-first order
is kept because no v5.0 copy could be found and whether "usercopy: no check page span for
stack objects" (posted 2018-12-30) reached v5.0 is not verified. For a pmem destination both
checks run either way: the same loads, in another order. `check_heap_object` reads
the destination's struct page (kernels/memmap.py); slab pages go on to mm/slub.c
`__check_heap_object` (kernels/slub.py).

`usercopy_abort` is the kernel's BUG(): here a `UsercopyAbort` exception; the checks run
before the copy, so nothing has been copied when it is raised. `usercopy_warn` and the
WARNs of check_copy_size are Python warnings (`UsercopyWarning`).

Model departures: the checks' ALU work and branches are not charged (no sourced per-function
figure); their loads are. `arch_within_stack_frames` is not modelled: an object inside the
task's stack is GOOD_STACK. The static key `bypass_usercopy_checks` (hardened_usercopy=off)
is a patched jump: no ops.
"""
import warnings
from dataclasses import dataclass

from kernels import slub
from kernels.memmap import PageSlab, virt_addr_valid, virt_to_head_page

INT_MAX = 2**31 - 1
ZERO_SIZE_PTR = 16
THREAD_SIZE = 16 << 10             # x86-64, no KASAN: PAGE_SIZE << 2
TASK_STACK_OFFSET = 0x18           # task_struct.stack (after thread_info, state)
# thread.addr_limit (v5.0, set_fs): thread_struct ends task_struct, several KiB past ->stack;
# the exact offset depends on the config, so the model's last task_struct line stands for it
TASK_ADDR_LIMIT_OFFSET = 3 * 64
NOT_STACK, GOOD_STACK, BAD_STACK = range(3)


class UsercopyAbort(Exception):
    """usercopy_abort(): the kernel refuses the copy (BUG); nothing was copied."""

    def __init__(self, name, detail, to_user, offset, n):
        self.name, self.detail, self.to_user, self.offset, self.len = name, detail, to_user, offset, n
        super().__init__(_message(name, detail, to_user, offset, n))


class UsercopyWarning(UserWarning):
    """usercopy_warn() or a WARN in check_copy_size: the copy goes ahead."""


def _message(name, detail, to_user, offset, n):
    what, where = ("exposure", "from") if to_user else ("overwrite", "to")
    obj = name + (f" '{detail}'" if detail else "")
    return f"Kernel memory {what} attempt detected {where} {obj} (offset {offset}, size {n})!"


def usercopy_abort(name, detail, to_user, offset, n):
    raise UsercopyAbort(name, detail, to_user, offset, n)


def usercopy_warn(name, detail, to_user, offset, n):
    warnings.warn(_message(name, detail, to_user, offset, n), UsercopyWarning, stacklevel=2)


@dataclass
class Task:
    """The current task as the stack check and v5.0's access_ok read it: the per-CPU
    `current_task` slot, the task_struct (four lines: ->stack in the first, thread.addr_limit
    in the last) and its THREAD_SIZE stack, all at fixed kernel addresses."""
    current_task: int
    task_struct: int
    stack: int

    @classmethod
    def create(cls, mm):
        return cls(mm.kalloc(8), mm.kalloc(64 * 4), mm.kalloc(THREAD_SIZE, THREAD_SIZE))


@dataclass
class Hardening:
    """The state the checks run with. `enabled` False = boot option hardened_usercopy=off;
    `fallback` = CONFIG_HARDENED_USERCOPY_FALLBACK (default y in v4.16-v5.15): a copy outside
    a slab whitelist but inside the object only warns. `text` = [_stext, _etext).
    `div64_cycles`: the profile's [instr] div64_cycles (the slab check's offset % size)."""
    mm: object
    task: Task
    text: tuple
    div64_cycles: int
    enabled: bool = True
    fallback: bool = True

    @classmethod
    def create(cls, mm, div64_cycles, enabled=True, fallback=True):
        text = mm.kalloc(1 << 20, 1 << 12)
        return cls(mm, Task.create(mm), (text, text + (1 << 20)), div64_cycles, enabled,
                   fallback)


def check_bogus_address(ptr, n, to_user):
    if ptr + n >= 2**64:   # ptr + n < ptr in 64-bit arithmetic
        usercopy_abort("wrapped address", None, to_user, 0, (ptr + n) % 2**64)
    if ptr <= ZERO_SIZE_PTR:
        usercopy_abort("null address", None, to_user, ptr, n)


def check_heap_object(p, hard, ptr, n, to_user):
    """Not a valid direct-map address: nothing to check. Else read the struct page
    (compound_head, then flags); a slab page goes to __check_heap_object, any other page
    to check_page_span (empty without CONFIG_HARDENED_USERCOPY_PAGESPAN, the default)."""
    mm = hard.mm
    if not virt_addr_valid(p, mm, ptr):
        return
    page = virt_to_head_page(p, mm, ptr)
    if PageSlab(p, mm, page):
        slub.__check_heap_object(p, mm, ptr, n, page, to_user, hard.fallback,
                                 hard.div64_cycles)


def check_stack_object(p, hard, obj, n):
    """Reads `current` (per-CPU) and, through it, current->stack."""
    p.load(hard.task.current_task)
    p.load(hard.task.task_struct + TASK_STACK_OFFSET, dependent=True)
    stack, end = hard.task.stack, hard.task.stack + THREAD_SIZE
    if obj + n <= stack or end <= obj:
        return NOT_STACK
    if obj < stack or end < obj + n:
        return BAD_STACK
    return GOOD_STACK


def check_kernel_text_object(hard, ptr, n, to_user):
    """Abort if the range overlaps [_stext, _etext). The kernel then checks the text's
    linear-map alias too (lm_alias: reads phys_base, and page_offset_base under KASLR;
    recalled, not re-read): not emitted, and the model's text has no separate alias."""
    text_low, text_high = hard.text
    if ptr < text_high and text_low < ptr + n:
        usercopy_abort("kernel text", None, to_user, ptr - text_low, n)


def __check_object_size(p, hard, ptr, n, to_user):
    """mm/usercopy.c: abort unless [ptr, ptr+n) is a sane kernel object to copy."""
    if not hard.enabled or not n:
        return
    check_bogus_address(ptr, n, to_user)
    check_heap_object(p, hard, ptr, n, to_user)
    stack = check_stack_object(p, hard, ptr, n)
    if stack == GOOD_STACK:
        return
    if stack == BAD_STACK:
        usercopy_abort("process stack", None, to_user, 0, n)
    check_kernel_text_object(hard, ptr, n, to_user)


def check_object_size(p, hard, ptr, n, to_user, n_constant=False):
    """Sizes known at compile time are trusted; others go through __check_object_size."""
    if not n_constant:
        with p.function("__check_object_size"):
            __check_object_size(p, hard, ptr, n, to_user)


def check_copy_size(p, hard, addr, nbytes, is_source, object_size=-1):
    """False (the caller copies nothing) if the compiler knows the object at `addr` is
    smaller than `nbytes` (object_size >= 0) or nbytes > INT_MAX, each with a WARN; else
    check_object_size() and True."""
    if 0 <= object_size < nbytes:
        warnings.warn(f"Buffer overflow detected ({object_size} < {nbytes})!",
                      UsercopyWarning, stacklevel=2)
        return False
    if nbytes > INT_MAX:
        warnings.warn(f"check_copy_size: {nbytes} bytes > INT_MAX", UsercopyWarning,
                      stacklevel=2)
        return False
    check_object_size(p, hard, addr, nbytes, is_source)
    return True
