"""The DAX read and write paths from ->read_iter / ->write_iter to the pmem driver.

Follows fs/dax.c (v5.0/v5.1, blob 17638810) `dax_iomap_rw`, `dax_iomap_actor`,
`dax_iomap_sector`, drivers/dax/super.c `bdev_dax_pgoff`, `dax_direct_access`,
`dax_copy_from_iter`, `dax_copy_to_iter` (the read side as in v5.10, whose pmem copy is
the machine-check-safe `_copy_mc_to_iter`; a read of a hole or unwritten extent zero-fills
the buffer with `iov_iter_zero`, fs/dax.c v5.10.13 `dax_iomap_actor`),
`dax_read_lock`/`dax_read_unlock` (Tree SRCU `srcu_read_lock`: per-CPU counter increment
and smp_mb()), and fs/iomap.c `iomap_apply` (docs/kernel-paths.md §1.5). Errors are the
kernel's negative errnos.

Model departures: the file system is a minimal fsdax one (`DaxFile`): one preallocated
extent mapped at a fixed device offset, whose ->iomap_begin returns that extent
(IOMAP_MAPPED) and -ENOSPC past it (no allocator); its work (locks, journal handle, extent
lookup) is a declared cost (profile [software].fs_write_iter_ns, emitted by the caller),
only its loads of the inode line are emitted here. smp_mb() is the locked add on the kernel
stack (kernels/barrier.py). A pending fatal signal is never set.
"""
import errno
from dataclasses import dataclass

from kernels.barrier import smp_mb
from kernels.iov_iter import iov_iter_zero
from kernels.memmap import PAGE_SHIFT, PAGE_SIZE
from kernels.pmem import (
    SECTOR_SHIFT,
    pmem_copy_from_iter,
    pmem_copy_to_iter,
    pmem_dax_direct_access,
)
from kernels.usercopy import Task

IOMAP_HOLE, IOMAP_MAPPED, IOMAP_UNWRITTEN = "hole", "mapped", "unwritten"
IOMAP_F_NEW = 1
MAX_LFS_FILESIZE = 2**63 - 1


@dataclass
class DaxDevice:
    """struct dax_device (flags, ops pointer: one line) over a pmem device; `ops_table` is
    the dax_operations table, `srcu` the dax_srcu struct and `srcu_counter` this CPU's
    srcu_data counters (all DRAM, fixed kernel addresses)."""
    addr: int
    ops_table: int
    srcu: int
    srcu_counter: int
    pmem: object
    alive: bool = True

    @classmethod
    def create(cls, mm, pmem):
        return cls(mm.kalloc(64), mm.kalloc(64), mm.kalloc(64), mm.kalloc(64), pmem)


@dataclass
class Bdev:
    """The block device: bdev->bd_part->start_sect (0: the whole namespace)."""
    addr: int
    part: int
    start_sect: int = 0

    @classmethod
    def create(cls, mm, start_sect=0):
        return cls(mm.kalloc(64), mm.kalloc(64), start_sect)


@dataclass
class Iomap:
    """What ->iomap_begin returns: file range [offset, offset+length) at device byte `addr`."""
    offset: int
    length: int
    addr: int
    type: str = IOMAP_MAPPED
    flags: int = 0


def dax_read_lock(p, dax, stack):
    """srcu_read_lock(&dax_srcu): read srcu_idx, increment this CPU's lock count, smp_mb()
    (on the kernel stack at `stack`)."""
    p.load(dax.srcu)
    p.load(dax.srcu_counter, dependent=True)
    p.store(dax.srcu_counter, size=8, value=1)
    smp_mb(p, stack)
    return 0


def dax_read_unlock(p, dax, idx, stack):
    """srcu_read_unlock: smp_mb(), increment this CPU's unlock count."""
    smp_mb(p, stack)
    p.load(dax.srcu_counter + 16)
    p.store(dax.srcu_counter + 16, size=8, value=1)


