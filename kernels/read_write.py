"""pwrite64(2) and pread64(2) from the system call down to ->write_iter / ->read_iter.

Follows fs/read_write.c `ksys_pwrite64`, `vfs_write`, `rw_verify_area`, `new_sync_write`,
`ksys_pread64`, `vfs_read`, `new_sync_read` (read in a v5.1-v5.8 copy, store id 34534948: the
same bodies as v5.0 and v5.10 in what is modelled) and arch/x86/include/asm/uaccess.h
`access_ok` in two forms. The write path is v5.0 (the dax-write-usercopy study): access_ok
compares against `user_addr_max()` = `current->thread.addr_limit.seg` (v5.0.4 copy,
KuanKuanQAQ/adelie-kaslr-linux-5.0.4, store id 16442253872), two dependent loads: the per-CPU
`current_task` slot, then the task's addr_limit (kernels/usercopy.Task: fixed kernel
addresses, addr_limit in the task_struct's last modelled line), then the compare's branch on
that value. The read path is v5.10+ (the dax-read-copy-mc study's copy_mc): x86 dropped
set_fs and access_ok compares against the constant TASK_SIZE_MAX (v5.10.13 copy,
Rtoax/linux-5.10.13, store id 30905465954): a branch, no load. Errors are the kernel's
negative errnos.

`new_sync_write`/`new_sync_read` set up their stack objects as the kernel does and emit those
stores: the one-segment `struct iovec`, `init_sync_kiocb` + `ki_pos` (the kiocb line) and
`iov_iter_init` (the iterator), and after ->write_iter / ->read_iter `*ppos = kiocb.ki_pos`
(ksys_p*64's `pos` on the stack). The rest stays in the declared cost the caller emits
(profile [software] vfs_write_ns / vfs_read_ns, syscall_entry_exit_ns; emu/studies/fio.py):
fdget/fdput (current->files, the fd table, the file), the FMODE_PWRITE/FMODE_PREAD and
FMODE_WRITE/FMODE_CAN_WRITE tests on file->f_mode, init_sync_kiocb's loads of the file's
flags and the task's ioprio, rw_verify_area's inode and LSM hooks, file_start_write /
file_end_write, fsnotify and the task's rchar/wchar/syscr/syscw counters.

Model departures: the kernel finds an unmapped user page by faulting inside the copy (a
short write, or -EFAULT when nothing was copied); the model returns -EFAULT up front unless
the buffer lies inside one of the task's user ranges. The only file type is kernels/dax.py's
DaxFile, opened for reading and writing at any position (no -ESPIPE, -EBADF).
"""
import errno

from kernels import uaccess
from kernels.dax import dax_read_iter, dax_write_iter
from kernels.iov_iter import IOV_ITER_BYTES, IovIter
from kernels.memmap import PAGE_SIZE
from kernels.usercopy import INT_MAX, TASK_ADDR_LIMIT_OFFSET

MAX_RW_COUNT = INT_MAX & ~(PAGE_SIZE - 1)
LOFF_MAX = 2**63 - 1
ITER_ON_STACK = 256                          # the iov_iter's place in the kernel-stack page
KIOCB_ON_STACK = ITER_ON_STACK + 128         # after the iterator and its iovec
KIOCB_BYTES = 48                             # struct kiocb, v5.0-v5.10 (x86-64)
POS_ON_STACK = KIOCB_ON_STACK + 64           # ksys_pwrite64 / ksys_pread64's loff_t pos


def _in_user_ranges(buf, count, user_ranges):
    if buf < 0 or count < 0 or buf + count > uaccess.TASK_SIZE_MAX:
        return False
    return count == 0 or any(lo <= buf and buf + count <= hi for lo, hi in user_ranges)


def access_ok_v5_0(p, task, buf, count, user_ranges):
    """v5.0: limit = current->thread.addr_limit.seg (TASK_SIZE_MAX for a user task): load
    current, then the limit through it, then compare and branch on the loaded limit."""
    p.load(task.current_task)
    p.load(task.task_struct + TASK_ADDR_LIMIT_OFFSET, dependent=True)
    p.branch(*uaccess.range_cmp(max(buf, 0), max(count, 0)), 0, dependent=True)
    return _in_user_ranges(buf, count, user_ranges)


def access_ok_v5_10(p, buf, count, user_ranges):
    """v5.10+: compare against the constant TASK_SIZE_MAX, and branch."""
    uaccess.access_ok(p, max(buf, 0), max(count, 0))
    return _in_user_ranges(buf, count, user_ranges)


def rw_verify_area(pos, count):
    """-EINVAL for a negative count (as ssize_t) or a range past the largest loff_t."""
    if count < 0 or count > 2**63 - 1:
        return -errno.EINVAL
    if pos < 0 or pos + count > LOFF_MAX:
        return -errno.EINVAL
    return 0


def _sync_iter(p, f, buf, count, pos, rw):
    """The stack iovec, kiocb (ki_pos = *ppos) and iov_iter of new_sync_write/_read."""
    i = IovIter("iovec", [(buf, count)], f.stack + ITER_ON_STACK, rw=rw)
    p.store(i.addr + IOV_ITER_BYTES, size=16, value=buf)            # iov = {buf, len}
    p.store(f.stack + KIOCB_ON_STACK, size=KIOCB_BYTES, value=pos)  # init_sync_kiocb, ki_pos
    p.store(i.addr, size=40, value=count)       # iov_iter_init: type, offset, count, iov, nr
    return i


def new_sync_write(p, f, buf, count, pos):
    """A one-segment user iovec iterator on the stack, then ->write_iter; *ppos updated."""
    i = _sync_iter(p, f, buf, count, pos, "write")
    ret = dax_write_iter(p, f, pos, i)
    if ret > 0:
        p.store(f.stack + POS_ON_STACK, size=8, value=pos + ret)
    return ret


def vfs_write(p, f, buf, count, pos, user_ranges):
    if not access_ok_v5_0(p, f.task, buf, count, user_ranges):
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
    """A one-segment user iovec iterator (the read's destination), then ->read_iter;
    *ppos updated. Returns (bytes read if no copy comes up short, the iterator:
    iov_iter.copied())."""
    i = _sync_iter(p, f, buf, count, pos, "read")
    ret = dax_read_iter(p, f, pos, i)
    p.store(f.stack + POS_ON_STACK, size=8, value=pos + max(ret, 0))
    return ret, i


def vfs_read(p, f, buf, count, pos, user_ranges):
    if not access_ok_v5_10(p, buf, count, user_ranges):
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
