"""The pmem driver's dax operations.

Follows drivers/nvdimm/pmem.c (v5.0/v5.1) `__pmem_direct_access`, `pmem_dax_direct_access`
and `pmem_copy_from_iter`, `pmem_copy_to_iter` (v5.10+: `_copy_mc_to_iter`; the
dax-read-copy-mc study's read side, so v5.0's checked `copy_to_iter_mcsafe` is not modelled),
and block/badblocks.c `badblocks_check` through `is_bad_pmem`
(docs/kernel-paths.md §1.4-1.5). Before v5.2 `pmem_copy_from_iter` called the checked
`copy_from_iter_flushcache`; the patch "libnvdimm/pmem: Bypass CONFIG_HARDENED_USERCOPY
overhead" (merged v5.2) switched it to `_copy_from_iter_flushcache`:
`PmemDevice.hardening` is the Hardening state for the former, None for the latter.

Model departures: struct pmem_device is two DRAM lines at a fixed kernel address (the first:
phys_addr, data_offset, virt_addr, size, pfn_pad; the second: the embedded struct badblocks),
and the badblocks table one page. Past the end of the device the kernel's unsigned
`size - pfn_pad - offset` would wrap (it relies on the file system never mapping there); the
model returns no pages, which dax_direct_access turns into -ERANGE, as it does at the end.
"""
import errno
from dataclasses import dataclass, field

from kernels.copy_mc import CopyMc
from kernels.iov_iter import _copy_from_iter_flushcache, _copy_mc_to_iter, copy_from_iter_flushcache
from kernels.memmap import PAGE_SHIFT, PAGE_SIZE

SECTOR_SHIFT = 9
BB_OFFSET = 64             # the embedded struct badblocks: second line of pmem_device
BB_PAGE, BB_SEQ = 24, 40   # its page pointer and seqlock (after dev, count, unacked, shift)


@dataclass
class PmemDevice:
    """A namespace as the pmem driver sees it: [phys_addr, phys_addr+size), data from
    data_offset on; `badblocks` = sorted (first sector, sectors) of known poison,
    relative to the data start; `flush` = the CPU's clwb() instruction."""
    phys_addr: int
    size: int
    data_offset: int
    addr: int
    bb_page: int
    flush: object
    hardening: object = None
    badblocks: list = field(default_factory=list)
    copy_mc: CopyMc = CopyMc()
    pfn_pad: int = 0

    def __post_init__(self):
        self.badblocks = sorted(self.badblocks)

    @classmethod
    def for_namespace(cls, mm, namespace, flush, hardening=None):
        return cls(namespace["base"], namespace["size_bytes"], mm.data_offset(namespace),
                   mm.kalloc(2 * 64), mm.kalloc(PAGE_SIZE, PAGE_SIZE), flush, hardening)

    @property
    def virt_addr(self):
        return self.phys_addr

    @property
    def capacity(self):
        """Bytes of the block device (data after the memmap reservation)."""
        return self.size - self.data_offset - self.pfn_pad


def badblocks_check(p, pmem, s, sectors):
    """True if [s, s+sectors) overlaps a bad range (block/badblocks.c, pre-2022 form, store
    id 20700906988): `p = bb->page`; read_seqbegin; `hi = bb->count`; binary search for the
    last range starting before the end, one load per probe (8-byte entries; marked dependent:
    the next probe's address follows from the compare); then, if the table is not empty,
    the ranges from there backwards while they end after s, one load each (at least one);
    read_seqretry. The struct badblocks fields are one line (BB_OFFSET)."""
    bb, bbl = pmem.badblocks, pmem.addr + BB_OFFSET
    target = s + sectors
    p.load(bbl + BB_PAGE)                               # p = bb->page
    p.load(bbl + BB_SEQ)                                # read_seqbegin(&bb->lock)
    p.load(bbl)                                         # hi = bb->count
    lo, hi = 0, len(bb)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        p.load(pmem.bb_page + 8 * mid, dependent=True)
        lo, hi = (mid, hi) if bb[mid][0] < target else (lo, mid)
    bad = False
    if hi > lo:
        while lo >= 0:
            p.load(pmem.bb_page + 8 * lo)
            b, n = bb[lo]
            if b + n <= s:
                break
            bad = bad or b < target
            lo -= 1
    p.load(bbl + BB_SEQ)                                # read_seqretry
    return bad


def is_bad_pmem(p, pmem, sector, nbytes):
    p.load(pmem.addr + BB_OFFSET)                       # bb.count
    if pmem.badblocks:
        return badblocks_check(p, pmem, sector, nbytes >> SECTOR_SHIFT)
    return False


def __pmem_direct_access(p, pmem, pgoff, nr_pages):
    """(pages available from pgoff, kernel address) or (-EIO, None) on known poison."""
    p.load(pmem.addr)                                   # data_offset, virt_addr, size
    offset = (pgoff << PAGE_SHIFT) + pmem.data_offset
    if is_bad_pmem(p, pmem, (pgoff << PAGE_SHIFT) >> SECTOR_SHIFT, nr_pages << PAGE_SHIFT):
        return -errno.EIO, None
    kaddr = pmem.virt_addr + offset
    if pmem.badblocks:
        return nr_pages, kaddr
    return max(0, pmem.size - pmem.pfn_pad - offset) >> PAGE_SHIFT, kaddr


def pmem_dax_direct_access(p, pmem, pgoff, nr_pages):
    return __pmem_direct_access(p, pmem, pgoff, nr_pages)


def pmem_copy_from_iter(p, pmem, pgoff, addr, nbytes, i):
    """The dax_operations copy: checked before v5.2, unchecked since."""
    if pmem.hardening is not None:
        return copy_from_iter_flushcache(p, pmem.hardening, pmem.flush, addr, nbytes, i)
    return _copy_from_iter_flushcache(p, pmem.flush, addr, nbytes, i)


def pmem_copy_to_iter(p, pmem, pgoff, addr, nbytes, i):
    """The dax_operations read copy (v5.10+): _copy_mc_to_iter."""
    return _copy_mc_to_iter(p, pmem.copy_mc, addr, nbytes, i)
