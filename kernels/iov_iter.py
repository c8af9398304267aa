"""Copies between an iov_iter and pmem.

Follows lib/iov_iter.c `_copy_from_iter_flushcache` (v4.20-v5.x) and include/linux/uio.h
`copy_from_iter_flushcache` (v4.13-v5.x) as read in docs/kernel-paths.md §1.4-1.5: per segment,
a user iovec goes through `__copy_from_user_flushcache` = `__copy_user_flushcache`, a kvec
through `memcpy_flushcache` (kernels/usercopy_64.py); `iterate_and_advance` stops at the
first segment copied short. The read side, `_copy_mc_to_iter` (v5.10+; `_copy_to_iter_mcsafe`
before), copies out through `copyout_mc` (access_ok + copy_mc_to_user) for a user iovec and
copy_mc_to_kernel for a kvec (kernels/copy_mc.py).

The read side is v5.10+ (lib/iov_iter.c v5.10.13, Rtoax/linux-5.10.13, as read in
/work/reports/kernel-check-B.md §4): the dax-read-copy-mc study models copy_mc, so v5.0's
checked `copy_to_iter_mcsafe` (check_copy_size on the pmem source) is not on its path.
`iov_iter_zero` (a read of a hole or unwritten extent) clears a user segment with
`clear_user` = access_ok, then `__clear_user` (arch/x86/lib/usercopy_64.c blob 02101c45):
STAC, 8-byte stores of zero, byte stores for the rest, CLAC; a kvec segment with memset.

`iterate_and_advance` reads the iterator (type, iov_offset, count, `iov`) and then each iovec
entry through the `iov` pointer: one load of the iterator's line, the first entry's load
dependent on it; at the end it writes count, iov_offset, nr_segs and iov back (one store of
the iterator's line).

Model departures: ITER_BVEC and ITER_PIPE are not modelled (a ValueError names them). The
iterator and its iovec array sit at fixed kernel-stack addresses (`IovIter.addr`). Whether a
machine-check-safe copy comes up short is known only after the run: the read side advances
the iterator as if every copy were whole and keeps each copy's Ret in `IovIter.copies`;
`copied()` then gives the bytes the kernel's loop, which stops at the first short copy, would
report. (For a kvec the kernel then returns without writing the iterator back; the model
still emits that store.) clear_user's stores are assumed not to fault: the buffer was checked
against the task's user ranges up front (kernels/read_write.py).
"""
from dataclasses import dataclass, field

import numpy as np

from isa.program import Ret
from kernels import copy_mc as mc
from kernels import usercopy_64 as uc
from kernels.uaccess import range_cmp
from kernels.usercopy import check_copy_size

ITER_TYPES = ("iovec", "kvec")
IOV_ITER_BYTES = 64        # struct iov_iter, then the iovec array (16 bytes an entry)
ITER_FIELDS_BYTES = 40     # type, iov_offset, count, iov, nr_segs (x86-64, v5.0-v5.10)


@dataclass
class IovIter:
    """An iterator over (base, len) segments: user addresses ("iovec") or kernel ("kvec");
    `rw` "write": the data source of a write, "read": the destination of a read."""
    type: str
    segs: list
    addr: int
    rw: str = "write"
    seg: int = 0
    iov_offset: int = 0
    copies: list = field(default_factory=list)   # (Ret, bytes) of each copy-out

    def __post_init__(self):
        if self.type not in ITER_TYPES:
            raise ValueError(f"iov_iter type {self.type!r} is not modelled; types: "
                             f"{', '.join(ITER_TYPES)}")
        if any(n < 0 for _, n in self.segs):
            raise ValueError("iov_iter: negative segment length")

    @property
    def count(self):
        """iov_iter_count(): bytes left."""
        return sum(n for _, n in self.segs[self.seg:]) - self.iov_offset


def _iovec_entry(p, i, first):
    """Load the current iovec entry: through `i->iov`, loaded just before for the first."""
    p.load(i.addr + IOV_ITER_BYTES + 16 * i.seg, dependent=first)


