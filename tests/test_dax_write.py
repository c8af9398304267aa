"""The DAX write path (docs/kernel-paths.md §1.5): bytes arrive where the file maps them, the ops
come in the kernel's order, and bad offsets give the kernel's errors."""
import errno

import numpy as np
import pytest

from emu.studies.scenarios.dax_write_usercopy import build
from isa import Op, Program
from isa.ops import COL_ADDR, COL_FLAGS, COL_OP, COL_SIZE, FLAG_DEPENDENT
from kernels.dax import DaxFile, Iomap, dax_iomap_actor
from kernels.iov_iter import IovIter
from kernels.memmap import Memmap
from kernels.pmem import badblocks_check
from kernels.read_write import ksys_pwrite64

GiB, MiB = 1 << 30, 1 << 20
PMEM0 = 0x6000000000                  # cascadelake-optane's pmem0: 1536 GiB
# --map=dev: 402653184 struct pages of 64 B = 24 GiB after the 8 KiB info block, data from
# ALIGN(8 KiB + 24 GiB, 2 MiB)
DATA_DEV = PMEM0 + 24 * GiB + 2 * MiB
FILE = 4 * MiB


def rig(variant="bypass"):
    m, (f,), user, _ = build("cascadelake-optane", {}, variant, FILE)
    data = np.random.default_rng(11).integers(0, 256, 4 * 4096, dtype=np.uint8)
    m.write(user["base"], data)
    ranges = [(user["base"], user["base"] + user["size_bytes"])]
    return m, f, user["base"], data.tobytes(), ranges


def names(p):
    return [Op(int(r[COL_OP])).name for r in p.ops if r[COL_OP] != Op.SITE]


CASES = [(0, 1), (1, 1), (4095, 2), (3, 63), (63, 65), (4093, 4099), (7, 3 * 4096 - 7),
         (0, 3 * 4096), (4096, 4096), (100, 3 * 4096)]
CASES += [(int(a), int(b)) for a, b in zip(np.random.default_rng(2).integers(0, 4096, 6),
                                           np.random.default_rng(3).integers(1, 3 * 4096, 6))]


@pytest.mark.parametrize("variant", ["bypass", "memmap=pmem"])
def test_bytes_written_are_read_back_and_durable_after_a_fence(variant):
    m, f, buf, data, ranges = rig(variant)
    p = Program()
    for k, (off, n) in enumerate(CASES):
        pos = k * 4 * 4096 + off
        assert ksys_pwrite64(p, f, buf + off % 11, n, pos, ranges) == n
    m.run(p.sfence())          # e.g. the fence of a later fsync's nvdimm_flush
    img = m.crash()
    for k, (off, n) in enumerate(CASES):
        want = data[off % 11:off % 11 + n]
        addr = DATA_DEV + k * 4 * 4096 + off
        assert m.read(addr, n) == want, (off, n)
        # below 8 bytes __copy_user_flushcache writes back only dst's line (usercopy_64.c
        # clean_cache_range(dst, 1)): of (4095, 2) the byte in the next line is not durable
        durable = 64 - addr % 64 if n < 8 and addr % 64 + n > 64 else n
        assert img.read(addr, durable) == want[:durable], (off, n)
        if durable < n:
            assert img.read(addr + durable, n - durable) != want[durable:], (off, n)


# ops of one aligned 4 KiB write, SITE rows left out, by hand from the kernel's code
BYPASS_4K = (["LOAD", "LOAD", "BRANCH",             # access_ok (v5.0): current, addr_limit
              "STORE", "STORE", "STORE",            # new_sync_write: iovec, kiocb, iov_iter
              "LOAD", "LOAD",                       # ->iomap_begin: inode lines
              "LOAD",                               # dax_iomap_actor: the iomap
              "LOAD", "LOAD", "STORE", "LOCK_RMW",  # dax_read_lock: srcu_idx, counter++, smp_mb
              "LOAD", "LOAD",                       # bdev_dax_pgoff: bdev->bd_part->start_sect
              "LOAD", "LOAD",                       # dax_direct_access: alive, ->direct_access
              "LOAD", "LOAD",                       # __pmem_direct_access: pmem, bb.count
              "LOAD", "LOAD",                       # dax_copy_from_iter: alive, ->copy_from_iter
              "LOAD", "LOAD",                       # _copy_from_iter_flushcache: iterator,
                                                    # then the iovec through i->iov
              "STAC", "NT_COPY", "CLAC", "SFENCE",  # __copy_user_flushcache (aligned: no CLWB)
              "STORE",                              # iterator advanced
              "LOCK_RMW", "LOAD", "STORE",          # dax_read_unlock: smp_mb, counter++
              "STORE"])                             # new_sync_write: *ppos = kiocb.ki_pos


