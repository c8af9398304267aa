"""Streaming trace readers: chunk boundaries, line numbers per op, size limits, .gz, memory.

Expected ops and line numbers are written out by hand from the trace texts below (the
module docstring of isa.traces gives the rules), never taken from the readers' output."""
import gzip
import os
import subprocess
import sys
import textwrap
import time
import tracemalloc

import numpy as np
import pytest

from isa import traces
from isa.ops import COL_ADDR, COL_DATA, COL_IMM, COL_OP, COL_SIZE, Op
from isa.program import Program, ProgramError
from tracegen import write_din_lines
from isa.traces import (
    detect_format,
    iter_din,
    iter_lackey,
    iter_npy,
    iter_trace,
    read_lackey,
    read_npy,
    read_trace,
    resolve_format,
)

L, S = int(Op.LOAD), int(Op.STORE)

# Line numbers are 1-based; line 1 ends in CRLF, the last line has no newline.
LACKEY = (b"==7== Lackey, an example Valgrind tool\r\n"  # 1
          b"I  0401ab70,3\n"                             # 2
          b" L 1000,8\r\n"                               # 3
          b"\n"                                          # 4
          b" M 2000,4\n"                                 # 5
          b" S 3000,130\n"                               # 6
          b"--7-- a note\n"                              # 7
          b" M 4000,65\n"                                # 8
          b"SB 0401ab70\n"                               # 9
          b" L 5000,1")                                  # 10
LACKEY_OPS = [  # (line, op, addr, size)
    (3, L, 0x1000, 8),
    (5, L, 0x2000, 4), (5, S, 0x2000, 4),
    (6, S, 0x3000, 64), (6, S, 0x3040, 64), (6, S, 0x3080, 2),
    (8, L, 0x4000, 64), (8, L, 0x4040, 1), (8, S, 0x4000, 64), (8, S, 0x4040, 1),
    (10, L, 0x5000, 1),
]

DIN = (b"0 1000\r\n"       # 1: read, default size 8
       b"2 400000\n"       # 2: instruction fetch, no op
       b"1 0x2000 4\n"     # 3
       b"\n"               # 4
       b"3 0\n"            # 5: escape, no op
       b"\t1 40 100  \n"   # 6: 64 + 36 bytes
       b"4 0\n"            # 7: flush, no op
       b"0 ABCD 2")        # 8
DIN_OPS = [
    (1, L, 0x1000, 8),
    (3, S, 0x2000, 4),
    (6, S, 0x40, 64), (6, S, 0x80, 36),
    (8, L, 0xABCD, 2),
]


def listed(chunks, max_ops=None):
    """(line, op, addr, size) of every op of the chunks, checking the chunk invariants."""
    out, next_op = [], 0
    for c in chunks:
        ops = c.program.ops
        assert len(ops) and c.first_op == next_op and len(c.line) == len(ops)
        assert c.first_line == c.line[0] and c.line.dtype == np.int64
        assert (ops[:, COL_DATA] == -1).all() and (ops[:, COL_IMM] == 0).all()
        if max_ops is not None:
            assert len(ops) <= max_ops
        next_op += len(ops)
        out += [(int(n), int(o), int(a), int(s))
                for n, (o, a, s) in zip(c.line, ops[:, [COL_OP, COL_ADDR, COL_SIZE]])]
    return out


def whole(program):
    return [(int(o), int(a), int(s)) for o, a, s in program.ops[:, [COL_OP, COL_ADDR, COL_SIZE]]]


def without_lines(ops):
    return [r[1:] for r in ops]


@pytest.mark.parametrize("fmt, text, expected", [("lackey", LACKEY, LACKEY_OPS),
                                                 ("din", DIN, DIN_OPS)])
def test_text_chunks_equal_the_whole_trace_wherever_the_boundaries_fall(tmp_path, fmt, text,
                                                                         expected):
    f = tmp_path / f"t.{fmt}"
    f.write_bytes(text)
    assert whole(read_trace(f, fmt)) == without_lines(expected)
    for chunk_lines in range(1, 12):
        for chunk_bytes in (1, 2, 5, 7, 13, 64, 1 << 20):
            got = listed(iter_trace(f, fmt, chunk_lines=chunk_lines, chunk_bytes=chunk_bytes),
                         max_ops=max(chunk_lines, 4))  # 4 = the ops of line 8's modify
            assert got == expected, (chunk_lines, chunk_bytes)


