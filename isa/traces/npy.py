"""``.npy`` traces: ``numpy.save`` of an op array or of (kind, addr[, size]) accesses.

Either a raw op array of shape (n, N_COLS) (validated by ``Program.from_array``), an integer
array of shape (n, 2) = (kind, addr) or (n, 3) = (kind, addr, size) with kind 0 = load,
1 = store (size defaults to 8, at most NPY_MAX_SIZE = 4096 as for din), or a 1-D structured
array with integer fields ``kind``, ``addr`` and optionally ``size``.  Rows are numbered
from 0.
"""
import os

import numpy as np

from isa.ops import COL_FLAGS, COL_IMM, COL_OP, N_COLS, PHYS_LIMIT, VALUE_USE, Op
from isa.program import Program, ProgramError
from isa.traces._stream import (
    _INT64_MAX,
    CHUNK_LINES,
    _concat,
    _in_range,
    _numbered,
    _open_regular,
    _positive,
    _range_why,
    _size_why,
    _split,
)
from isa.traces.din import DIN_DEFAULT_SIZE

NPY_MAX_SIZE = 4096
_NPY_SHAPES = (f"accepted: a raw op array of shape (n, {N_COLS}); an integer array of shape (n, 2) "
               "= (kind, addr) or (n, 3) = (kind, addr, size) with kind 0=load 1=store; or a 1-D "
               "structured array with integer fields 'kind', 'addr' and optionally 'size'")


def _npy_map(name):
    """The array in a .npy file, memory-mapped."""
    if name.lower().endswith(".gz"):
        raise ProgramError(f"{name}: a gzip-compressed .npy cannot be memory-mapped; "
                           "decompress it first (gunzip)")
    try:
        _open_regular(name).close()   # np.load maps by name: checked just before
        a = np.load(name, mmap_mode="r", allow_pickle=False)
    except ProgramError:
        raise
    except (OSError, ValueError, EOFError) as e:
        raise ProgramError(f"{name}: cannot load as .npy ({e}); {_NPY_SHAPES}") from e
    if not isinstance(a, np.ndarray):  # .npz archives
        a.close()
        raise ProgramError(f"{name}: not a single .npy array; {_NPY_SHAPES}")
    if a.ndim == 0:   # a scalar has no rows (len() of it raises)
        raise ProgramError(f"{name}: a 0-dimensional array (a scalar), not rows; {_NPY_SHAPES}")
    return a


def _npy_columns(name, a):
    """Function of (array, r0, r1) -> (kind, addr, size or None) of rows r0..r1-1 of a (kind, addr[,
    size]) array, or None for a raw op array; raises if `a` is neither."""
    if a.dtype.names is not None:
        fields = a.dtype.names
        if a.ndim != 1 or "kind" not in fields or "addr" not in fields:
            raise ProgramError(f"{name}: structured array of shape {a.shape} with fields {fields}; "
                               f"{_NPY_SHAPES}")
        cols = [c for c in ("kind", "addr", "size") if c in fields]
        _check_integer(name, {c: a.dtype[c] for c in cols})
        return lambda a, r0, r1: tuple(np.array(a[c][r0:r1]) for c in cols) + (None,) * (3 - len(cols))
    if a.ndim != 2 or a.shape[1] not in (2, 3, N_COLS):
        raise ProgramError(f"{name}: array of shape {a.shape}; {_NPY_SHAPES}")
    if not np.issubdtype(a.dtype, np.integer):
        raise ProgramError(f"{name}: dtype {a.dtype} is not integer; {_NPY_SHAPES}")
    if a.shape[1] == N_COLS:
        return None
    width = a.shape[1]
    return lambda a, r0, r1: tuple(np.array(a[r0:r1, c]) for c in range(width)) + (None,) * (3 - width)


def _check_integer(name, dtypes):
    for col, dt in dtypes.items():
        if not np.issubdtype(dt, np.integer):
            raise ProgramError(f"{name}: column '{col}' has dtype {dt}, not integer; {_NPY_SHAPES}")


def _npy_why(kind, addr, size):
    """Why one (bad) npy row is rejected."""
    if kind not in (0, 1):
        return f"kind {kind} is not 0 (load) or 1 (store)"
    if addr < 0:
        return f"negative address {addr}"
    if addr > _INT64_MAX:
        return f"address {addr:#x} out of range"
    if not 1 <= size <= NPY_MAX_SIZE:
        return _size_why("npy", size, NPY_MAX_SIZE)
    return _range_why(addr, size)


