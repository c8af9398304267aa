"""Readers that turn memory traces from other tools into Programs (data side only).

Formats
-------
lackey  ``valgrind --tool=lackey --trace-mem=yes --log-file=trace.txt prog``.  Lackey prints
        one line per access, with the address in hex (no ``0x``) and the size in decimal bytes::

            I  0401ab70,3        instruction fetch        -> ignored (we model the data side)
             L 1fff000778,8      load                     -> LOAD
             S 1fff000770,8      store                    -> STORE (no data)
             M 1fff000768,4      modify (e.g. ``add [m], r``) -> LOAD then STORE of the same bytes
            SB 0401ab70          superblock entry (``--trace-superblocks=yes``) -> ignored

        Valgrind's own message lines (``==pid== ...``, ``--pid-- ...``, ``**pid** ...``) and
        blank lines are skipped; any other line is an error.  An access is at most
        LACKEY_MAX_SIZE = 512 bytes: valgrind's widest single access (``fxsave``/``xsave``
        areas); wider accesses than 64 bytes are split into 64-byte pieces.

din     DineroIII/IV "din": ``label address [size]`` per line, whitespace separated.  Label 0 =
        data read, 1 = data write, 2 = instruction fetch (ignored), 3 = escape (ignored),
        4 = cache flush (ignored: din carries no address range for it).  The address is hex,
        with or without ``0x``; the optional size is decimal bytes, at most DIN_MAX_SIZE = 4096
        (din sizes are a few bytes in practice; one page still covers any converter's block
        record, and bounds a line's expansion to 64 ops).  Classic din has no size field at
        all, so a missing size defaults to 8 bytes (a 64-bit word; this is the usual
        assumption when replaying din traces through pycachesim/dinero-style simulators).

npy     ``numpy.save`` of either a raw op array of shape (n, N_COLS) (validated by
        ``Program.from_array``), an integer array of shape (n, 2) = (kind, addr) or (n, 3) =
        (kind, addr, size) with kind 0 = load, 1 = store (size defaults to 8, at most
        NPY_MAX_SIZE = 4096 as for din), or a 1-D structured array with integer fields
        ``kind``, ``addr`` and optionally ``size``.

Every access becomes one op in program order: loads are ``LOAD`` rows, stores are ``STORE``
rows without data (``DATA = -1``, ``IMM = 0``: the replayed bytes are zeros).  An access must
end within the 52-bit physical address space (PHYS_LIMIT).  Errors name the file and the
1-based line (npy: the 0-based row).

Streaming
---------
iter_trace() and iter_lackey/iter_din/iter_npy yield the trace as TraceChunks of at most
`chunk_lines` source lines (npy: rows) and about as many ops, so memory does not grow with
the trace: text is read in blocks of `chunk_bytes` cut at line boundaries (a line may be at
most MAX_LINE_BYTES long), a .npy is memory-mapped per chunk.  Each block is parsed with
numpy as a whole (no Python object per access).  read_trace() and read_* concatenate the
chunks into one Program.  A path ending in ``.gz`` is decompressed on the fly (text formats
only: a .npy must be memory-mapped, so a gzipped one is refused).
"""
import gzip
import os
import re
import zlib
from typing import NamedTuple

import numpy as np

from isa.ops import (
    COL_ADDR,
    COL_DATA,
    COL_FLAGS,
    COL_IMM,
    COL_OP,
    COL_SIZE,
    FLAG_INDEXED,
    N_COLS,
    PHYS_LIMIT,
    Op,
)
from isa.program import Program, ProgramError

__all__ = ["CHUNK_BYTES", "CHUNK_LINES", "DIN_DEFAULT_SIZE", "DIN_MAX_SIZE", "LACKEY_MAX_SIZE",
           "MAX_LINE_BYTES", "NPY_MAX_SIZE", "TraceChunk", "detect_format", "iter_din",
           "iter_lackey", "iter_npy", "iter_trace", "read_din", "read_lackey", "read_npy",
           "read_trace", "resolve_format"]

DIN_DEFAULT_SIZE = 8
LACKEY_MAX_SIZE = 512
DIN_MAX_SIZE = 4096
NPY_MAX_SIZE = 4096
CHUNK_LINES = 1 << 18  # measured: larger chunks are no faster (cache misses) and take more memory
CHUNK_BYTES = 8 << 20
MAX_LINE_BYTES = 1 << 20
FORMATS = ("din", "lackey", "npy")
_MAX_PIECE = 64
_INT64_MAX = 2**63 - 1
_PAD = 32  # bytes appended to a text buffer so fixed-offset lookups never run off the end