def bdev_dax_pgoff(p, bdev, sector, size):
    """(0, pgoff) for a page-aligned device byte offset and size, else (-EINVAL, pgoff)."""
    p.load(bdev.addr)                                   # bdev->bd_part
    p.load(bdev.part, dependent=True)                   # ->start_sect
    phys_off = (bdev.start_sect + sector) << SECTOR_SHIFT
    pgoff = phys_off >> PAGE_SHIFT
    if phys_off % PAGE_SIZE or size % PAGE_SIZE:
        return -errno.EINVAL, pgoff
    return 0, pgoff


def dax_direct_access(p, dax, pgoff, nr_pages):
    """(pages, kaddr): -ENXIO for a dead device, -ERANGE if nothing is available at pgoff,
    the driver's error (-EIO on badblocks) as is; else min(available, nr_pages)."""
    p.load(dax.addr)                                    # flags (DAXDEV_ALIVE), ops
    if not dax.alive:
        return -errno.ENXIO, None
    if nr_pages < 0:
        return nr_pages, None
    p.load(dax.ops_table, dependent=True)               # ->direct_access
    avail, kaddr = pmem_dax_direct_access(p, dax.pmem, pgoff, nr_pages)
    if not avail:
        return -errno.ERANGE, None
    return (avail, kaddr) if avail < 0 else (min(avail, nr_pages), kaddr)


def _dax_copy(p, dax, copy, pgoff, addr, nbytes, i):
    p.load(dax.addr)                                    # dax_alive
    if not dax.alive:
        return 0
    p.load(dax.ops_table, dependent=True)               # ->copy_from_iter / ->copy_to_iter
    return copy(p, dax.pmem, pgoff, addr, nbytes, i)


def dax_copy_from_iter(p, dax, pgoff, addr, nbytes, i):
    return _dax_copy(p, dax, pmem_copy_from_iter, pgoff, addr, nbytes, i)


def dax_copy_to_iter(p, dax, pgoff, addr, nbytes, i):
    return _dax_copy(p, dax, pmem_copy_to_iter, pgoff, addr, nbytes, i)


def dax_iomap_sector(iomap, pos):
    return (iomap.addr + (pos & ~(PAGE_SIZE - 1)) - iomap.offset) >> SECTOR_SHIFT


