"""SLUB caches as the hardened-usercopy check sees them, and `__check_heap_object`.

Follows mm/slub.c `__check_heap_object` (v4.20-v5.8 form, store id 19006651156, as read in
/work/reports/kernel-check-A.md §2; docs/kernel-paths.md §1.3) and include/linux/slub_def.h
(v5.0) for where the fields it reads sit in struct kmem_cache: `size` in its first line,
`useroffset`/`usersize` after the embedded kobject, three lines further (offsets recalled;
what matters is that two distinct lines are read). `offset = (ptr - page_address(page)) %
s->size` is a 64-bit DIV by a loaded value on the path to the whitelist compares: WORK of
[instr] div64_cycles that waits for s->size. page_address's loads (vmemmap_base,
page_offset_base with KASLR) are not emitted (not re-read).

Model departures: a cache is `kmem_cache_create_usercopy` without debugging flags, ctor or
RCU, so s->size = ALIGN(object_size, align) (the free pointer lives inside free objects) and
slab_ksize() = s->size; slabs are order-0 pages taken from the kernel-data area, and objects
are handed out in address order, never freed.
"""
from dataclasses import dataclass, field

from kernels import usercopy
from kernels.memmap import PAGE_SIZE, align_up

KMEM_CACHE_BYTES = 256
SIZE_OFFSET = 0x18          # struct kmem_cache.size (after cpu_slab, flags, min_partial)
FLAGS_OFFSET = 0x08
USEROFFSET_OFFSET = 0xC0    # useroffset, usersize: after name, list and the kobject
PAGE_SLAB_CACHE_OFFSET = 0x18   # struct page.slab_cache (same 64-byte line as flags)


@dataclass
class KmemCache:
    name: str
    object_size: int
    size: int
    useroffset: int
    usersize: int
    addr: int                        # the struct kmem_cache, in kernel data
    slabs: list = field(default_factory=list)
    _next: int = 0                   # objects handed out so far


def kmem_cache_create_usercopy(mm, name, size, align, useroffset, usersize):
    """A cache of `size`-byte objects whose bytes [useroffset, useroffset+usersize) may be
    copied to or from user space (the whitelist)."""
    if not 0 <= useroffset <= size or not 0 <= usersize <= size - useroffset:
        raise ValueError(f"kmem_cache {name!r}: whitelist [{useroffset}, "
                         f"{useroffset}+{usersize}) is not inside the {size}-byte object")
    stride = align_up(size, max(align, 8))
    if stride > PAGE_SIZE:
        raise ValueError(f"kmem_cache {name!r}: objects above {PAGE_SIZE} bytes need "
                         f"higher-order slabs, which are not modelled")
    return KmemCache(name, size, stride, useroffset, usersize, mm.kalloc(KMEM_CACHE_BYTES))


def kmem_cache_alloc(mm, s):
    """The next object of cache `s` (a new slab page when the last one is full)."""
    per_slab = PAGE_SIZE // s.size
    k, i = divmod(s._next, per_slab)
    if k == len(s.slabs):
        slab = mm.kalloc(PAGE_SIZE, PAGE_SIZE)
        s.slabs.append(slab)
        mm.slab_cache[mm.pfn_to_page(slab // PAGE_SIZE)] = s
    s._next += 1
    return s.slabs[k] + i * s.size


def __check_heap_object(p, mm, ptr, n, page, to_user, fallback, div_cycles):
    """Is [ptr, ptr+n) inside the usercopy whitelist of its slab object? Reads
    page->slab_cache, then (dependent) s->size, divides by it (`div_cycles` of WORK on that
    load's data) and reads s->useroffset/usersize. Outside the whitelist but inside the
    object: a warning if `fallback` (CONFIG_HARDENED_USERCOPY_FALLBACK), else usercopy_abort;
    outside the object: abort."""
    p.load(page + PAGE_SLAB_CACHE_OFFSET)
    s = mm.slab_cache[page]
    start = mm.page_address(page)
    if ptr < start:
        usercopy.usercopy_abort("SLUB object not in SLUB page?!", None, to_user, 0, n)
    p.load(s.addr + FLAGS_OFFSET, dependent=True)     # kmem_cache_debug(s): no red zone
    p.load(s.addr + SIZE_OFFSET)
    p.work(div_cycles, dependent=True)                 # % s->size: DIV r64
    offset = (ptr - start) % s.size
    p.load(s.addr + USEROFFSET_OFFSET)
    if offset >= s.useroffset and offset - s.useroffset <= s.usersize and \
            n <= s.useroffset - offset + s.usersize:
        return
    if fallback and offset <= s.size and n <= s.size - offset:   # slab_ksize(s) = s->size
        usercopy.usercopy_warn("SLUB object", s.name, to_user, offset, n)
        return
    usercopy.usercopy_abort("SLUB object", s.name, to_user, offset, n)
