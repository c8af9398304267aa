"""The files the `emu` commands write (--cachegrind, --plot's, sweep's --out and its Parquet
copy): checked before a run, and never written onto anything but a regular file or a new name.

os.replace onto a path replaces whatever is there: a symbolic link would become a regular
file, a FIFO or a device node would be gone (run as root, `--cachegrind /dev/full` destroyed
the device). So check_output_path() refuses an empty path, a symbolic link (even to a
regular file: the link is what would be replaced) and anything that exists but is not a
regular file, and replacing() re-checks each target just before its rename.
"""
import contextlib
import errno
import fnmatch
import os
import stat
import tempfile

from emu.studies.options import CliError

_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def refused(path, option, mode):
    """The CliError of an output `path` whose file type (st_mode `mode`) is not a regular file."""
    kind = next((k for is_kind, k in _KINDS if is_kind(mode)), "not a regular file")
    return CliError(f"{option} {path}: {kind}, not a regular file or a new name "
                    "(refused: writing would replace it)")


def check_output_path(path, option):
    """CliError naming `option` and `path` unless `path` names a regular file (not a symbolic
    link) or a new name, in an existing directory that can take a temporary file."""
    if not path:
        raise CliError(f"{option}: an empty path")
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise refused(path, option, st.st_mode)
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise CliError(f"{option} {path}: no directory {d}")
    if not os.access(d, os.W_OK | os.X_OK):   # the temporary file is made there, even to replace
        raise CliError(f"{option} {path}: directory {d} is not writable")


def check_output_dir(directory, option, names=()):
    """CliError unless `directory` is a directory (a link to one is kept: files are written
    inside it, it is never replaced) or a new name that os.makedirs can create, and unless
    each of its entries matching a glob pattern of `names` is a regular file."""
    if not directory:
        raise CliError(f"{option}: an empty path")
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise CliError(f"{option} {directory}: not a directory")
    if not os.path.isdir(directory):
        parent = os.path.dirname(os.path.abspath(directory))
        while not os.path.lexists(parent):   # makedirs creates the missing parents
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):
            raise CliError(f"{option} {directory}: {parent} is not a directory")
        return
    for entry in sorted(os.listdir(directory)):
        if any(fnmatch.fnmatchcase(entry, n) for n in names):
            check_output_path(os.path.join(directory, entry), option)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def replacing(option):
    """Write files whole or not at all: `stage(path)` (yielded) returns a new temporary file
    in path's directory for the caller to fill; when the block ends without an error every
    target is re-checked with check_output_path (it may have become a link or a FIFO during
    the run), then each temporary file gets the umask's mode (mkstemp's 0600 is for the
    temporary file only) and is renamed onto its path. On any error no target is touched
    and the temporary files are removed."""
    staged = []

    def stage(path):
        check_output_path(path, option)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),
                                   prefix=f".{os.path.basename(path)}-")
        os.close(fd)
        staged.append((tmp, path))
        return tmp

    try:
        yield stage
        for _, path in staged:
            check_output_path(path, option)
        mode = 0o666 & ~_umask()
        for tmp, _ in staged:
            os.chmod(tmp, mode)
        for tmp, path in staged:
            os.replace(tmp, path)
    finally:
        for tmp, _ in staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def open_regular(path, flags, option):
    """(fd, stat) of `path` opened with `flags` (and O_CLOEXEC), refusing, as
    check_output_path does, a symbolic link (O_NOFOLLOW) and anything not a regular file:
    opened O_NONBLOCK so that a FIFO does not block (cleared once it is known regular).
    FileNotFoundError and FileExistsError are left to the caller."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except (FileNotFoundError, FileExistsError):
        raise
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):   # link; FIFO or socket; dir
            check_output_path(path, option)
        raise CliError(f"{option} {path}: cannot open: {e.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise refused(path, option, st.st_mode)
    os.set_blocking(fd, True)
    return fd, st


def open_append(path, option):
    """`path` opened O_WRONLY | O_APPEND, created 0o666 & ~umask if new (open_regular)."""
    return open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, option)[0]
