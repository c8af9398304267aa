"""Trace readers: lackey, din, npy and the read_trace dispatcher (no numba needed)."""
import shutil
import subprocess

import numpy as np
import pytest

from isa.ops import COL_ADDR, COL_DATA, COL_IMM, COL_OP, COL_SIZE, N_COLS, Op
from isa.program import Program, ProgramError
from isa.traces import read_din, read_lackey, read_npy, read_trace

L, S = int(Op.LOAD), int(Op.STORE)


def rows(prog):
    """(op, addr, size) per op, and check the trace-replay invariants of every row."""
    ops = prog.ops
    assert (ops[:, COL_DATA] == -1).all()
    assert (ops[:, COL_IMM] == 0).all()
    return [tuple(int(x) for x in r) for r in ops[:, [COL_OP, COL_ADDR, COL_SIZE]]]


# -- lackey ---------------------------------------------------------------------------------
LACKEY = """\
==4242== Lackey, an example Valgrind tool
==4242== Command: ./prog
==4242== 
I  0401ab70,3
 S 1fff000778,8
I  0401b770,1
 L 0401c000,4
 M 1fff000770,8
I  0401b771,7
 L 00001000,1
==4242== 
==4242== Exit code:       0
"""


def test_lackey_basic_order_and_modify():
    assert rows(read_lackey(LACKEY.splitlines())) == [
        (S, 0x1fff000778, 8),
        (L, 0x0401c000, 4),
        (L, 0x1fff000770, 8),   # M = load ...
        (S, 0x1fff000770, 8),   # ... then store of the same bytes
        (L, 0x1000, 1),
    ]


def test_lackey_from_file_same_as_lines(tmp_path):
    f = tmp_path / "t.lackey"
    f.write_text(LACKEY)
    assert rows(read_lackey(f)) == rows(read_lackey(LACKEY.splitlines(keepends=True)))
    assert rows(read_lackey(str(f))) == rows(read_lackey(f))


def test_lackey_only_instructions_and_noise_is_empty():
    p = read_lackey(["==1== hi", "I  00400000,4", "", "--1-- warning", "SB 00400000", "I  00400004,2"])
    assert len(p) == 0


def test_lackey_crlf_and_no_final_newline(tmp_path):
    f = tmp_path / "crlf.txt"
    f.write_bytes(b"I  00400000,4\r\n L 2000,8\r\n S 3000,2")
    assert rows(read_lackey(f)) == [(L, 0x2000, 8), (S, 0x3000, 2)]


def test_lackey_splits_wide_accesses():
    p = read_lackey([" S 1000,130", " L 2010,64", " M 4000,65"])
    assert rows(p) == [
        (S, 0x1000, 64), (S, 0x1040, 64), (S, 0x1080, 2),
        (L, 0x2010, 64),
        (L, 0x4000, 64), (L, 0x4040, 1), (S, 0x4000, 64), (S, 0x4040, 1),
    ]


