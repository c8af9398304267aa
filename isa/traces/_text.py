"""Text traces (lackey, din): read in blocks of CHUNK_BYTES cut at line boundaries (a .gz
decompressed as it is read), each run of lines handed to a format's vectorised parser; and
the byte-level tools those parsers share (line table, digit parsing, error messages)."""
import contextlib
import gzip
import os
import zlib

import numpy as np

from isa.ops import PHYS_LIMIT
from isa.program import ProgramError
from isa.traces._stream import (
    _INT64_MAX,
    _numbered,
    _open_regular,
    _positive,
    _range_why,
    _size_why,
    _split,
)

CHUNK_BYTES = 8 << 20
MAX_LINE_BYTES = 1 << 20
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


@contextlib.contextmanager
def _open(name):
    """Binary file object of a trace (a regular file: _open_regular); a name ending in .gz
    is decompressed as it is read."""
    with _open_regular(name) as raw:
        if not name.lower().endswith(".gz"):
            yield raw
            return
        with gzip.open(raw, "rb") as f:
            yield f


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
        done, last_ip = 0, 0
        for text, line0 in _pieces(blocks, name, chunk_lines):
            done += len(text)   # a piece split in several chunks: each counts its end
            kind, addr, size, line, ip, fetch = parse(text, name, line0)
            ip = np.where(ip < 0, last_ip, ip)   # accesses before the piece's first fetch
            last_ip = fetch if fetch >= 0 else last_ip
            if len(kind):
                for program, lines in _split(kind, addr, size, line, ip, chunk_lines):
                    yield program, lines, done
    return _numbered(programs())


def _fetch_ips(fetch_rows, fetch_addr, rows):
    """(ip per row of `rows`, last fetch address): the address of the latest instruction
    fetch (rows `fetch_rows`, ascending, addresses `fetch_addr`) before each row, -1 where
    none is in this text (the caller carries the previous text's last); last -1 if none."""
    k = np.searchsorted(fetch_rows, rows) - 1
    ip = np.where(k >= 0, fetch_addr[np.maximum(k, 0)] if len(fetch_addr) else -1, -1)
    return ip.astype(np.int64), int(fetch_addr[-1]) if len(fetch_addr) else -1


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
