"""Readers that turn memory traces from other tools into Programs (data side only).

Formats, each described in its module
-------------------------------------
lackey  valgrind ``--tool=lackey --trace-mem=yes`` output (isa/traces/lackey.py)
din     DineroIII/IV ``label address [size]`` lines (isa/traces/din.py)
npy     ``numpy.save`` of an op array or of (kind, addr[, size]) rows (isa/traces/npy.py)

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

Layout: _stream.py (TraceChunk, accesses -> ops, chunking, access bounds), _text.py (text
blocks, .gz, line parsing tools), one module per format, _dispatch.py (format detection,
iter_trace/read_trace).
"""
from isa.traces._dispatch import detect_format, iter_trace, read_trace, resolve_format
from isa.traces._stream import CHUNK_LINES, TraceChunk
from isa.traces._text import CHUNK_BYTES, MAX_LINE_BYTES
from isa.traces.din import DIN_DEFAULT_SIZE, DIN_MAX_SIZE, iter_din, read_din
from isa.traces.lackey import LACKEY_MAX_SIZE, iter_lackey, read_lackey
from isa.traces.npy import NPY_MAX_SIZE, iter_npy, read_npy

__all__ = ["CHUNK_BYTES", "CHUNK_LINES", "DIN_DEFAULT_SIZE", "DIN_MAX_SIZE", "LACKEY_MAX_SIZE",
           "MAX_LINE_BYTES", "NPY_MAX_SIZE", "TraceChunk", "detect_format", "iter_din",
           "iter_lackey", "iter_npy", "iter_trace", "read_din", "read_lackey", "read_npy",
           "read_trace", "resolve_format"]
