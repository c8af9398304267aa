"""Ops that remember the line of Python that emitted them (isa.program.Program, for the
profiler: emu.profiler)."""
import contextlib
import os
import sys
import zlib
from contextlib import contextmanager

# Profiling by source line (record_lines): the site of an op is then its function and the
# line of Python that emitted it, "FUNCTION @ FILE:LINE".
LINE_SEP = " @ "
_RECORD_LINES = [False]
# the frames a source line is not in: the builder's and its context managers'
_BUILDER_FILES = {os.path.abspath(os.path.join(os.path.dirname(__file__), "program.py")),
                  os.path.abspath(__file__), os.path.abspath(contextlib.__file__)}


@contextmanager
def record_lines():
    """Programs made inside the block attribute each op to the source line that emitted it
    (the first caller outside the builder), as site "FUNCTION @ FILE:LINE", so that a
    profile points at the line of a kernel path that missed. It adds a SITE op where the
    line changes, which changes no timing (tests/test_profiler.py); an op that reads the
    previous op's value (load_indexed) and the body of a branch keep the line before them,
    since a SITE between would change what the core executes."""
    _RECORD_LINES.append(True)
    try:
        yield
    finally:
        _RECORD_LINES.pop()


def recording():
    """Whether programs made now record their lines (inside record_lines())."""
    return _RECORD_LINES[-1]


def _outside_builder(f):
    while f is not None and f.f_code.co_filename in _BUILDER_FILES:
        f = f.f_back
    return f


def caller_line():
    """(file, line) of the innermost frame outside the builder."""
    f = _outside_builder(sys._getframe(2))
    return ("?", 0) if f is None else (f.f_code.co_filename, f.f_lineno)


_IPS = {}


def line_ip(frame):
    """The instruction address standing for `frame`'s line (the innermost outside the
    builder): a kernel reimplementation's line stands for its instruction, so a load in a
    loop keeps one ip, as the kernel's loop does. A function of the file's name and the line
    only (no hash seed, no order of use): bit-identical across processes."""
    f = _outside_builder(frame)
    if f is None:
        return 0
    key = (f.f_code.co_filename, f.f_lineno)
    ip = _IPS.get(key)
    if ip is None:
        name = os.path.basename(key[0]).encode()
        ip = _IPS[key] = (zlib.crc32(name) + 1) << 20 | key[1] & ((1 << 20) - 1)
    return ip