# Byte -> hex digit value, 255 for anything that is not a hex digit.
_HEX = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789"):
    _HEX[_c] = _i
for _i, _c in enumerate(b"abcdef"):
    _HEX[_c] = 10 + _i
    _HEX[_c - 32] = 10 + _i
# Byte -> decimal digit value, 255 otherwise.
_DEC = np.full(256, 255, dtype=np.uint8)
_DEC[48:58] = np.arange(10, dtype=np.uint8)
# Byte -> 1 unless bytes.strip() removes it.
_NOT_WS = np.ones(256, dtype=np.int32)
_NOT_WS[list(b" \t\n\r\x0b\x0c")] = 0


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


# -- building ops ---------------------------------------------------------------------------
def _op_counts(kind, size):
    """Ops per access: 64-byte pieces, twice for a modify (kind 2)."""
    return (size + _MAX_PIECE - 1) // _MAX_PIECE * np.where(kind == 2, 2, 1)


def _build(kind, addr, size, line):
    """(Program, line per op) for accesses (kind 0 = load, 1 = store, 2 = modify: load then
    store) in order.  Accesses wider than 64 bytes become consecutive 64-byte pieces (all
    loads, then all stores for a modify)."""
    if size.max() <= _MAX_PIECE and not (kind == 2).any():
        ops = np.zeros((len(kind), N_COLS), dtype=np.int64)
        ops[:, COL_OP] = np.where(kind == 1, int(Op.STORE), int(Op.LOAD))
        ops[:, COL_ADDR] = addr
        ops[:, COL_SIZE] = size
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
    ops[:, COL_DATA] = -1
    return Program.from_array(ops), line[owner]


def _split(kind, addr, size, line, max_ops):
    """(Program, line per op) pieces of at most `max_ops` ops (or one access's ops, if more),
    cut between accesses."""
    end = np.cumsum(_op_counts(kind, size))
    start = 0
    while start < len(kind):
        done = end[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(end, done + max_ops, side="right")))
        yield _build(kind[start:stop], addr[start:stop], size[start:stop], line[start:stop])
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


# -- text input -----------------------------------------------------------------------------
def _open(name):
    """Binary file object of a trace; a name ending in .gz is decompressed as it is read."""
    return gzip.open(name, "rb") if name.lower().endswith(".gz") else open(name, "rb")


def _file_blocks(name, chunk_bytes):
    try:
        with _open(name) as f:
            while block := f.read(chunk_bytes):
                yield block
    except (OSError, EOFError, zlib.error) as e:
        raise ProgramError(f"{name}: cannot read trace: {e}") from e


def _line_blocks(lines, chunk_lines):
    """Newline-terminated blocks of up to `chunk_lines` lines from an iterable of str/bytes."""
    parts = []
    for line in lines:
        if isinstance(line, str):
            line = line.encode()
        elif not isinstance(line, (bytes, bytearray, memoryview)):
            raise ProgramError(f"<lines>: trace lines must be str or bytes, got {type(line).__name__}")
        parts.append(bytes(line).rstrip(b"\r\n"))
        if len(parts) == chunk_lines:
            yield b"\n".join(parts) + b"\n"
            parts = []
    if parts:
        yield b"\n".join(parts) + b"\n"


def _text_blocks(path_or_lines, chunk_lines, chunk_bytes):
    """(byte blocks, name) of a path or an iterable of lines."""
    if isinstance(path_or_lines, (str, os.PathLike)):
        name = os.fspath(path_or_lines)
        return _file_blocks(name, chunk_bytes), name
    return _line_blocks(path_or_lines, chunk_lines), "<lines>"


def _long_line(name, line):
    return ProgramError(f"{name}:{line}: line longer than the limit of {MAX_LINE_BYTES} bytes")


