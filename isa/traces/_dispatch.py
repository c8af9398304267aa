"""Which format a trace file is (its extension, else its first lines), and reading it."""
import os
import zlib

from isa.program import ProgramError
from isa.traces._stream import CHUNK_LINES, _concat
from isa.traces._text import CHUNK_BYTES, _iter_text, _open
from isa.traces.din import _DIN_LINE, _din_accesses
from isa.traces.lackey import _LACKEY_LINE, _LACKEY_NOISE, _lackey_accesses
from isa.traces.npy import iter_npy

FORMATS = ("din", "lackey", "npy")
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
