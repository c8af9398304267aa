"""What every trace format shares: TraceChunk, accesses turned into LOAD/STORE op rows (split
into 64-byte pieces, and into chunks of about CHUNK_LINES ops), and the bounds of an access."""
import os
import stat
from typing import NamedTuple

import numpy as np

from isa.ops import COL_ADDR, COL_DATA, COL_OP, COL_SIZE, COL_SRC, N_COLS, PHYS_LIMIT, Op
from isa.program import Program, ProgramError

CHUNK_LINES = 1 << 18  # measured: larger chunks are no faster (cache misses) and take more memory
_MAX_PIECE = 64
_INT64_MAX = 2**63 - 1


class TraceChunk(NamedTuple):
    """A run of consecutive ops of a trace, as iter_trace() yields them (never empty).

    `program`: a Program of the ops.  `line`: int64 array, per op, the source line it came
    from: 1-based line number for lackey and din, 0-based row index for npy (an access split
    into several ops repeats its line).  `first_op`: index of program's first op in the whole
    trace (ops of earlier chunks before it).  `bytes_read`: bytes of the trace taken so far,
    this chunk's included (text: decompressed; npy: the header and rows up to the chunk's
    last), for a progress bar against the file's size."""
    program: Program
    line: np.ndarray
    first_op: int
    bytes_read: int = 0

    @property
    def first_line(self):
        """Source line (npy: row) of the chunk's first op."""
        return int(self.line[0])


def _open_regular(name):
    """The trace file `name` opened for reading in binary, if it is a regular file;
    ProgramError if not: a trace is read more than once (its format sniffed, --map-trace's
    pages gathered), a device such as /dev/zero never ends, and a FIFO without a writer
    would block the open, which is therefore non-blocking, checked on the descriptor."""
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ProgramError(f"{name}: cannot read trace: not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


# -- building ops ---------------------------------------------------------------------------
def _op_counts(kind, size):
    """Ops per access: 64-byte pieces, twice for a modify (kind 2)."""
    return (size + _MAX_PIECE - 1) // _MAX_PIECE * np.where(kind == 2, 2, 1)


def _build(kind, addr, size, line, ip):
    """(Program, line per op) for accesses (kind 0 = load, 1 = store, 2 = modify: load then
    store) in order, each op's ip (COL_SRC) its access's instruction address `ip` (0:
    unknown).  Accesses wider than 64 bytes become consecutive 64-byte pieces (all loads,
    then all stores for a modify)."""
    if size.max() <= _MAX_PIECE and not (kind == 2).any():
        ops = np.zeros((len(kind), N_COLS), dtype=np.int64)
        ops[:, COL_OP] = np.where(kind == 1, int(Op.STORE), int(Op.LOAD))
        ops[:, COL_ADDR] = addr
        ops[:, COL_SIZE] = size
        ops[:, COL_SRC] = ip
        ops[:, COL_DATA] = -1
        return Program.from_array(ops), line
    pieces = (size + _MAX_PIECE - 1) // _MAX_PIECE
    per = _op_counts(kind, size)
    owner = np.repeat(np.arange(len(kind)), per)
    first = np.cumsum(per) - per
    k = np.arange(len(owner), dtype=np.int64) - first[owner]
    pc = pieces[owner]
    kd = kind[owner]
    is_store = (kd == 1) | ((kd == 2) & (k >= pc))
    j = k % pc
    ops = np.zeros((len(owner), N_COLS), dtype=np.int64)
    ops[:, COL_OP] = np.where(is_store, int(Op.STORE), int(Op.LOAD))
    ops[:, COL_ADDR] = addr[owner] + _MAX_PIECE * j
    ops[:, COL_SIZE] = np.minimum(_MAX_PIECE, size[owner] - _MAX_PIECE * j)
    ops[:, COL_SRC] = ip[owner]
    ops[:, COL_DATA] = -1
    return Program.from_array(ops), line[owner]


def _split(kind, addr, size, line, ip, max_ops):
    """(Program, line per op) pieces of at most `max_ops` ops (or one access's ops, if more),
    cut between accesses; `ip` as for _build."""
    end = np.cumsum(_op_counts(kind, size))
    start = 0
    while start < len(kind):
        done = end[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(end, done + max_ops, side="right")))
        yield _build(kind[start:stop], addr[start:stop], size[start:stop], line[start:stop],
                     ip[start:stop])
        start = stop


def _numbered(pieces):
    """TraceChunks from (Program, line per op, bytes read) triples, skipping empty ones."""
    first_op = 0
    for program, line, bytes_read in pieces:
        if len(program):
            yield TraceChunk(program, line, first_op, bytes_read)
            first_op += len(program)


def _concat(chunks):
    """One Program of all chunks' ops."""
    programs = [c.program for c in chunks]
    if len(programs) <= 1:
        return programs[0] if programs else Program()
    return Program.from_array(np.concatenate([p.ops for p in programs]))


def _positive(what, n):
    if int(n) != n or n < 1:
        raise ValueError(f"{what} must be a positive integer, got {n!r}")
    return int(n)


# -- access bounds ---------------------------------------------------------------------------
def _size_why(fmt, size, limit):
    if size < 1:
        return f"access size {size} is not at least 1"
    return f"access size {size} exceeds the {fmt} maximum of {limit} bytes"


def _range_why(addr, size):
    return (f"access {addr:#x}+{size} ends beyond the 52-bit physical address space "
            f"({PHYS_LIMIT:#x})")


def _in_range(addr, size):
    return addr <= PHYS_LIMIT - size  # addr + size would overflow int64 near 2**63