def _pieces(blocks, name, chunk_lines):
    """(text, number of its first line) of runs of at most `chunk_lines` whole lines, from a
    stream of byte blocks; only the last text may lack a final newline."""
    carry = b""
    line = 1
    for block in blocks:
        buf = carry + block if carry else block
        nl = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10)
        length = np.diff(nl, prepend=-1) - 1  # the first line starts at 0
        if len(nl) and length.max() > MAX_LINE_BYTES:
            raise _long_line(name, line + int(np.argmax(length > MAX_LINE_BYTES)))
        last = np.arange(chunk_lines - 1, len(nl), chunk_lines)  # newline ending each run
        if len(nl) and (not len(last) or last[-1] != len(nl) - 1):
            last = np.append(last, len(nl) - 1)
        view = memoryview(buf)
        start, done = 0, -1
        for k in last.tolist():
            cut = int(nl[k]) + 1
            yield view[start:cut], line
            line += k - done
            start, done = cut, k
        carry = bytes(view[start:])
        if len(carry) > MAX_LINE_BYTES:
            raise _long_line(name, line)
    if carry:
        yield carry, line


def _iter_text(parse, path_or_lines, chunk_lines, chunk_bytes):
    chunk_lines = _positive("chunk_lines", chunk_lines)
    blocks, name = _text_blocks(path_or_lines, chunk_lines, _positive("chunk_bytes", chunk_bytes))

    def programs():
        done = 0
        for text, line0 in _pieces(blocks, name, chunk_lines):
            done += len(text)   # a piece split in several chunks: each counts its end
            kind, addr, size, line = parse(text, name, line0)
            if len(kind):
                for program, lines in _split(kind, addr, size, line, chunk_lines):
                    yield program, lines, done
    return _numbered(programs())


def _line_table(text):
    """Padded uint8 copy of `text` (whole lines, the last maybe without its newline) plus
    start/end (exclusive, without the newline or a trailing CR) of every line."""
    src = np.frombuffer(text, dtype=np.uint8)
    n = len(src)
    arr = np.zeros(n + 1 + _PAD, dtype=np.uint8)
    arr[:n] = src
    arr[n] = 10
    n_text = n + (0 if n and src[-1] == 10 else 1)
    ends = np.flatnonzero(arr[:n_text] == 10)
    if not n:  # an empty input has no lines at all
        ends = ends[:0]
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    cr = (arr[ends - 1] == 13) & (ends > starts)
    return arr, starts, ends - cr


def _line_error(name, line0, arr, starts, ends, i, why):
    text = bytes(arr[starts[i]:ends[i]])
    return ProgramError(f"{name}:{line0 + i}: {why(text)}: {text.decode('utf-8', 'replace')!r}")


def _blank(arr, starts, ends):
    """Per line: nothing but whitespace."""
    non_ws = np.concatenate([[0], np.cumsum(_NOT_WS[arr], dtype=np.int32)])
    return non_ws[ends] == non_ws[starts]


def _parse_digits(arr, first, stop, table, base, max_digits, dtype):
    """Number in arr[first:stop) per row, digits mapped by `table` (255 = not a digit).
    Returns (values, ok mask)."""
    n = stop - first
    ok = (n >= 1) & (n <= max_digits)
    acc = np.zeros(len(first), dtype=dtype)
    width = min(max_digits, int(n.max())) if len(n) else 0
    # Right-aligned: column j holds the digit at stop - width + j; earlier columns are padding.
    for j in range(width):
        pos = stop - (width - j)
        valid = pos >= first
        d = table[arr[np.where(valid, pos, 0)]]
        ok &= ~valid | (d != 255)
        d = np.where(valid, d, 0)
        if j == 0 and base == 16 and width == 16:
            ok &= d < 8  # 16 hex digits with the top bit set do not fit an int64 address
        acc = acc * dtype(base) + d.astype(dtype)
    return acc, ok


def _parse_hex(arr, first, stop, max_digits=16):
    addr, ok = _parse_digits(arr, first, stop, _HEX, 16, max_digits, np.uint64)
    return addr.astype(np.int64), ok


def _parse_dec(arr, first, stop, max_digits=9):
    return _parse_digits(arr, first, stop, _DEC, 10, max_digits, np.int64)


def _size_why(fmt, size, limit):
    if size < 1:
        return f"access size {size} is not at least 1"
    return f"access size {size} exceeds the {fmt} maximum of {limit} bytes"


def _range_why(addr, size):
    return (f"access {addr:#x}+{size} ends beyond the 52-bit physical address space "
            f"({PHYS_LIMIT:#x})")


