"""Copies between an iov_iter and pmem.

Follows lib/iov_iter.c `_copy_from_iter_flushcache` (v4.20-v5.x) and include/linux/uio.h
`copy_from_iter_flushcache` (v4.13-v5.x) as read in docs/kernel-paths.md §1.4-1.5: per segment,
a user iovec goes through `__copy_from_user_flushcache` = `__copy_user_flushcache`, a kvec
through `memcpy_flushcache` (kernels/usercopy_64.py); `iterate_and_advance` stops at the
first segment copied short. The read side, `_copy_mc_to_iter` (v5.10+; `_copy_to_iter_mcsafe`
before), copies out through `copyout_mc` (access_ok + copy_mc_to_user) for a user iovec and
copy_mc_to_kernel for a kvec (kernels/copy_mc.py).

Model departures: ITER_BVEC and ITER_PIPE are not modelled (a ValueError names them). The
iterator and its iovec array sit at fixed kernel-stack addresses (`IovIter.addr`); reading
and advancing them is one load per segment and one store. Whether a machine-check-safe copy
comes up short is known only after the run: the read side advances the iterator as if every
copy were whole and keeps each copy's Ret in `IovIter.copies`; `copied()` then gives the
bytes the kernel's loop, which stops at the first short copy, would report.
"""
from dataclasses import dataclass, field

from kernels import copy_mc as mc
from kernels import usercopy_64 as uc
from kernels.uaccess import range_cmp
from kernels.usercopy import check_copy_size

ITER_TYPES = ("iovec", "kvec")
IOV_ITER_BYTES = 64        # struct iov_iter, then the iovec array (16 bytes an entry)


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


def _copy_from_iter_flushcache(p, flush, addr, nbytes, i):
    """Copy up to `nbytes` from the iterator to pmem at `addr`, advancing it; returns the
    bytes copied."""
    nbytes = min(nbytes, i.count)
    done = 0
    while done < nbytes:
        base, n = i.segs[i.seg]
        p.load(i.addr + IOV_ITER_BYTES + 16 * i.seg)   # the iovec: base and length
        take = min(n - i.iov_offset, nbytes - done)
        left = 0
        if take and i.type == "iovec":
            with p.function("__copy_user_flushcache"):
                left = uc.__copy_user_flushcache(p, flush, addr + done, base + i.iov_offset, take)
        elif take:
            with p.function("__memcpy_flushcache"):
                uc.__memcpy_flushcache(p, flush, addr + done, base + i.iov_offset, take)
        done += take - left
        i.iov_offset += take - left
        if i.iov_offset == n:
            i.seg, i.iov_offset = i.seg + 1, 0
        if left:
            break
    p.store(i.addr, size=8, value=i.count)            # iov_iter.count (and offset) updated
    return done


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
    nbytes = min(nbytes, i.count)
    done = 0
    while done < nbytes:
        base, n = i.segs[i.seg]
        p.load(i.addr + IOV_ITER_BYTES + 16 * i.seg)
        take = min(n - i.iov_offset, nbytes - done)
        if take:
            with p.function("copy_mc_to_user" if i.type == "iovec" else "copy_mc_to_kernel"):
                if i.type == "iovec":
                    r = copyout_mc(p, cm, base + i.iov_offset, addr + done, take)
                else:
                    r = mc.copy_mc_to_kernel(p, base + i.iov_offset, addr + done, take,
                                             cm.fragile_key, cm.erms, cm.bug)
            i.copies.append((r, take))
        done += take
        i.iov_offset += take
        if i.iov_offset == n:
            i.seg, i.iov_offset = i.seg + 1, 0
    p.store(i.addr, size=8, value=i.count)
    return done


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
