"""Hardened usercopy (docs/kernel-paths.md §1.1-1.3): where the memmap lives, which loads the
checks make in which order, and slab overflows refused before anything is copied."""
import numpy as np
import pytest

from emu import Machine
from isa import Op, Program
from isa.ops import COL_ADDR, COL_FLAGS, COL_IMM, COL_OP, FLAG_DEPENDENT
from kernels import slub
from kernels.iov_iter import IovIter, copy_from_iter_flushcache
from kernels.memmap import Memmap
from kernels.usercopy import (
    Hardening,
    UsercopyAbort,
    UsercopyWarning,
    __check_object_size,
    check_copy_size,
)

GiB, MiB = 1 << 30, 1 << 20
REGIONS = [dict(name="dram0", base=0, size_bytes=4 * GiB, media="dram", node=0),
           dict(name="user0", base=4 * GiB, size_bytes=16 * MiB, media="dram", node=0,
                privilege="user"),
           dict(name="pmem0", base=8 * GiB, size_bytes=1 * GiB, media="optane", node=0)]
PERSISTENCE = {"dram": "none", "optane": "adr"}
DIV64 = 36     # cycles of the slab check's 64-bit DIV: an input the check passes on as WORK


def machine():
    return Machine("cascadelake-optane", regions=REGIONS, smap=True)


def memmap(m, placement):
    return Memmap(list(m.regions.values()), PERSISTENCE, placement)


def test_struct_page_addresses_by_hand():
    m = machine()
    dev, mem = memmap(m, "dev"), memmap(m, "mem")
    ns = m.regions["pmem0"]
    pfn = (8 * GiB + 5 * 4096) >> 12
    # --map=dev: after the 8 KiB info block at the namespace start; 1 GiB = 262144 pages
    # of 64 B = 16 MiB of memmap, data from ALIGN(8 KiB + 16 MiB, 2 MiB) = 18 MiB
    assert dev.pfn_to_page(pfn) == 8 * GiB + 8192 + 5 * 64
    assert dev.data_offset(ns) == 18 * MiB
    # --map=mem: in DRAM at the top of dram0: 4 GiB + 16 MiB + 1 GiB of pages = 80.25 MiB of
    # struct pages, rounded to 82 MiB; dram0's first, then user0's (256 KiB), then pmem0's
    base = 4 * GiB - 82 * MiB
    assert mem.pfn_to_page(pfn) == base + 64 * MiB + 256 * 1024 + 5 * 64
    assert mem.data_offset(ns) == 2 * MiB
    assert mem.pfn_to_page(3) == base + 3 * 64
    assert mem.page_address(mem.pfn_to_page(pfn)) == pfn << 12


def test_bad_placement_and_missing_dram_are_named():
    with pytest.raises(ValueError, match="pmem_map"):
        Memmap(REGIONS, PERSISTENCE, "ram")
    only_pmem = [dict(REGIONS[2], privilege="supervisor")]
    with pytest.raises(ValueError, match="DRAM region on node 0"):
        Memmap(only_pmem, PERSISTENCE)


def loads(p):
    return [(int(r[COL_ADDR]), bool(r[COL_FLAGS])) for r in p.ops if r[COL_OP] == Op.LOAD]