def _access_why(fmt, addr_digits, size_digits, limit, data=True):
    """Why an access with these (well-formed) hex address and decimal size digits is
    rejected, as the vectorised parsers decide it; None if it is not."""
    if len(addr_digits) > 16 or int(addr_digits, 16) > _INT64_MAX:
        return f"address {addr_digits.decode()} out of range"
    if len(size_digits) > 9:
        return f"size field {size_digits.decode()} longer than 9 digits"
    addr, size = int(addr_digits, 16), int(size_digits)
    if not 1 <= size <= limit:
        return _size_why(fmt, size, limit)
    if data and addr > PHYS_LIMIT - size:
        return _range_why(addr, size)
    return None


def _in_range(addr, size):
    return addr <= PHYS_LIMIT - size  # addr + size would overflow int64 near 2**63


# -- lackey ---------------------------------------------------------------------------------
_LACKEY_NOISE = (b"==", b"--", b"**")
_LACKEY_LINE = re.compile(rb"(?:I  [0-9a-fA-F]+,[0-9]+| [LSM] [0-9a-fA-F]+,[0-9]+|SB [0-9a-fA-F]+)\r?")
_LACKEY_ACCESS = re.compile(rb"(I | [LSM]) ([0-9a-fA-F]+),([0-9]+)")


def _lackey_why(raw):
    """Why one (bad) lackey line is rejected; only called for the first bad line."""
    m = _LACKEY_ACCESS.fullmatch(raw)
    why = m and _access_why("lackey", m.group(2), m.group(3), LACKEY_MAX_SIZE, m.group(1) != b"I ")
    return why or "malformed lackey line"


def _lackey_accesses(text, name, line0):
    """(kind, addr, size, line) of the accesses in whole lackey lines `text`, whose first
    line is line `line0` of the trace; kind 0 = load, 1 = store, 2 = modify."""
    arr, starts, ends = _line_table(text)
    length = ends - starts
    c0 = arr[starts]
    c1 = arr[starts + 1]
    c2 = arr[starts + 2]
    # Candidate access lines by their fixed 3-byte prefix: "I  ", " L ", " S ", " M ".
    is_i = (c0 == ord("I")) & (c1 == 32) & (c2 == 32)
    is_d = (c0 == 32) & ((c1 == ord("L")) | (c1 == ord("S")) | (c1 == ord("M"))) & (c2 == 32)
    cand = np.flatnonzero((is_i | is_d) & (length >= 6))
    cs, ce = starts[cand], ends[cand]
    commas = np.flatnonzero(arr == 44)
    comma = np.append(commas, len(arr))[np.searchsorted(commas, cs + 3)]
    ok = comma < ce
    comma = np.where(ok, comma, ce)
    addr, ok_a = _parse_hex(arr, cs + 3, comma)
    size, ok_s = _parse_dec(arr, comma + 1, ce)
    data = is_d[cand]
    ok &= ok_a & ok_s & (size >= 1) & (size <= LACKEY_MAX_SIZE) & (~data | _in_range(addr, size))
    good = np.zeros(len(starts), dtype=bool)
    good[cand[ok]] = True
    # Superblock lines "SB addr" are accepted and ignored.
    sb = np.flatnonzero((c0 == ord("S")) & (c1 == ord("B")) & (c2 == 32) & (length >= 4))
    _, sb_ok = _parse_hex(arr, starts[sb] + 3, ends[sb])
    good[sb[sb_ok]] = True
    # Valgrind messages and blank lines are skipped; anything else is an error.
    noise = (c0 == c1) & ((c0 == ord("=")) | (c0 == ord("-")) | (c0 == ord("*"))) | (length == 0)
    rest = np.flatnonzero(~good & ~noise)
    if len(rest):
        bad = rest[~_blank(arr, starts[rest], ends[rest])]
        if len(bad):
            raise _line_error(name, line0, arr, starts, ends, bad[0], _lackey_why)
    keep = ok & data
    kind_byte = c1[cand[keep]]
    kind = np.where(kind_byte == ord("L"), 0, np.where(kind_byte == ord("S"), 1, 2))
    return kind, addr[keep], size[keep], line0 + cand[keep]


def iter_lackey(path_or_lines, chunk_lines=CHUNK_LINES, chunk_bytes=CHUNK_BYTES):
    """TraceChunks of valgrind lackey ``--trace-mem=yes`` output (a path, or an iterable of
    lines); see the module docstring and iter_trace()."""
    return _iter_text(_lackey_accesses, path_or_lines, chunk_lines, chunk_bytes)


