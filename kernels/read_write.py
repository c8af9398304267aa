"""pwrite64(2) and pread64(2) from the system call down to ->write_iter / ->read_iter.

Follows fs/read_write.c (v5.0) `ksys_pwrite64`, `vfs_write`, `rw_verify_area`,
`new_sync_write`, `ksys_pread64`, `vfs_read`, `new_sync_read` and arch/x86/include/asm/uaccess.h `access_ok` (v5.0 two-argument form).
Errors are the kernel's negative errnos; the work of these functions (and of the system
call entry/exit) is a declared cost the caller emits (profile [software], emu/studies/fio.py).

Model departures: the kernel's access_ok only checks that the range lies below
TASK_SIZE_MAX and finds an unmapped user page by faulting inside the copy (a short write,
or -EFAULT when nothing was copied); the model returns -EFAULT up front unless the buffer
lies inside one of the task's user ranges. The only file type is kernels/dax.py's DaxFile.
"""
import errno

from kernels.dax import dax_read_iter, dax_write_iter
from kernels.iov_iter import IovIter
from kernels.memmap import PAGE_SIZE
from kernels.usercopy import INT_MAX

MAX_RW_COUNT = INT_MAX & ~(PAGE_SIZE - 1)
TASK_SIZE_MAX = (1 << 47) - PAGE_SIZE       # 4-level paging
LOFF_MAX = 2**63 - 1
ITER_ON_STACK = 256                          # the iov_iter's place in the kernel-stack page


def access_ok(buf, count, user_ranges):
    if buf < 0 or count < 0 or buf + count > TASK_SIZE_MAX:
        return False
    return count == 0 or any(lo <= buf and buf + count <= hi for lo, hi in user_ranges)


def rw_verify_area(pos, count):
    """-EINVAL for a negative count (as ssize_t) or a range past the largest loff_t."""
    if count < 0 or count > 2**63 - 1:
        return -errno.EINVAL
    if pos < 0 or pos + count > LOFF_MAX:
        return -errno.EINVAL
    return 0


def new_sync_write(p, f, buf, count, pos):
    """A one-segment user iovec iterator on the stack, then ->write_iter."""
    i = IovIter("iovec", [(buf, count)], f.stack + ITER_ON_STACK)
    return dax_write_iter(p, f, pos, i)


def vfs_write(p, f, buf, count, pos, user_ranges):
    if not access_ok(buf, count, user_ranges):
        return -errno.EFAULT
    ret = rw_verify_area(pos, count)
    if ret:
        return ret
    return new_sync_write(p, f, buf, min(count, MAX_RW_COUNT), pos)


def ksys_pwrite64(p, f, buf, count, pos, user_ranges):
    """pwrite64(fd, buf, count, pos): bytes written or a negative errno (-EINVAL for a
    negative pos)."""
    if pos < 0:
        return -errno.EINVAL
    return vfs_write(p, f, buf, count, pos, user_ranges)


def new_sync_read(p, f, buf, count, pos):
    """A one-segment user iovec iterator (the read's destination), then ->read_iter.
    Returns (bytes read if no copy comes up short, the iterator: iov_iter.copied())."""
    i = IovIter("iovec", [(buf, count)], f.stack + ITER_ON_STACK, rw="read")
    return dax_read_iter(p, f, pos, i), i


def vfs_read(p, f, buf, count, pos, user_ranges):
    if not access_ok(buf, count, user_ranges):
        return -errno.EFAULT, None
    ret = rw_verify_area(pos, count)
    if ret:
        return ret, None
    return new_sync_read(p, f, buf, min(count, MAX_RW_COUNT), pos)


def ksys_pread64(p, f, buf, count, pos, user_ranges):
    """pread64(fd, buf, count, pos): (bytes read or a negative errno, the iterator whose
    copies tell, after the run, whether poison made the read short; None on an error)."""
    if pos < 0:
        return -errno.EINVAL, None
    return vfs_read(p, f, buf, count, pos, user_ranges)