def test_a_chunk_spans_at_most_chunk_lines_lines(tmp_path):
    f = tmp_path / "t.din"
    f.write_bytes(b"".join(b"0 %x\n" % (64 * i) for i in range(100)))
    chunks = list(iter_din(f, chunk_lines=7))
    assert [c.first_line for c in chunks] == list(range(1, 101, 7))
    assert [len(c.program) for c in chunks] == [7] * 14 + [2]


def test_lines_iterable_chunks(tmp_path):
    lines = LACKEY.decode().splitlines()
    assert whole(read_lackey(lines)) == without_lines(LACKEY_OPS)
    for chunk_lines in (1, 2, 3, 7):
        assert listed(iter_lackey(lines, chunk_lines=chunk_lines)) == LACKEY_OPS
    assert listed(iter_din(DIN.decode().splitlines(), chunk_lines=2)) == DIN_OPS


def test_an_access_is_never_split_across_chunks():
    # Lines 1..3 are read as one piece; 4096 bytes = 64 stores, more than the 3 ops a chunk
    # may have, so that piece is cut before and after the access, which stays whole.
    chunks = list(iter_din(["0 0", "1 1000 4096", "0 8", "0 10"], chunk_lines=3))
    assert [len(c.program) for c in chunks] == [1, 64, 1, 1]
    assert [c.first_line for c in chunks] == [1, 2, 3, 4]
    assert chunks[1].program.ops[-1, COL_ADDR] == 0x1000 + 63 * 64


def test_npy_chunks_and_rows(tmp_path):
    a = np.array([[0, 0x10, 8], [1, 0x20, 100], [0, 0x30, 1], [1, 0x40, 64], [0, 0x50, 2]])
    f = tmp_path / "t.npy"
    np.save(f, a)
    expected = [(0, L, 0x10, 8), (1, S, 0x20, 64), (1, S, 0x60, 36), (2, L, 0x30, 1),
                (3, S, 0x40, 64), (4, L, 0x50, 2)]
    assert whole(read_npy(f)) == without_lines(expected)
    for chunk_lines in range(1, 7):
        assert listed(iter_npy(f, chunk_lines=chunk_lines)) == expected
    s = np.zeros(3, dtype=[("kind", "u1"), ("addr", "u8")])
    s["kind"], s["addr"] = [1, 0, 1], [0x100, 0x200, 0x300]
    np.save(f, s)
    assert listed(iter_trace(f, chunk_lines=2)) == [(0, S, 0x100, 8), (1, L, 0x200, 8),
                                                    (2, S, 0x300, 8)]


def test_raw_op_array_is_cut_only_between_self_contained_runs(tmp_path):
    p = Program()
    p.load(0x1000)                          # row 0
    with p.guarded(1, 10):                  # row 1: branch, body rows 2..6
        for i in range(5):
            p.load(0x2000 + 64 * i)
    p.load(0x3000)                          # row 7
    p.load_indexed(0x4000, 8)               # row 8: reads row 7's value
    p.load(0x5000).work(3)                  # rows 9, 10
    f = tmp_path / "ops.npy"
    np.save(f, p.ops)
    # Allowed cuts: before rows 1, 2? no (body), ..., 7, 9, 10 -- never inside 1..6 or at 8.
    starts = {1: [0, 1, 7, 9, 10], 2: [0, 1, 7, 9], 3: [0, 1, 7, 10], 7: [0, 7], 11: [0]}
    for chunk_lines, want in starts.items():
        chunks = list(iter_npy(f, chunk_lines=chunk_lines))
        assert [c.first_line for c in chunks] == want, chunk_lines
        np.testing.assert_array_equal(np.concatenate([c.program.ops for c in chunks]), p.ops)
        np.testing.assert_array_equal(np.concatenate([c.line for c in chunks]), np.arange(11))
    np.testing.assert_array_equal(read_npy(f).ops, p.ops)