def read_lackey(path_or_lines):
    """Parse valgrind lackey ``--trace-mem=yes`` output (a path, or an iterable of lines)
    into a Program of LOAD/STORE ops in program order; see the module docstring."""
    return _concat(iter_lackey(path_or_lines))


# -- din ------------------------------------------------------------------------------------
_DIN_LINE = re.compile(rb"[ \t\r]*([0-9]+)[ \t\r]+(?:0[xX])?([0-9a-fA-F]+)(?:[ \t\r]+([0-9]+))?[ \t\r]*")


def _din_why(raw):
    """Why one (bad) din line is rejected; only called for the first bad line."""
    m = _DIN_LINE.fullmatch(raw)
    if m and (len(m.group(1)) > 9 or int(m.group(1)) > 4):
        return f"din label {m.group(1).decode()} is not 0..4"
    size = m and (m.group(3) or str(DIN_DEFAULT_SIZE).encode())
    why = m and _access_why("din", m.group(2), size, DIN_MAX_SIZE, int(m.group(1)) <= 1)
    return why or "malformed din line (want 'label address [size]')"


def _din_accesses(text, name, line0):
    """(kind, addr, size, line) of the accesses in whole din lines `text`, whose first line
    is line `line0` of the trace; kind 0 = load, 1 = store."""
    arr, starts, ends = _line_table(text)
    n_lines = len(starts)
    # Tokenize the whole text at once: a token is a maximal run of bytes that are not
    # space, tab, CR or newline.
    body = arr[:len(text) + 1]  # includes the terminating newline _line_table put there
    word = (body != 32) & (body != 9) & (body != 13) & (body != 10)
    edge = np.diff(word.view(np.int8), prepend=np.int8(0))
    tok_start = np.flatnonzero(edge == 1)
    tok_end = np.flatnonzero(edge == -1)  # the text ends with a newline, so every token ends
    per_line = np.bincount(np.searchsorted(ends, tok_start), minlength=n_lines)
    bad = (per_line != 0) & (per_line != 2) & (per_line != 3)
    rows = np.flatnonzero(per_line >= 2)
    first = (np.cumsum(per_line) - per_line)[rows]
    # Every line is checked, including the ones (labels 2..4) that produce no op.
    label, ok = _parse_dec(arr, tok_start[first], tok_end[first])
    a0, a1 = tok_start[first + 1], tok_end[first + 1]
    has_0x = (arr[a0] == ord("0")) & ((arr[a0 + 1] | 32) == ord("x")) & (a1 - a0 > 2)
    addr, ok_a = _parse_hex(arr, a0 + 2 * has_0x, a1)
    sized = per_line[rows] == 3
    s_tok = np.where(sized, first + 2, first)  # unsized rows parse a dummy token, then ignored
    size, ok_s = _parse_dec(arr, tok_start[s_tok], tok_end[s_tok])
    size = np.where(sized, size, DIN_DEFAULT_SIZE)
    ok_s = ~sized | (ok_s & (size >= 1) & (size <= DIN_MAX_SIZE))
    data = label <= 1
    ok &= (label <= 4) & ok_a & ok_s & (~data | _in_range(addr, size))
    bad[rows[~ok]] = True
    if bad.any():
        raise _line_error(name, line0, arr, starts, ends, int(np.argmax(bad)), _din_why)
    return label[data], addr[data], size[data], line0 + rows[data]


def iter_din(path_or_lines, chunk_lines=CHUNK_LINES, chunk_bytes=CHUNK_BYTES):
    """TraceChunks of a DineroIII/IV din trace (a path, or an iterable of lines); see the
    module docstring and iter_trace()."""
    return _iter_text(_din_accesses, path_or_lines, chunk_lines, chunk_bytes)


def read_din(path_or_lines):
    """Parse a DineroIII/IV din trace (``label address [size]`` per line; a path, or an
    iterable of lines) into a Program; see the module docstring. A missing size is
    DIN_DEFAULT_SIZE (8) bytes."""
    return _concat(iter_din(path_or_lines))


# -- npy ------------------------------------------------------------------------------------
_NPY_SHAPES = (f"accepted: a raw op array of shape (n, {N_COLS}); an integer array of shape (n, 2) "
               "= (kind, addr) or (n, 3) = (kind, addr, size) with kind 0=load 1=store; or a 1-D "
               "structured array with integer fields 'kind', 'addr' and optionally 'size'")


