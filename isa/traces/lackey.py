"""valgrind lackey traces: ``valgrind --tool=lackey --trace-mem=yes --log-file=trace.txt prog``.

Lackey prints one line per access, with the address in hex (no ``0x``) and the size in
decimal bytes::

    I  0401ab70,3        instruction fetch        -> the ip of the data accesses after it
     L 1fff000778,8      load                     -> LOAD
     S 1fff000770,8      store                    -> STORE (no data)
     M 1fff000768,4      modify (e.g. ``add [m], r``) -> LOAD then STORE of the same bytes
    SB 0401ab70          superblock entry (``--trace-superblocks=yes``) -> ignored

The data side is modelled: an instruction fetch makes no op, its address is the ip (COL_SRC)
of the loads and stores after it, the instruction's own (lackey prints them after its ``I``
line; 0 before the first).  Valgrind's own message lines (``==pid== ...``, ``--pid-- ...``, ``**pid** ...``) and
blank lines are skipped; any other line is an error.  An access is at most
LACKEY_MAX_SIZE = 512 bytes: valgrind's widest single access (``fxsave``/``xsave``
areas); wider accesses than 64 bytes are split into 64-byte pieces.
"""
import re

import numpy as np

from isa.traces._stream import CHUNK_LINES, _concat, _in_range
from isa.traces._text import (
    CHUNK_BYTES,
    _access_why,
    _blank,
    _fetch_ips,
    _iter_text,
    _line_error,
    _line_table,
    _parse_dec,
    _parse_hex,
)

LACKEY_MAX_SIZE = 512
_LACKEY_NOISE = (b"==", b"--", b"**")
_LACKEY_LINE = re.compile(rb"(?:I  [0-9a-fA-F]+,[0-9]+| [LSM] [0-9a-fA-F]+,[0-9]+|SB [0-9a-fA-F]+)\r?")
_LACKEY_ACCESS = re.compile(rb"(I | [LSM]) ([0-9a-fA-F]+),([0-9]+)")


def _lackey_why(raw):
    """Why one (bad) lackey line is rejected; only called for the first bad line."""
    m = _LACKEY_ACCESS.fullmatch(raw)
    why = m and _access_why("lackey", m.group(2), m.group(3), LACKEY_MAX_SIZE, m.group(1) != b"I ")
    return why or "malformed lackey line"


def _lackey_accesses(text, name, line0):
    """(kind, addr, size, line, ip, last fetch) of the accesses in whole lackey lines
    `text`, whose first line is line `line0` of the trace; kind 0 = load, 1 = store, 2 =
    modify; ip and last fetch as _fetch_ips gives them."""
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
    fetch = ok & ~data
    ip, last = _fetch_ips(cand[fetch], addr[fetch], cand[keep])
    return kind, addr[keep], size[keep], line0 + cand[keep], ip, last


def iter_lackey(path_or_lines, chunk_lines=CHUNK_LINES, chunk_bytes=CHUNK_BYTES):
    """TraceChunks of valgrind lackey ``--trace-mem=yes`` output (a path, or an iterable of
    lines); see the module docstring and isa.traces.iter_trace()."""
    return _iter_text(_lackey_accesses, path_or_lines, chunk_lines, chunk_bytes)


def read_lackey(path_or_lines):
    """Parse valgrind lackey ``--trace-mem=yes`` output (a path, or an iterable of lines)
    into a Program of LOAD/STORE ops in program order; see the module docstring."""
    return _concat(iter_lackey(path_or_lines))