def _iterate_and_advance(p, i, nbytes, step):
    """iterate_and_advance (lib/iov_iter.c): the iterator's fields loaded, then per segment
    its iovec entry and step(address, bytes, done so far), which emits the segment's work and
    returns the bytes it left undone (a fault: the walk stops there); the iterator advanced
    and stored back. Returns the bytes done."""
    nbytes = min(nbytes, i.count)
    done = 0
    p.load(i.addr)                                     # type, iov_offset, count, iov
    while done < nbytes:
        base, n = i.segs[i.seg]
        _iovec_entry(p, i, done == 0)                  # the iovec: base and length
        take = min(n - i.iov_offset, nbytes - done)
        left = step(base + i.iov_offset, take, done) if take else 0
        done += take - left
        i.iov_offset += take - left
        if i.iov_offset == n:
            i.seg, i.iov_offset = i.seg + 1, 0
        if left:
            break
    p.store(i.addr, size=ITER_FIELDS_BYTES, value=i.count)   # count, offset, nr_segs, iov
    return done


def _copy_from_iter_flushcache(p, flush, addr, nbytes, i):
    """Copy up to `nbytes` from the iterator to pmem at `addr`, advancing it; returns the
    bytes copied."""
    def step(src, take, done):
        if i.type == "iovec":
            with p.function("__copy_user_flushcache"):
                return uc.__copy_user_flushcache(p, flush, addr + done, src, take)
        with p.function("__memcpy_flushcache"):
            uc.__memcpy_flushcache(p, flush, addr + done, src, take)
        return 0
    return _iterate_and_advance(p, i, nbytes, step)


def copy_from_iter_flushcache(p, hard, flush, addr, nbytes, i):
    """The checked form: check_copy_size() on the kernel destination first (it may abort);
    0 bytes if it refuses."""
    if not check_copy_size(p, hard, addr, nbytes, False):
        return 0
    return _copy_from_iter_flushcache(p, flush, addr, nbytes, i)


def copyout_mc(p, cm, to, src, n):
    """access_ok(to, n), then copy_mc_to_user. Returns Ret: bytes not copied."""
    with p.guarded(*range_cmp(to, n)):
        r = mc.copy_mc_to_user(p, to, src, n, cm.fragile_key, cm.erms, cm.bug)
    return r


def _copy_mc_to_iter(p, cm, addr, nbytes, i):
    """Copy up to `nbytes` from pmem at `addr` to the iterator, advancing it; returns the
    bytes copied if no copy consumes poison (see copied())."""
    def step(dst, take, done):
        with p.function("copy_mc_to_user" if i.type == "iovec" else "copy_mc_to_kernel"):
            if i.type == "iovec":
                r = copyout_mc(p, cm, dst, addr + done, take)
            else:
                r = mc.copy_mc_to_kernel(p, dst, addr + done, take, cm.fragile_key, cm.erms,
                                         cm.bug)
        i.copies.append((r, take))
        return 0
    return _iterate_and_advance(p, i, nbytes, step)


def __clear_user(p, addr, n):
    """STAC; 8-byte stores of zero, then byte stores; CLAC."""
    p.stac()
    words = n - n % 8
    if words:
        p.stores(np.arange(addr, addr + words, 8), size=8)
    if n % 8:
        p.stores(np.arange(addr + words, addr + n), size=1)
    p.clac()


def iov_iter_zero(p, nbytes, i):
    """Zero up to `nbytes` of the iterator's segments (clear_user for a user iovec, memset
    for a kvec), advancing it; returns the bytes zeroed."""
    def step(dst, take, done):
        if i.type == "iovec":
            with p.function("clear_user"), p.guarded(*range_cmp(dst, take)):
                __clear_user(p, dst, take)
        else:
            p.stores(np.arange(dst, dst + take), size=1)
        i.copies.append((Ret(None), take))
        return 0
    return _iterate_and_advance(p, i, nbytes, step)


def copied(result, i):
    """Bytes the read really returned once its Program ran (RunResult `result`): the copies
    up to and including the first that came up short."""
    total = 0
    for r, n in i.copies:
        left = result.ret(r)
        total += n - left
        if left:
            break
    return total