def _npy_map(name):
    """The array in a .npy file, memory-mapped."""
    if name.lower().endswith(".gz"):
        raise ProgramError(f"{name}: a gzip-compressed .npy cannot be memory-mapped; "
                           "decompress it first (gunzip)")
    try:
        a = np.load(name, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise ProgramError(f"{name}: cannot load as .npy ({e}); {_NPY_SHAPES}") from e
    if not isinstance(a, np.ndarray):  # .npz archives
        a.close()
        raise ProgramError(f"{name}: not a single .npy array; {_NPY_SHAPES}")
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
    far) and the next op is not an indexed load (that reads the value the op before it
    loaded); (0, reach) if there is none."""
    rows = row0 + np.arange(len(ops))
    body_end = np.where(ops[:, COL_OP] == Op.BRANCH, rows + ops[:, COL_IMM], -1)
    covered = np.maximum.accumulate(np.maximum(body_end, reach))
    ok = covered <= rows
    ok[:-1] &= (ops[1:, COL_FLAGS] & FLAG_INDEXED) == 0
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
        yield from _split(kind, addr, size, row, chunk_lines)


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


# -- dispatch -------------------------------------------------------------------------------
_NPY_MAGIC = b"\x93NUMPY"
_SNIFF_BYTES = 1 << 16


def _sniff(name):
    try:
        with _open(name) as f:
            head = f.read(_SNIFF_BYTES)
    except (OSError, EOFError, zlib.error) as e:
        raise ProgramError(f"{name}: cannot read trace: {e}") from e
    if head.startswith(_NPY_MAGIC):
        return "npy"
    lines = head.split(b"\n")
    if len(head) == _SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut off
    for raw in lines:
        if not raw.strip() or raw.startswith(_LACKEY_NOISE):
            continue
        if _LACKEY_LINE.fullmatch(raw):
            return "lackey"
        if _DIN_LINE.fullmatch(raw):
            return "din"
        break
    return None


def detect_format(path):
    """The format of a trace file from its extension (.npy, .din; under a .gz one, e.g.
    trace.din.gz) or, failing that, its first line that is not a valgrind message (lackey
    or din syntax; .npy magic), decompressed for .gz; None if unknown."""
    name = os.fspath(path)
    base = name[:-3] if name.lower().endswith(".gz") else name
    ext = os.path.splitext(base)[1].lower()
    return {".npy": "npy", ".din": "din"}.get(ext) or _sniff(name)


def resolve_format(path, fmt=None):
    """The format iter_trace/read_trace use for `path`: `fmt` ("lackey", "din" or "npy", any
    case) checked, or detect_format(path) if None.  Raises ProgramError if unknown."""
    name = os.fspath(path)
    if fmt is None:
        fmt = detect_format(name)
        if fmt is None:
            raise ProgramError(f"{name}: unknown trace format (not .npy/.din, and the first line is "
                               f"neither lackey nor din syntax); pass fmt= one of {list(FORMATS)}")
    if str(fmt).lower() not in FORMATS:
        raise ProgramError(f"{name}: unknown trace format {fmt!r}; expected one of {list(FORMATS)}")
    return str(fmt).lower()


def iter_trace(path, fmt=None, chunk_lines=CHUNK_LINES, chunk_bytes=CHUNK_BYTES):
    """The trace file `path` as TraceChunks, in order, each of at most about `chunk_lines`
    source lines (npy: rows) and ops (an access's ops are never split; a lackey or din text
    is read `chunk_bytes` at a time).  `fmt` as for resolve_format(), which is called at
    once; the file is read, and its errors raised, as the chunks are taken.  A ProgramError
    from a chunk names the file and absolute line (npy: row); the chunks before it were
    good."""
    name = os.fspath(path)
    fmt = resolve_format(name, fmt)
    if fmt == "npy":
        return iter_npy(name, chunk_lines)
    parse = _lackey_accesses if fmt == "lackey" else _din_accesses
    return _iter_text(parse, name, chunk_lines, chunk_bytes)


def read_trace(path, fmt=None):
    """Read a trace file as a Program. `fmt` is "lackey", "din" or "npy", or None to use
    detect_format()."""
    return _concat(iter_trace(path, fmt))
