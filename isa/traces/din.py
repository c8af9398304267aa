"""DineroIII/IV "din" traces: ``label address [size]`` per line, whitespace separated.

Label 0 = data read, 1 = data write, 2 = instruction fetch (no op: its address is the ip,
COL_SRC, of the data accesses after it, as in lackey; 0 before the first), 3 = escape (ignored),
4 = cache flush (ignored: din carries no address range for it).  The address is hex, with or
without ``0x``; the optional size is decimal bytes, at most DIN_MAX_SIZE = 4096 (din sizes
are a few bytes in practice; one page still covers any converter's block record, and bounds
a line's expansion to 64 ops).  Classic din has no size field at all, so a missing size
defaults to 8 bytes (a 64-bit word; this is the usual assumption when replaying din traces
through pycachesim/dinero-style simulators).
"""
import re

import numpy as np

from isa.traces._stream import CHUNK_LINES, _concat, _in_range
from isa.traces._text import (
    CHUNK_BYTES,
    _access_why,
    _fetch_ips,
    _iter_text,
    _line_error,
    _line_table,
    _parse_dec,
    _parse_hex,
)

DIN_DEFAULT_SIZE = 8
DIN_MAX_SIZE = 4096
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
    """(kind, addr, size, line, ip, last fetch) of the accesses in whole din lines `text`,
    whose first line is line `line0` of the trace; kind 0 = load, 1 = store; ip and last
    fetch as _fetch_ips gives them."""
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
    fetch = label == 2
    ip, last = _fetch_ips(rows[fetch], addr[fetch], rows[data])
    return label[data], addr[data], size[data], line0 + rows[data], ip, last


def iter_din(path_or_lines, chunk_lines=CHUNK_LINES, chunk_bytes=CHUNK_BYTES):
    """TraceChunks of a DineroIII/IV din trace (a path, or an iterable of lines); see the
    module docstring and isa.traces.iter_trace()."""
    return _iter_text(_din_accesses, path_or_lines, chunk_lines, chunk_bytes)


def read_din(path_or_lines):
    """Parse a DineroIII/IV din trace (``label address [size]`` per line; a path, or an
    iterable of lines) into a Program; see the module docstring. A missing size is
    DIN_DEFAULT_SIZE (8) bytes."""
    return _concat(iter_din(path_or_lines))