# -- errors ---------------------------------------------------------------------------------
def test_error_in_a_late_chunk_names_the_absolute_line(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("".join(f" L {64 * i:x},8\n" for i in range(1000)) + " L 1000,zz\n L 0,8\n")
    for chunk_bytes in (1000, 1 << 20):  # the bad line in the 14th block, and in the first
        seen = 0
        with pytest.raises(ProgramError, match=rf"^{f}:1001: malformed lackey line: ' L 1000,zz'$"):
            for c in iter_lackey(f, chunk_lines=7, chunk_bytes=chunk_bytes):
                seen += len(c.program)
    # In one block, chunks are 7 lines: lines 995..1001 are one chunk, so 1..994 came through.
    assert seen == 994
    with pytest.raises(ProgramError, match=r"^<lines>:1001: "):
        read_lackey(f.read_text().splitlines())


def test_din_error_in_a_late_chunk(tmp_path):
    f = tmp_path / "t.din"
    f.write_text("0 10\n" * 500 + "\n" * 100 + "9 10\n")
    with pytest.raises(ProgramError, match=rf"^{f}:601: din label 9"):
        list(iter_din(f, chunk_lines=13, chunk_bytes=17))


def test_npy_error_in_a_late_chunk_names_the_absolute_row(tmp_path):
    a = np.zeros((2000, 2), dtype=np.int64)
    a[1234, 0] = 2
    f = tmp_path / "t.npy"
    np.save(f, a)
    with pytest.raises(ProgramError, match=r": row 1234: kind 2 is not 0"):
        list(iter_npy(f, chunk_lines=100))


@pytest.mark.parametrize("fmt, line, limit", [("lackey", " S 1000,{}", 512),
                                              ("din", "1 1000 {}", 4096)])
def test_text_size_limit(tmp_path, fmt, line, limit):
    f = tmp_path / f"t.{fmt}"
    f.write_text("\n".join(["==1== x" if fmt == "lackey" else "2 0", line.format(limit)] * 2
                           + [line.format(limit + 1)]) + "\n")
    with pytest.raises(ProgramError) as e:
        read_trace(f, fmt)
    assert str(e.value).startswith(f"{f}:5: access size {limit + 1} exceeds the {fmt} maximum "
                                   f"of {limit} bytes")
    f.write_text(line.format(limit) + "\n")
    assert len(read_trace(f, fmt)) == limit // 64  # the limit itself is allowed


def test_huge_sizes_are_refused_before_anything_is_built(tmp_path):
    """The 190-byte din file of the issue (size 999999999 on every line) asked for 24 GB."""
    din = tmp_path / "huge.din"
    din.write_text("0 1000 999999999\n" * 10)
    npy = tmp_path / "huge.npy"
    np.save(npy, np.array([[0, 0x1000, 8], [1, 0x1000, 10**12]]))
    for f, where, size in ((din, ":1:", 999999999), (npy, ": row 1:", 10**12)):
        tracemalloc.start()
        t = time.perf_counter()
        with pytest.raises(ProgramError) as e:
            read_trace(f)
        elapsed = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert f"{f}{where} access size {size} exceeds" in str(e.value) and "4096" in str(e.value)
        assert peak < traces.CHUNK_BYTES + (1 << 20) and elapsed < 1  # one read buffer


def test_address_range_is_checked_per_line(tmp_path):
    with pytest.raises(ProgramError, match=r"^<lines>:2: access 0xfffffffffffff8\+16 ends beyond"):
        read_lackey([" L 0,8", " L fffffffffffff8,16"])
    assert len(read_lackey(["I  fffffffffffff8,16"])) == 0  # an instruction fetch makes no op
    f = tmp_path / "far.npy"
    np.save(f, np.array([[0, 2**63, 8]], dtype=np.uint64))
    with pytest.raises(ProgramError, match=r": row 0: address 0x8000000000000000 out of range"):
        read_npy(f)


def test_too_long_line(tmp_path, monkeypatch):
    monkeypatch.setattr(traces._text, "MAX_LINE_BYTES", 100)  # where the text reader looks it up
    f = tmp_path / "t.din"
    f.write_text("0 10\n0 " + "1" * 200 + "\n0 10\n")
    for chunk_bytes in (7, 1000):  # the line across blocks, and inside one block
        with pytest.raises(ProgramError, match=rf"^{f}:2: line longer than the limit of 100"):
            list(iter_din(f, chunk_bytes=chunk_bytes))
    f.write_text("0" * 1000)  # no newline at all
    with pytest.raises(ProgramError, match=rf"^{f}:1: line longer"):
        list(iter_din(f, chunk_bytes=64))


def test_chunk_sizes_must_be_positive():
    with pytest.raises(ValueError, match="chunk_lines"):
        iter_din(["0 0"], chunk_lines=0)
    with pytest.raises(ValueError, match="chunk_bytes"):
        iter_lackey(["I  0,1"], chunk_bytes=0)


# -- gzip and formats -----------------------------------------------------------------------
def gz(path, data):
    with gzip.open(path, "wb") as g:
        g.write(data)
    return path


def test_gzip_equals_plain(tmp_path):
    lk = gz(tmp_path / "trace.out.gz", LACKEY)
    din = gz(tmp_path / "trace.din.gz", DIN)
    assert detect_format(lk) == "lackey" and detect_format(din) == "din"
    assert whole(read_trace(lk)) == without_lines(LACKEY_OPS)
    assert whole(read_trace(din)) == without_lines(DIN_OPS)
    for chunk_bytes in (3, 1 << 20):
        assert listed(iter_trace(lk, chunk_lines=2, chunk_bytes=chunk_bytes)) == LACKEY_OPS
        assert listed(iter_trace(din, chunk_lines=2, chunk_bytes=chunk_bytes)) == DIN_OPS


def test_gzip_extension_decides_before_the_content(tmp_path):
    # "0 10" is din syntax, but a .npy under .gz is refused, not sniffed.
    f = gz(tmp_path / "t.npy.gz", b"0 10\n")
    assert detect_format(f) == "npy"
    with pytest.raises(ProgramError, match="gzip-compressed .npy cannot be memory-mapped"):
        read_trace(f)


def test_bad_gzip_is_a_program_error(tmp_path):
    f = tmp_path / "t.din.gz"
    f.write_bytes(b"0 10\n")
    with pytest.raises(ProgramError, match="cannot read trace"):
        read_trace(f)
    f.write_bytes(gzip.compress(b"0 10\n" * 1000)[:-20])  # truncated
    with pytest.raises(ProgramError, match="cannot read trace"):
        read_trace(f)


def test_resolve_format(tmp_path):
    f = tmp_path / "t.log"
    f.write_bytes(LACKEY)
    assert resolve_format(f) == "lackey"
    assert resolve_format(f, "DIN") == "din"
    with pytest.raises(ProgramError, match="unknown trace format 'pin'"):
        resolve_format(f, "pin")
    f.write_text("hello\n")
    with pytest.raises(ProgramError, match="unknown trace format"):
        iter_trace(f)


# -- memory ---------------------------------------------------------------------------------
def _stream_peak(tmp_path, blocks):
    """(ops, last line, peak RSS in KiB) of streaming `blocks` M din lines."""
    f = tmp_path / f"big{blocks}.din"
    write_din_lines(f, blocks)
    # VmHWM, not getrusage's ru_maxrss: that keeps the parent's high-water mark across the
    # fork and exec (a pytest process of a whole run is over 1 GB).
    code = textwrap.dedent(f"""
        from isa.traces import iter_trace
        ops = lines = 0
        for c in iter_trace({str(f)!r}):
            ops += len(c.program)
            lines = int(c.line[-1])
        hwm = [s for s in open("/proc/self/status") if s.startswith("VmHWM:")][0]
        print(ops, lines, hwm.split()[1])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    f.unlink()
    return tuple(map(int, out.split()))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
def test_a_trace_streams_in_memory_that_does_not_grow_with_its_length(tmp_path):
    """1M and 4M lines (4 and 16 chunks): each line an op, and the longer trace's peak memory
    the shorter one's (its 3M more ops held at once would be 168 MiB of op rows alone)."""
    small, big = (_stream_peak(tmp_path, b) for b in (1, 4))
    assert small[:2] == (1 << 20, 1 << 20) and big[:2] == (4 << 20, 4 << 20)
    assert big[2] - small[2] < 48 * 1024, f"peak RSS {small[2] // 1024} MiB at 1M lines, " \
        f"{big[2] // 1024} MiB at 4M"
    assert big[2] < 600 * 1024, f"peak RSS {big[2] // 1024} MiB"