def _npy_accesses(name, row0, kind, addr, size):
    """(kind, addr, size, row) as int64 of rows row0.. of a (kind, addr[, size]) array.  The
    bounds are checked in the columns' own dtypes, so that no value wraps before it is."""
    if size is None:
        size = np.full(len(kind), DIN_DEFAULT_SIZE, dtype=np.int64)
    bad = (kind != 0) & (kind != 1) | (addr < 0) | (addr > PHYS_LIMIT - 1)
    bad |= (size < 1) | (size > NPY_MAX_SIZE)
    as64 = [v.astype(np.int64) for v in (kind, addr, size)]
    bad |= ~_in_range(as64[1], as64[2])
    if bad.any():
        i = int(np.argmax(bad))
        why = _npy_why(*(int(v[i]) for v in (kind, addr, size)))
        raise ProgramError(f"{name}: row {row0 + i}: {why}")
    return (*as64, row0 + np.arange(len(kind), dtype=np.int64))


def _raw_cut(ops, row0, reach, lookahead):
    """(rows, reach) of the longest prefix of `ops` (rows row0.. of an op array; with
    `lookahead`, its last row is the first one after them) that is a Program of its own: it
    ends where no branch body goes on (`reach`: the last row covered by the bodies seen so
    far) and the next op does not use the value the op before it loaded (isa.ops.VALUE_USE);
    (0, reach) if there is none."""
    rows = row0 + np.arange(len(ops))
    body_end = np.where(ops[:, COL_OP] == Op.BRANCH, rows + ops[:, COL_IMM], -1)
    covered = np.maximum.accumulate(np.maximum(body_end, reach))
    ok = covered <= rows
    ok[:-1] &= (ops[1:, COL_FLAGS] & VALUE_USE) == 0
    # The lookahead row is no cut; the array's end is (a body beyond it fails validation).
    ok[-1] = not lookahead
    cut = np.flatnonzero(ok)
    if not len(cut):
        return 0, reach
    return int(cut[-1]) + 1, int(covered[cut[-1]])


def _raw_pieces(name, a, chunk_lines):
    """(Program, row per op) of a raw op array, of about `chunk_lines` rows (see _raw_cut)."""
    n, row0, reach = len(a), 0, -1
    while row0 < n:
        stop, rows = row0, 0
        while not rows:  # no cut in reach: a longer branch body, read on
            stop = min(n, stop + chunk_lines)
            ops = np.asarray(_npy_map(name)[row0:stop + 1], dtype=np.int64)
            rows, reach = _raw_cut(ops, row0, reach, stop < n)
        try:
            program = Program.from_array(ops[:rows])
        except ProgramError as e:
            raise ProgramError(f"{name}: rows {row0}..{row0 + rows - 1} (op numbers below "
                               f"count from row {row0}): {e}") from e
        yield program, row0 + np.arange(rows, dtype=np.int64)
        row0 += rows


def _npy_rows(name, a, chunk_lines):
    columns = _npy_columns(name, a)
    if columns is None:
        yield from _raw_pieces(name, a, chunk_lines)
        return
    for row0 in range(0, len(a), chunk_lines):
        # Mapped anew per chunk: the pages read leave the resident set with the old mapping.
        cols = columns(_npy_map(name), row0, row0 + chunk_lines)
        kind, addr, size, row = _npy_accesses(name, row0, *cols)
        yield from _split(kind, addr, size, row, np.zeros_like(addr), chunk_lines)


def _npy_pieces(name, chunk_lines):
    a = _npy_map(name)
    row_bytes = a.itemsize * (a.size // len(a)) if len(a) else 0
    for program, row in _npy_rows(name, a, chunk_lines):
        # the file is the header and the rows, so the last chunk ends at the file's size
        yield program, row, a.offset + (int(row[-1]) + 1 if len(row) else 0) * row_bytes


def iter_npy(path, chunk_lines=CHUNK_LINES):
    """TraceChunks of a ``.npy`` trace or op array (see the module docstring for accepted
    shapes), `chunk_lines` rows at a time; TraceChunk.line holds 0-based row indices.  A raw
    op array is cut only where no branch body or indexed load spans the cut."""
    chunk_lines = _positive("chunk_lines", chunk_lines)
    return _numbered(_npy_pieces(os.fspath(path), chunk_lines))


def read_npy(path):
    """Load a ``.npy`` trace or op array (see the module docstring for accepted shapes)."""
    return _concat(iter_npy(path))