def test_check_of_a_pmem_destination_reads_its_struct_page_in_kernel_order():
    m = machine()
    mm = memmap(m, "dev")
    hard = Hardening.create(mm, DIV64)
    dst = 8 * GiB + 18 * MiB + 100        # first data page of the namespace
    p = Program()
    __check_object_size(p, hard, dst, 4096, False)
    page = 8 * GiB + 8192 + 64 * ((18 * MiB) >> 12)
    nr = dst >> 27                        # 128 MiB sections, 256 per root page
    assert loads(p) == [
        (mm.mem_section_var, False),                               # pfn_valid: mem_section,
        (mm.mem_section + 8 * (nr // 256), True),                  # then the root pointer,
        (mm.section_roots + 4096 * (nr // 256) + 16 * (nr % 256), True),  # then the section
        (mm.vmemmap_base, False),                                  # virt_to_head_page
        (page + 8, True),                                          # page->compound_head
        (page, False),                                             # PageSlab: page->flags
        (hard.task.current_task, False),                           # check_stack_object
        (hard.task.task_struct + 0x18, True)]                      # current->stack


@pytest.mark.parametrize("placement,optane_reads", [("dev", True), ("mem", False)])
def test_memmap_placement_decides_the_media_of_the_struct_page_read(placement, optane_reads):
    m = machine()
    hard = Hardening.create(memmap(m, placement), DIV64)
    p = Program()
    __check_object_size(p, hard, 8 * GiB + 18 * MiB + 4096 * 7, 4096, False)
    m.run(p)
    media = m.stats()["media"]
    assert (media["optane"]["line_reads"] > 0) is optane_reads
    # mem_section (the variable, the roots array, the root page), vmemmap, current,
    # task->stack: at least four DRAM lines; the struct page a fifth
    assert media["dram"]["line_reads"] >= (5 if not optane_reads else 4)


def slab_rig(fallback=True):
    m = machine()
    mm = memmap(m, "dev")
    hard = Hardening.create(mm, DIV64, fallback=fallback)
    cache = slub.kmem_cache_create_usercopy(mm, "test_cache", 200, 8, 16, 64)
    objs = [slub.kmem_cache_alloc(mm, cache) for _ in range(3)]
    user = 4 * GiB
    data = np.arange(512, dtype=np.uint32).astype(np.uint8) | 1
    m.write(user, data)
    return m, hard, objs, user


def copy_into(m, hard, dst, n, user):
    p = Program()
    i = IovIter("iovec", [(user, n)], hard.task.stack + 1024)
    done = copy_from_iter_flushcache(p, hard, Op.CLWB, dst, n, i)
    return p, done


def test_objects_are_laid_out_by_the_cache_stride():
    _, _, objs, _ = slab_rig()
    assert objs[1] - objs[0] == 200 and objs[2] - objs[1] == 200 and objs[0] % 4096 == 0


def test_copy_inside_the_whitelist_goes_ahead_and_arrives():
    m, hard, objs, user = slab_rig()
    p, done = copy_into(m, hard, objs[1] + 16, 64, user)
    assert done == 64
    m.run(p)
    assert m.read(objs[1] + 16, 64) == m.read(user, 64)


@pytest.mark.parametrize("off,n,fallback", [(16, 300, True),    # past the 200-byte object
                                            (16, 65, False),    # past the 64-byte whitelist
                                            (190, 20, True),    # object end crossed
                                            (8, 8, False)])     # before the whitelist
def test_overflowing_copy_is_refused_and_copies_nothing(off, n, fallback):
    m, hard, objs, user = slab_rig(fallback)
    before = m.read(objs[1], 400)
    with pytest.raises(UsercopyAbort) as info:
        copy_into(m, hard, objs[1] + off, n, user)
    e = info.value
    assert (e.name, e.detail, e.offset, e.len, e.to_user) == ("SLUB object", "test_cache", off,
                                                               n, False)
    assert "overwrite attempt detected to SLUB object 'test_cache'" in str(e)
    assert f"(offset {off}, size {n})" in str(e)
    assert m.read(objs[1], 400) == before


def test_refused_copy_emitted_no_copy_op():
    m, hard, objs, user = slab_rig(False)
    p = Program()
    i = IovIter("iovec", [(user, 100)], hard.task.stack + 1024)
    with pytest.raises(UsercopyAbort):
        copy_from_iter_flushcache(p, hard, Op.CLWB, objs[0] + 16, 100, i)
    kinds = {Op(int(r[COL_OP])) for r in p.ops}
    assert kinds <= {Op.LOAD, Op.SITE, Op.WORK} and i.count == 100
    # the slab page's struct page, then the cache's size and whitelist lines were read
    cache = hard.mm.slab_cache[hard.mm.pfn_to_page(objs[0] >> 12)]
    assert [a for a, _ in loads(p)][-3:] == [cache.addr + 0x08, cache.addr + 0x18,
                                            cache.addr + 0xC0]


def test_slab_offset_is_a_division_on_the_size_just_loaded():
    # __check_heap_object: offset = (ptr - page_address(page)) % s->size, a DIV r64 by the
    # value of the s->size load, before the whitelist compares that need it
    m, hard, objs, user = slab_rig()
    p, _ = copy_into(m, hard, objs[1] + 16, 64, user)
    cache = hard.mm.slab_cache[hard.mm.pfn_to_page(objs[1] >> 12)]
    ops = p.ops
    size_load = (ops[:, COL_OP] == Op.LOAD) & (ops[:, COL_ADDR] == cache.addr + 0x18)
    at = int(np.nonzero(size_load)[0][0])
    assert ops[at + 1, COL_OP] == Op.WORK and ops[at + 1, COL_IMM] == DIV64
    assert ops[at + 1, COL_FLAGS] & FLAG_DEPENDENT
    assert np.sum(ops[:, COL_OP] == Op.WORK) == 1


def test_fallback_warns_inside_the_object():
    m, hard, objs, user = slab_rig(True)
    with pytest.warns(UsercopyWarning, match=r"SLUB object 'test_cache' \(offset 16, size 100\)"):
        _, done = copy_into(m, hard, objs[0] + 16, 100, user)
    assert done == 100


def test_stack_text_null_and_wrap_are_refused():
    m = machine()
    hard = Hardening.create(memmap(m, "dev"), DIV64)
    stack = hard.task.stack
    __check_object_size(Program(), hard, stack + 100, 200, True)          # inside: fine
    for ptr, n, name in [(stack - 8, 16, "process stack"), (hard.text[0] + 64, 8, "kernel text"),
                         (8, 4, "null address"), (2**64 - 8, 16, "wrapped address")]:
        with pytest.raises(UsercopyAbort) as info:
            __check_object_size(Program(), hard, ptr, n, True)
        assert info.value.name == name and "exposure attempt detected from" in str(info.value)


def test_disabled_or_zero_size_checks_nothing():
    m = machine()
    mm = memmap(m, "dev")
    for hard, n in [(Hardening.create(mm, DIV64, enabled=False), 100),
                    (Hardening.create(mm, DIV64), 0)]:
        p = Program()
        __check_object_size(p, hard, 8, n, False)      # would be a "null address" abort
        assert len(p) == 0


def test_check_copy_size_refuses_known_overflows_and_huge_sizes():
    m = machine()
    hard = Hardening.create(memmap(m, "dev"), DIV64)
    p = Program()
    with pytest.warns(UsercopyWarning, match=r"Buffer overflow detected \(16 < 32\)"):
        assert check_copy_size(p, hard, 8 * GiB + 18 * MiB, 32, False, object_size=16) is False
    with pytest.warns(UsercopyWarning, match="INT_MAX"):
        assert check_copy_size(p, hard, 8 * GiB + 18 * MiB, 2**31, False) is False
    assert len(p) == 0
