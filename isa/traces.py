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
        blank lines are skipped; any other line is an error.  Accesses wider than 64 bytes
        (lackey allows up to 512, e.g. ``fxsave``) are split into 64-byte pieces.

din     DineroIII/IV "din": ``label address [size]`` per line, whitespace separated.  Label 0 =
        data read, 1 = data write, 2 = instruction fetch (ignored), 3 = escape (ignored),
        4 = cache flush (ignored: din carries no address range for it).  The address is hex,
        with or without ``0x``; the optional size is decimal bytes.  Classic din has no size
        field at all, so a missing size defaults to 8 bytes (a 64-bit word; this is the usual
        assumption when replaying din traces through pycachesim/dinero-style simulators).

npy     ``numpy.save`` of either a raw op array of shape (n, N_COLS) (validated by
        ``Program.from_array``), an integer array of shape (n, 2) = (kind, addr) or (n, 3) =
        (kind, addr, size) with kind 0 = load, 1 = store (size defaults to 8), or a 1-D
        structured array with integer fields ``kind``, ``addr`` and optionally ``size``.

Every access becomes one op in program order: loads are ``LOAD`` rows, stores are ``STORE``
rows without data (``DATA = -1``, ``IMM = 0``: the replayed bytes are zeros).  The text
readers work on the whole file at once with numpy (no Python object per access).
"""
import os
import re

import numpy as np

from isa.ops import COL_ADDR, COL_DATA, COL_OP, COL_SIZE, N_COLS, Op
from isa.program import Program, ProgramError

__all__ = ["read_lackey", "read_din", "read_npy", "read_trace", "DIN_DEFAULT_SIZE"]

DIN_DEFAULT_SIZE = 8
_MAX_PIECE = 64
_INT64_MAX = np.uint64(2**63 - 1)
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


# -- input handling ------------------------------------------------------------------------
def _read_text(path_or_lines):
    """Return (bytes, name): a path is read whole; an iterable of str/bytes lines is joined."""
    if isinstance(path_or_lines, (str, os.PathLike)):
        name = os.fspath(path_or_lines)
        try:
            with open(name, "rb") as f:
                return f.read(), name
        except OSError as e:
            raise ProgramError(f"{name}: cannot read trace: {e}") from e
    parts = []
    for line in path_or_lines:
        if isinstance(line, str):
            line = line.encode()
        elif not isinstance(line, (bytes, bytearray, memoryview)):
            raise ProgramError(f"<lines>: trace lines must be str or bytes, got {type(line).__name__}")
        parts.append(bytes(line).rstrip(b"\r\n"))
    return b"\n".join(parts), "<lines>"


def _line_table(buf):
    """Padded uint8 view of `buf` plus start/end (exclusive, without the newline or a trailing CR)
    of every line."""
    arr = np.empty(len(buf) + 1 + _PAD, dtype=np.uint8)
    arr[:len(buf)] = np.frombuffer(buf, dtype=np.uint8)
    arr[len(buf):] = 0
    arr[len(buf)] = 10
    n_text = len(buf) + (0 if buf.endswith(b"\n") else 1)
    ends = np.flatnonzero(arr[:n_text] == 10)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    cr = (arr[ends - 1] == 13) & (ends > starts)
    ends = ends - cr
    if not buf:  # an empty input has no lines at all
        return arr, starts[:0], ends[:0]
    return arr, starts, ends


def _line_text(arr, starts, ends, i):
    return bytes(arr[starts[i]:ends[i]]).decode("utf-8", "replace")


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
    return _parse_digits(arr, first, stop, _HEX, 16, max_digits, np.uint64)


def _parse_dec(arr, first, stop, max_digits=9):
    return _parse_digits(arr, first, stop, _DEC, 10, max_digits, np.int64)


def _build(kind, addr, size):
    """Ops for accesses (kind 0 = load, 1 = store, 2 = modify: load then store), in order.
    Accesses wider than 64 bytes become consecutive 64-byte pieces (all loads, then all
    stores for a modify)."""
    kind = np.asarray(kind, dtype=np.int64)
    addr = np.asarray(addr, dtype=np.int64)
    size = np.asarray(size, dtype=np.int64)
    simple = not len(size) or (size.max() <= _MAX_PIECE and not (kind == 2).any())
    if simple:
        n = len(kind)
        ops = np.zeros((n, N_COLS), dtype=np.int64)
        ops[:, COL_OP] = np.where(kind == 1, int(Op.STORE), int(Op.LOAD))
        ops[:, COL_ADDR] = addr
        ops[:, COL_SIZE] = size
        ops[:, COL_DATA] = -1
        return Program.from_array(ops)
    pieces = (size + _MAX_PIECE - 1) // _MAX_PIECE
    per = pieces * np.where(kind == 2, 2, 1)
    total = int(per.sum())
    owner = np.repeat(np.arange(len(kind)), per)
    first = np.cumsum(per) - per
    k = np.arange(total, dtype=np.int64) - first[owner]
    pc = pieces[owner]
    kd = kind[owner]
    is_store = (kd == 1) | ((kd == 2) & (k >= pc))
    j = k % pc
    ops = np.zeros((total, N_COLS), dtype=np.int64)
    ops[:, COL_OP] = np.where(is_store, int(Op.STORE), int(Op.LOAD))
    ops[:, COL_ADDR] = addr[owner] + _MAX_PIECE * j
    ops[:, COL_SIZE] = np.minimum(_MAX_PIECE, size[owner] - _MAX_PIECE * j)
    ops[:, COL_DATA] = -1
    return Program.from_array(ops)


# -- lackey ---------------------------------------------------------------------------------
_LACKEY_NOISE = (b"==", b"--", b"**")
_LACKEY_LINE = re.compile(rb"(?:I  [0-9a-fA-F]+,[0-9]+| [LSM] [0-9a-fA-F]+,[0-9]+|SB [0-9a-fA-F]+)\r?")


def read_lackey(path_or_lines):
    """Parse valgrind lackey ``--trace-mem=yes`` output (a path, or an iterable of lines)
    into a Program of LOAD/STORE ops in program order; see the module docstring."""
    buf, name = _read_text(path_or_lines)
    arr, starts, ends = _line_table(buf)
    length = ends - starts
    c0 = arr[starts]
    c1 = arr[starts + 1]
    c2 = arr[starts + 2]
    # Candidate access lines by their fixed 3-byte prefix: "I  ", " L ", " S ", " M ".
    is_i = (c0 == ord("I")) & (c1 == 32) & (c2 == 32)
    is_d = (c0 == 32) & ((c1 == ord("L")) | (c1 == ord("S")) | (c1 == ord("M"))) & (c2 == 32)
    cand = np.flatnonzero((is_i | is_d) & (length >= 6))
    good = np.zeros(len(starts), dtype=bool)
    addr = size = np.zeros(0, dtype=np.int64)
    if len(cand):
        cs, ce = starts[cand], ends[cand]
        commas = np.flatnonzero(arr == 44)
        ci = np.searchsorted(commas, cs + 3)
        comma = np.append(commas, len(arr))[ci]
        ok = comma < ce
        comma = np.where(ok, comma, ce)
        a, ok_a = _parse_hex(arr, cs + 3, comma)
        s, ok_s = _parse_dec(arr, comma + 1, ce)
        ok &= ok_a & ok_s & (s >= 1)
        good[cand[ok]] = True
        keep = ok & is_d[cand]
        addr, size = a[keep].astype(np.int64), s[keep]
        kind_byte = c1[cand[keep]]
    # Superblock lines "SB addr" are accepted and ignored.
    sb = np.flatnonzero((c0 == ord("S")) & (c1 == ord("B")) & (c2 == 32) & (length >= 4))
    if len(sb):
        _, ok_sb = _parse_hex(arr, starts[sb] + 3, ends[sb])
        good[sb[ok_sb]] = True
    # Everything else is checked one by one: valgrind messages and blank lines are skipped.
    for i in np.flatnonzero(~good):
        raw = bytes(arr[starts[i]:ends[i]])
        if not raw.strip() or raw.startswith(_LACKEY_NOISE):
            continue
        raise ProgramError(f"{name}:{i + 1}: malformed lackey line: {_line_text(arr, starts, ends, i)!r}")
    if not len(addr):
        return Program()
    kind = np.where(kind_byte == ord("L"), 0, np.where(kind_byte == ord("S"), 1, 2))
    return _build(kind, addr, size)


# -- din ------------------------------------------------------------------------------------
_DIN_LINE = re.compile(rb"[ \t\r]*([0-9]+)[ \t\r]+(?:0[xX])?([0-9a-fA-F]+)(?:[ \t\r]+([0-9]+))?[ \t\r]*")


def _din_why(raw):
    """Why one (bad) din line is rejected; only called for the first bad line."""
    m = _DIN_LINE.fullmatch(raw)
    if not m:
        return "malformed din line (want 'label address [size]')"
    label = int(m.group(1))
    if label > 4 or len(m.group(1)) > 9:
        return f"din label {m.group(1).decode()} is not 0..4"
    if len(m.group(2)) > 16 or int(m.group(2), 16) > 2**63 - 1:
        return "address out of range"
    return "size not in 1..999999999"


def read_din(path_or_lines):
    """Parse a DineroIII/IV din trace (``label address [size]`` per line; a path, or an
    iterable of lines) into a Program; see the module docstring. A missing size is
    DIN_DEFAULT_SIZE (8) bytes."""
    buf, name = _read_text(path_or_lines)
    arr, starts, ends = _line_table(buf)
    n_lines = len(starts)
    if not n_lines:
        return Program()
    # Tokenize the whole text at once: a token is a maximal run of bytes that are not
    # space, tab, CR or newline.
    text = arr[:len(buf) + 1]  # includes the terminating newline _line_table put there
    sep = (text == 32) | (text == 9) | (text == 13) | (text == 10)
    word = ~sep
    edge = np.diff(word.view(np.int8), prepend=np.int8(0))
    tok_start = np.flatnonzero(edge == 1)
    tok_end = np.flatnonzero(edge == -1)  # the text ends with a newline, so every token ends
    tok_line = np.searchsorted(ends, tok_start)
    per_line = np.bincount(tok_line, minlength=n_lines)
    bad = (per_line != 0) & (per_line != 2) & (per_line != 3)
    rows = np.flatnonzero(per_line >= 2)
    first = (np.cumsum(per_line) - per_line)[rows]
    nt = per_line[rows]
    # Every line is checked, including the ones (labels 2..4) that produce no op.
    lab, ok = _parse_dec(arr, tok_start[first], tok_end[first])
    ok &= lab <= 4
    a0, a1 = tok_start[first + 1], tok_end[first + 1]
    has_0x = (arr[a0] == ord("0")) & ((arr[a0 + 1] | 32) == ord("x")) & (a1 - a0 > 2)
    addr, ok_a = _parse_hex(arr, a0 + 2 * has_0x, a1)
    sized = nt == 3
    s_tok = np.where(sized, first + 2, first)  # unsized rows parse a dummy token, then ignored
    size, ok_s = _parse_dec(arr, tok_start[s_tok], tok_end[s_tok])
    ok &= ok_a & (~sized | (ok_s & (size >= 1)))
    bad[rows[~ok]] = True
    if bad.any():
        i = int(np.argmax(bad))
        raise ProgramError(f"{name}:{i + 1}: {_din_why(bytes(arr[starts[i]:ends[i]]))}: "
                           f"{_line_text(arr, starts, ends, i)!r}")
    data = lab <= 1
    if not data.any():
        return Program()
    size = np.where(sized, size, DIN_DEFAULT_SIZE)[data]
    return _build(lab[data], addr[data].astype(np.int64), size)


# -- npy ------------------------------------------------------------------------------------
_NPY_SHAPES = (f"accepted: a raw op array of shape (n, {N_COLS}); an integer array of shape (n, 2) "
               "= (kind, addr) or (n, 3) = (kind, addr, size) with kind 0=load 1=store; or a 1-D "
               "structured array with integer fields 'kind', 'addr' and optionally 'size'")


def _from_kind_addr(name, kind, addr, size):
    for col, v in (("kind", kind), ("addr", addr), ("size", size)):
        if v is not None and not np.issubdtype(v.dtype, np.integer):
            raise ProgramError(f"{name}: column '{col}' has dtype {v.dtype}, not integer; {_NPY_SHAPES}")
    kind = kind.astype(np.int64)
    bad = (kind != 0) & (kind != 1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ProgramError(f"{name}: row {i}: kind {kind[i]} is not 0 (load) or 1 (store)")
    if addr.dtype == np.uint64 and len(addr) and addr.max() > _INT64_MAX:
        i = int(np.argmax(addr > _INT64_MAX))
        raise ProgramError(f"{name}: row {i}: address {int(addr[i]):#x} out of range")
    addr = addr.astype(np.int64)
    if len(addr) and (addr < 0).any():
        i = int(np.argmax(addr < 0))
        raise ProgramError(f"{name}: row {i}: negative address {addr[i]}")
    if size is None:
        size = np.full(len(kind), DIN_DEFAULT_SIZE, dtype=np.int64)
    else:
        size = size.astype(np.int64)
        if len(size) and (size < 1).any():
            i = int(np.argmax(size < 1))
            raise ProgramError(f"{name}: row {i}: size {size[i]} is not at least 1")
    if not len(kind):
        return Program()
    return _build(kind, addr, size)


def read_npy(path):
    """Load a ``.npy`` trace or op array (see the module docstring for accepted shapes)."""
    name = os.fspath(path)
    try:
        a = np.load(name, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise ProgramError(f"{name}: cannot load as .npy ({e}); {_NPY_SHAPES}") from e
    if not isinstance(a, np.ndarray):  # .npz archives
        a.close()
        raise ProgramError(f"{name}: not a single .npy array; {_NPY_SHAPES}")
    if a.dtype.names is not None:
        fields = a.dtype.names
        if a.ndim != 1 or "kind" not in fields or "addr" not in fields:
            raise ProgramError(f"{name}: structured array of shape {a.shape} with fields {fields}; "
                               f"{_NPY_SHAPES}")
        return _from_kind_addr(name, a["kind"], a["addr"], a["size"] if "size" in fields else None)
    if a.ndim != 2 or a.shape[1] not in (2, 3, N_COLS):
        raise ProgramError(f"{name}: array of shape {a.shape}; {_NPY_SHAPES}")
    if not np.issubdtype(a.dtype, np.integer):
        raise ProgramError(f"{name}: dtype {a.dtype} is not integer; {_NPY_SHAPES}")
    if a.shape[1] == N_COLS:
        try:
            return Program.from_array(a)
        except ProgramError as e:
            raise ProgramError(f"{name}: {e}") from e
    return _from_kind_addr(name, a[:, 0], a[:, 1], a[:, 2] if a.shape[1] == 3 else None)


# -- dispatch -------------------------------------------------------------------------------
_READERS = {"lackey": read_lackey, "din": read_din, "npy": read_npy}
_NPY_MAGIC = b"\x93NUMPY"


def _sniff(name):
    try:
        with open(name, "rb") as f:
            head = f.read(1 << 16)
    except OSError as e:
        raise ProgramError(f"{name}: cannot read trace: {e}") from e
    if head.startswith(_NPY_MAGIC):
        return "npy"
    lines = head.split(b"\n")
    if len(head) == 1 << 16 and len(lines) > 1:
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
    """The format of a trace file from its extension (.npy, .din) or, failing that, its first
    line that is not a valgrind message (lackey or din syntax; .npy magic); None if unknown."""
    name = os.fspath(path)
    ext = os.path.splitext(name)[1].lower()
    return {".npy": "npy", ".din": "din"}.get(ext) or _sniff(name)


def read_trace(path, fmt=None):
    """Read a trace file as a Program. `fmt` is "lackey", "din" or "npy", or None to use
    detect_format()."""
    name = os.fspath(path)
    if fmt is None:
        fmt = detect_format(name)
        if fmt is None:
            raise ProgramError(f"{name}: unknown trace format (not .npy/.din, and the first line is "
                               f"neither lackey nor din syntax); pass fmt= one of {sorted(_READERS)}")
    reader = _READERS.get(str(fmt).lower())
    if reader is None:
        raise ProgramError(f"{name}: unknown trace format {fmt!r}; expected one of {sorted(_READERS)}")
    return reader(name)