def test_aligned_write_op_sequence_unchecked():
    m, f, buf, _, ranges = rig("bypass")
    p = Program()
    ksys_pwrite64(p, f, buf, 4096, 8192, ranges)
    assert names(p) == BYPASS_4K
    copy = [r for r in p.ops if r[COL_OP] == Op.NT_COPY][0]
    assert (int(copy[COL_ADDR]), int(copy[COL_SIZE])) == (DATA_DEV + 8192, 4096)


@pytest.mark.parametrize("variant,page", [
    ("memmap=pmem", PMEM0 + 8192 + 64 * ((24 * GiB + 2 * MiB + 8192) >> 12)),
    ("memmap=dram", None)])
def test_checked_write_reads_the_struct_page_before_the_copy(variant, page):
    m, f, buf, _, ranges = rig(variant)
    p = Program()
    ksys_pwrite64(p, f, buf, 4096, 8192, ranges)
    got = names(p)
    i = BYPASS_4K.index("STAC") - 2       # before the iterator's loads
    # check_object_size: pfn_valid (3: mem_section, root, section), vmemmap + compound_head
    # (2), flags, current, ->stack
    assert got == BYPASS_4K[:i] + ["LOAD"] * 8 + BYPASS_4K[i:]
    kaddr = f.dax.pmem.data_offset + PMEM0 + 8192
    struct_page = f.dax.pmem.hardening.mm.pfn_to_page(kaddr >> 12)
    if page is not None:
        assert struct_page == page
    else:       # --map=mem: the struct page is in DRAM, data from 2 MiB
        assert f.dax.pmem.data_offset == 2 * MiB and struct_page < 192 * GiB
    load_addrs = [int(r[COL_ADDR]) for r in p.ops if r[COL_OP] == Op.LOAD]
    assert struct_page + 8 in load_addrs and struct_page in load_addrs


def test_unaligned_write_copies_at_the_mapped_address():
    m, f, buf, _, ranges = rig("bypass")
    p = Program()
    assert ksys_pwrite64(p, f, buf, 100, 4096 + 3, ranges) == 100
    ops = [(Op(int(r[COL_OP])).name, int(r[COL_ADDR]), int(r[COL_SIZE])) for r in p.ops
           if r[COL_OP] in (Op.CAREFUL_COPY, Op.NT_COPY, Op.FLUSH_RANGE)]
    d = DATA_DEV + 4096 + 3
    assert ops == [("CAREFUL_COPY", d, 5), ("NT_COPY", d + 5, 88), ("NT_COPY", d + 93, 4),
                   ("CAREFUL_COPY", d + 97, 3), ("FLUSH_RANGE", d, 1), ("FLUSH_RANGE", d + 99, 1)]


def errors_rig():
    m, f, buf, _, ranges = rig("bypass")
    return m, f, buf, ranges


@pytest.mark.parametrize("what,expect", [
    ("negative pos", -errno.EINVAL),
    ("pos + count past the largest loff_t", -errno.EINVAL),
    ("buffer outside the user's memory", -errno.EFAULT),
    ("past the file's blocks", -errno.ENOSPC),
    ("at s_maxbytes", -errno.EFBIG),
    ("known bad block", -errno.EIO),
    ("known bad block in the second page", -errno.EIO),
    ("dead dax device", -errno.ENXIO)])
def test_bad_writes_return_the_kernel_errors_and_write_nothing(what, expect):
    m, f, buf, ranges = errors_rig()
    pos, n = 4096, 100
    if what == "negative pos":
        pos = -1
    elif what == "pos + count past the largest loff_t":
        pos = 2**63 - 50
    elif what == "buffer outside the user's memory":
        buf = 2 * GiB                    # supervisor DRAM (user0 is the first GiB)
    elif what == "past the file's blocks":
        pos = FILE
    elif what == "at s_maxbytes":
        f.s_maxbytes = 4096
    elif what == "known bad block":
        f.dax.pmem.badblocks = [(8, 1)]  # sector 8 = the data's second page
    elif what == "known bad block in the second page":
        f.dax.pmem.badblocks = [(8, 1)]
        pos, n = 0, 4097                 # two pages mapped at once
    else:
        f.dax.alive = False
    p = Program()
    assert ksys_pwrite64(p, f, buf, n, pos, ranges) == expect
    assert not any(r[COL_OP] in (Op.NT_COPY, Op.CAREFUL_COPY) for r in p.ops)
    m.run(p)
    assert m.read(DATA_DEV, 3 * 4096) == bytes(3 * 4096)