def dax_iomap_actor(p, f, pos, length, i, iomap):
    """Write (read) [pos, pos+length) of the file from (to) the iterator through one extent.
    Returns the bytes moved, or a negative errno if none were. A read ends at i_size."""
    end, done, ret = pos + length, 0, 0
    p.load(f.stack)                                     # the iomap, on the stack
    if i.rw == "read":
        p.load(f.inode)                                 # i_size_read
        end = min(end, f.size)
        if pos >= end:
            return 0
        if iomap.type in (IOMAP_HOLE, IOMAP_UNWRITTEN):
            with p.function("iov_iter_zero"):
                return iov_iter_zero(p, min(length, end - pos), i)
    if iomap.type != IOMAP_MAPPED:
        return -errno.EIO
    idx = dax_read_lock(p, f.dax, f.stack)
    while pos < end:
        offset = pos & (PAGE_SIZE - 1)
        size = -(-(length + offset) // PAGE_SIZE) * PAGE_SIZE
        sector = dax_iomap_sector(iomap, pos)
        ret, pgoff = bdev_dax_pgoff(p, f.bdev, sector, size)
        if ret:
            break
        map_len, kaddr = dax_direct_access(p, f.dax, pgoff, size >> PAGE_SHIFT)
        if map_len < 0:
            ret = map_len
            break
        map_len = (map_len << PAGE_SHIFT) - offset
        map_len = min(map_len, end - pos)
        copy = dax_copy_to_iter if i.rw == "read" else dax_copy_from_iter
        xfer = copy(p, f.dax, pgoff, kaddr + offset, map_len, i)
        pos, length, done = pos + xfer, length - xfer, done + xfer
        if xfer == 0:
            ret = -errno.EFAULT
        if xfer < map_len:
            break
    dax_read_unlock(p, f.dax, idx, f.stack)
    return done if done else ret


@dataclass
class DaxFile:
    """An open file on the minimal fsdax file system: `size` bytes (i_size) of which the
    first `extent_bytes` are allocated, contiguously from device byte `extent_addr`.
    `inode` is the inode's line, `stack` a kernel-stack page (iomap, iov_iter, kiocb), `task`
    the calling task (kernels/usercopy.Task: `current`, shared with the hardened-usercopy
    stack check when the copy is checked)."""
    dax: DaxDevice
    bdev: Bdev
    inode: int
    stack: int
    size: int
    extent_addr: int
    extent_bytes: int
    task: Task = None
    s_maxbytes: int = MAX_LFS_FILESIZE

    @classmethod
    def create(cls, mm, dax, bdev, extent_addr, extent_bytes, size=None):
        """A file whose blocks are the device bytes [extent_addr, extent_addr+extent_bytes)."""
        if extent_addr < 0 or extent_bytes <= 0 or extent_bytes % PAGE_SIZE:
            raise ValueError(f"extent of {extent_bytes} bytes at {extent_addr}: needs a "
                             f"positive whole number of pages at a non-negative offset")
        if extent_addr + extent_bytes > dax.pmem.capacity:
            raise ValueError(f"extent [{extent_addr}, {extent_addr + extent_bytes}) is past the "
                             f"end of the {dax.pmem.capacity}-byte device")
        hard = dax.pmem.hardening
        return cls(dax, bdev, mm.kalloc(2 * 64), mm.kalloc(PAGE_SIZE, PAGE_SIZE),
                   extent_bytes if size is None else size, extent_addr, extent_bytes,
                   hard.task if hard is not None else Task.create(mm))


def iomap_begin(p, f, pos, length, write=True):
    """The file system's ->iomap_begin: the extent holding pos; past the preallocated
    blocks a write gets -ENOSPC (the model has no allocator), a read a hole."""
    p.load(f.inode)                                     # i_size, block map root
    p.load(f.inode + 64)
    if pos >= f.extent_bytes:
        return -errno.ENOSPC if write else Iomap(offset=pos, length=length, addr=0,
                                                 type=IOMAP_HOLE)
    return Iomap(offset=0, length=f.extent_bytes, addr=f.extent_addr)


def iomap_apply(p, f, pos, length, i, actor):
    """fs/iomap.c: map, clamp the length to the mapping, run the actor."""
    iomap = iomap_begin(p, f, pos, length, i.rw == "write")
    if isinstance(iomap, int):
        return iomap
    if iomap.offset > pos or iomap.length == 0:
        return -errno.EIO
    length = min(length, iomap.offset + iomap.length - pos)
    return actor(p, f, pos, length, i, iomap)


def dax_iomap_rw(p, f, pos, i):
    """Move the iterator's bytes at pos; returns bytes moved or a negative errno."""
    done, ret = 0, 0
    while i.count:
        ret = iomap_apply(p, f, pos, i.count, i, dax_iomap_actor)
        if ret <= 0:
            break
        pos, done = pos + ret, done + ret
    return done if done else ret


def dax_write_iter(p, f, pos, i):
    """->write_iter of the DAX file (ext4_dax_write_iter, v5.0): generic_write_checks (-EFBIG
    at or past s_maxbytes, the iterator truncated to it), dax_iomap_rw, i_size extended."""
    if not i.count:
        return 0
    if pos >= f.s_maxbytes:
        return -errno.EFBIG
    if pos + i.count > f.s_maxbytes:
        i.segs = _truncated(i, f.s_maxbytes - pos)
    with p.function("dax_iomap_rw"):
        ret = dax_iomap_rw(p, f, pos, i)
    if ret > 0 and pos + ret > f.size:
        f.size = pos + ret
        p.store(f.inode, size=8, value=f.size)
    return ret


def dax_read_iter(p, f, pos, i):
    """->read_iter of the DAX file (ext4_dax_read_iter / xfs_file_dax_read): dax_iomap_rw
    under the shared inode lock (its work is in the declared fs cost)."""
    if not i.count:
        return 0
    with p.function("dax_iomap_rw"):
        return dax_iomap_rw(p, f, pos, i)


def _truncated(i, count):
    """iov_iter_truncate(): the segments that hold the first `count` bytes left."""
    out, left = [], count + i.iov_offset
    for base, n in i.segs[i.seg:]:
        out.append((base, min(n, left)))
        left -= out[-1][1]
    return i.segs[:i.seg] + out