@pytest.mark.parametrize("bad", [
    " X 1000,8",        # unknown access kind
    " L 1000",          # no size
    " L 1000,",         # empty size
    " L 10g0,8",        # not hex
    " L ,8",            # no address
    " L 1000,0",        # zero size
    " L 1000,8x",       # junk after the size
    "I  zz,3",          # bad instruction line
    "hello world",      # program output mixed in
    " L 8000000000000000,8",  # does not fit a signed 64-bit address
])
def test_lackey_malformed_line_names_file_and_line(bad, tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text(f"==1== banner\n L 1000,8\nI  00400000,4\n{bad}\n S 1000,8\n")
    with pytest.raises(ProgramError) as e:
        read_lackey(f)
    msg = str(e.value)
    assert f"{f}:4:" in msg and repr(bad) in msg


# -- din ------------------------------------------------------------------------------------
def test_din_labels_sizes_and_hex_forms():
    p = read_din([
        "0 1000",          # read, default size 8
        "1 0x2000 4",      # write, 0x prefix, explicit size
        "2 400000",        # instruction fetch: ignored
        "3 0",             # escape: ignored
        "4 0",             # flush: ignored
        "",
        "\t0   ABCD  2  ",  # tabs/extra spaces, upper-case hex
        "1 0X40 100",      # > 64 bytes: split
    ])
    assert rows(p) == [
        (L, 0x1000, 8),
        (S, 0x2000, 4),
        (L, 0xABCD, 2),
        (S, 0x40, 64), (S, 0x80, 36),
    ]


def test_din_file(tmp_path):
    f = tmp_path / "t.din"
    f.write_text("0 10\n1 20 1\n")
    assert rows(read_din(f)) == [(L, 0x10, 8), (S, 0x20, 1)]
    assert rows(read_trace(f)) == [(L, 0x10, 8), (S, 0x20, 1)]


@pytest.mark.parametrize("bad, why", [
    ("5 1000", "label"),
    ("0 zz", "malformed"),
    ("0", "malformed"),
    ("0 1000 8 9", "malformed"),
    ("0 1000 0", "size"),
    ("2 nothex", "malformed"),
    ("0 12345678901234567", "range"),
])
def test_din_malformed_line(bad, why, tmp_path):
    f = tmp_path / "bad.din"
    f.write_text(f"0 1000\n\n{bad}\n1 2000\n")
    with pytest.raises(ProgramError) as e:
        read_din(f)
    msg = str(e.value)
    assert f"{f}:3:" in msg and repr(bad) in msg and why in msg


# -- npy ------------------------------------------------------------------------------------
def test_npy_raw_op_array_round_trip(tmp_path):
    p = Program()
    p.load(0x1000, 8).store(0x2000, size=4, value=7).clflush(0x1000).mfence().work(5)
    f = tmp_path / "ops.npy"
    np.save(f, p.ops)
    q = read_npy(f)
    np.testing.assert_array_equal(q.ops, p.ops)
    np.testing.assert_array_equal(read_trace(f).ops, p.ops)


def test_npy_kind_addr_and_kind_addr_size(tmp_path):
    f2 = tmp_path / "ka.npy"
    np.save(f2, np.array([[0, 0x1000], [1, 0x2000]], dtype=np.int64))
    assert rows(read_npy(f2)) == [(L, 0x1000, 8), (S, 0x2000, 8)]
    f3 = tmp_path / "kas.npy"
    np.save(f3, np.array([[1, 0x40, 4], [0, 0x80, 65]], dtype=np.uint32))
    assert rows(read_npy(f3)) == [(S, 0x40, 4), (L, 0x80, 64), (L, 0xC0, 1)]


def test_npy_structured(tmp_path):
    a = np.zeros(2, dtype=[("kind", "u1"), ("addr", "u8"), ("size", "i4")])
    a["kind"] = [1, 0]
    a["addr"] = [0x10, 0x20]
    a["size"] = [2, 16]
    f = tmp_path / "s.npy"
    np.save(f, a)
    assert rows(read_npy(f)) == [(S, 0x10, 2), (L, 0x20, 16)]


@pytest.mark.parametrize("arr", [
    np.zeros(5, dtype=np.int64),                 # 1-D
    np.zeros((3, 4), dtype=np.int64),            # 4 columns
    np.zeros((2, 3, N_COLS), dtype=np.int64),    # 3-D
    np.zeros((3, 2), dtype=np.float64),          # not integer
])
def test_npy_bad_shape(arr, tmp_path):
    f = tmp_path / "bad.npy"
    np.save(f, arr)
    with pytest.raises(ProgramError, match="accepted"):
        read_npy(f)


@pytest.mark.parametrize("arr, why", [
    (np.array([[2, 0x10]]), "kind 2"),
    (np.array([[0, -16]]), "negative"),
    (np.array([[0, 16, 0]]), "size 0"),
])
def test_npy_bad_values(arr, why, tmp_path):
    f = tmp_path / "bad.npy"
    np.save(f, arr)
    with pytest.raises(ProgramError, match=why):
        read_npy(f)


def test_npy_raw_op_array_is_validated(tmp_path):
    ops = np.zeros((1, N_COLS), dtype=np.int64)
    ops[0, COL_OP] = L
    ops[0, COL_SIZE] = 100
    f = tmp_path / "ops.npy"
    np.save(f, ops)
    with pytest.raises(ProgramError, match="size not in 1..64"):
        read_npy(f)


# -- dispatch -------------------------------------------------------------------------------
def test_read_trace_dispatch(tmp_path):
    lk = tmp_path / "trace.out"
    lk.write_text(LACKEY)
    assert len(read_trace(lk)) == 5                   # sniffed past the ==pid== banner
    assert len(read_trace(lk, fmt="lackey")) == 5
    din = tmp_path / "trace.txt"
    din.write_text("0 1000\n")
    assert rows(read_trace(din)) == [(L, 0x1000, 8)]  # sniffed as din
    npy = tmp_path / "noext"
    with open(npy, "wb") as f:
        np.save(f, np.array([[1, 64]]))
    assert rows(read_trace(npy)) == [(S, 64, 8)]      # sniffed by the .npy magic
    with pytest.raises(ProgramError, match="unknown trace format"):
        read_trace(lk, fmt="pin")
    junk = tmp_path / "junk.log"
    junk.write_text("this is not a trace\n")
    with pytest.raises(ProgramError, match="unknown trace format"):
        read_trace(junk)
    with pytest.raises(ProgramError, match="cannot read"):
        read_trace(tmp_path / "missing.din")


# -- real valgrind --------------------------------------------------------------------------
C_PROG = r"""
#include <stdio.h>
#define N 1000
int a[N], b[N];
int main(void) {
    long sum = 0;
    for (int i = 0; i < N; i++) a[i] = i;          /* 1000 stores into a */
    for (int i = 0; i < N; i++) sum += a[i];       /* 1000 loads from a */
    for (int i = 0; i < N; i++) b[i] = a[i] + 1;   /* 1000 loads from a, 1000 stores into b */
    printf("%lx %lx %ld\n", (unsigned long)a, (unsigned long)b, sum);
    return 0;
}
"""


def test_real_valgrind_lackey(tmp_path):
    for tool in ("valgrind", "gcc"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    src = tmp_path / "prog.c"
    src.write_text(C_PROG)
    exe = tmp_path / "prog"
    subprocess.run(["gcc", "-O0", "-o", str(exe), str(src)], check=True)
    log = tmp_path / "lackey.txt"
    out = subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={log}", str(exe)],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    a_addr, b_addr, total = (int(x, 16) if i < 2 else int(x) for i, x in enumerate(out.split()))
    assert total == 999 * 1000 // 2
    p = read_lackey(log)
    ops = p.ops
    op, addr, size = ops[:, COL_OP], ops[:, COL_ADDR], ops[:, COL_SIZE]
    in_a = (addr >= a_addr) & (addr < a_addr + 4000)
    in_b = (addr >= b_addr) & (addr < b_addr + 4000)
    loads_a = (op == L) & in_a
    stores_a = (op == S) & in_a
    stores_b = (op == S) & in_b
    assert loads_a.sum() >= 1000 and stores_b.sum() >= 1000 and stores_a.sum() >= 1000
    # From the source: every int of a is written and read, every int of b written, 4 bytes each.
    assert set(addr[loads_a] - a_addr) == set(range(0, 4000, 4))
    assert set(addr[stores_b] - b_addr) == set(range(0, 4000, 4))
    assert (size[loads_a] == 4).all() and (size[stores_b] == 4).all()
    # The whole run (libc start-up included) is a trace of many more accesses than that.
    assert len(p) > 3000