def test_bad_block_elsewhere_does_not_stop_the_write():
    m, f, buf, _, ranges = rig("bypass")
    f.dax.pmem.badblocks = [(16, 8), (800, 8)]
    assert ksys_pwrite64(Program(), f, buf, 4096, 4096, ranges) == 4096


def test_write_is_truncated_at_s_maxbytes():
    m, f, buf, _, ranges = rig("bypass")
    f.s_maxbytes = 8192
    assert ksys_pwrite64(Program(), f, buf, 4096, 8000, ranges) == 192


def test_mapping_past_the_device_is_a_short_write_then_erange():
    m, f, buf, data, ranges = rig("bypass")
    cap = f.dax.pmem.capacity
    for addr, want in [(cap, -errno.ERANGE), (cap - 4096, 4096), (512, -errno.EINVAL)]:
        i = IovIter("iovec", [(buf, 8192)], f.stack + 256)
        assert dax_iomap_actor(Program(), f, 0, 8192, i, Iomap(0, 8192, addr)) == want
    i = IovIter("iovec", [(buf, 100)], f.stack + 256)
    hole = Iomap(0, 8192, 0, type="hole")
    assert dax_iomap_actor(Program(), f, 0, 100, i, hole) == -errno.EIO


def test_bad_files_and_iterators_are_named():
    m, f, *_ = rig("bypass")
    persistence = {n: v["persistence"] for n, v in m.profile.values["media"].items()}
    mm = Memmap(list(m.regions.values()), persistence)
    with pytest.raises(ValueError, match="past the end"):
        DaxFile.create(mm, f.dax, f.bdev, f.dax.pmem.capacity, 4096)
    with pytest.raises(ValueError, match="bvec"):
        IovIter("bvec", [(0, 1)], 0)


def test_a_copy_of_nothing_is_efault():
    # as when the user buffer faults on its first byte: xfer == 0 -> -EFAULT
    m, f, buf, _, ranges = rig("bypass")
    i = IovIter("iovec", [(buf, 0)], f.stack + 256)
    assert dax_iomap_actor(Program(), f, 0, 100, i, Iomap(0, 8192, 0)) == -errno.EFAULT


def test_access_ok_reads_the_limit_through_current():
    # v5.0 uaccess.h: access_ok compares with current->thread.addr_limit.seg, so the limit is a
    # load through the per-CPU current_task, and the compare's branch waits for it
    m, f, buf, _, ranges = rig("bypass")
    p = Program()
    ksys_pwrite64(p, f, buf, 4096, 8192, ranges)
    rows = [r for r in p.ops if r[COL_OP] != Op.SITE][:3]
    assert [int(r[COL_ADDR]) for r in rows[:2]] == [f.task.current_task,
                                                   f.task.task_struct + 3 * 64]
    assert rows[1][COL_FLAGS] & FLAG_DEPENDENT and rows[2][COL_FLAGS] & FLAG_DEPENDENT


@pytest.mark.parametrize("table,sector,bad,probes", [
    # badblocks.c: no binary-search probe for one range, but the backward scan reads p[0]
    ([(16, 8)], 0, False, [0]),
    ([(16, 8)], 16, True, [0]),
    # four ranges, search for the last starting before sector 8+8: probes 2 (lo=0,hi=2) and
    # 1 (lo=1), then the scan reads p[1] (ends at 9 > 8: overlaps) and p[0] (ends at 2)
    ([(0, 2), (8, 1), (40, 8), (80, 8)], 8, True, [2, 1, 1, 0])])
def test_badblocks_check_reads_the_table_as_the_kernel_does(table, sector, bad, probes):
    m, f, *_ = rig("bypass")
    pmem = f.dax.pmem
    pmem.badblocks = table
    p = Program()
    assert badblocks_check(p, pmem, sector, 8) is bad
    lds = [int(r[COL_ADDR]) for r in p.ops if r[COL_OP] == Op.LOAD]
    bbl = pmem.addr + 64
    # bb->page, read_seqbegin, bb->count, the table entries, read_seqretry
    assert lds == [bbl + 24, bbl + 40, bbl] + [pmem.bb_page + 8 * k for k in probes] + [bbl + 40]
