"""The op table: every Op has an OP_SPEC row, its properties agree with what the ISA says
each op is (isa/ops.py's comments, docs/kernel-paths.md, the builder's
docstrings), and the validator reports each of its checks with its message.

The expected sets below are written from those descriptions, not read from the table.
"""
import importlib.util
import inspect
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from isa import LOADED
from isa import ops as isa_ops
from isa._validate import WHY, Check, validated
from isa.ops import (
    COL_ADDR,
    COL_DATA,
    COL_FLAGS,
    COL_IMM,
    COL_OP,
    COL_SIZE,
    COL_SRC,
    FLAG_DEPENDENT,
    FLAG_EXTABLE,
    FLAG_INDEXED,
    FLAG_MASKED,
    FLAG_MCSAFE,
    FLAG_PREDICT_IN,
    FLAG_RECORD,
    FLAG_RMW_ADD,
    FLAG_RMW_CMPXCHG,
    FLAG_SPIN,
    FLAG_VALUE_DATA,
    FLAG_VALUE_INDEX,
    FLAG_VALUE_LIMIT,
    FLAG_ZERO_TAIL,
    N_OPS,
    OP_SPEC,
    AddrKind,
    ImmKind,
    Op,
    RangeKind,
    SizeRule,
)
from isa.program import Program, ProgramError

ROOT = Path(isa_ops.__file__).resolve().parent.parent

COPIES = {Op.REP_MOVSB, Op.NT_COPY, Op.CAREFUL_COPY}       # "addr=dst, src, size=len"
LINE_FLUSHES = {Op.CLFLUSH, Op.CLFLUSHOPT, Op.CLWB}        # "addr"; FLUSH_RANGE's kinds
FENCES = {Op.SFENCE, Op.LFENCE, Op.MFENCE}
SMAP = {Op.STAC, Op.CLAC}
PEERS = {Op.PEER_WRITE, Op.PEER_READ}                      # "another core ... reads/writes"
GUARDS = {Op.BRANCH, Op.INDEX_MASK}                        # "addr=index, size=limit"
ADDRESS_LESS = FENCES | SMAP | {Op.WORK, Op.SITE}          # operands: none, or IMM only
ONE_ACCESS = {Op.LOAD, Op.STORE, Op.MOVNT, Op.LOCK_RMW} | PEERS   # "addr, size 1..64" (MOVNT 4..64)
WRITERS = {Op.STORE, Op.MOVNT, Op.PEER_WRITE, Op.LOCK_RMW} | COPIES   # they carry or move bytes
VALUE_WAIT = {Op.WAIT}                                     # "addr, size 1/2/4/8, src = mask"


def ops_with(test):
    return {op for op in Op if test(OP_SPEC[op])}


def test_every_op_has_a_row_and_the_arrays_follow_it():
    assert set(OP_SPEC) == set(Op)
    for name, field in [("ADDR_KIND", "addr"), ("SIZE_RULE", "size"), ("IMM_KIND", "imm"),
                        ("RANGE_KIND", "range"), ("ALLOWED_FLAGS", "flags")]:
        arr = getattr(isa_ops, name)
        assert arr.dtype == np.int64 and len(arr) == len(Op)
        assert [int(arr[op]) for op in Op] == [int(getattr(OP_SPEC[op], field)) for op in Op]


def test_an_op_missing_from_the_table_fails_at_import(tmp_path):
    shutil.copytree(ROOT / "isa", tmp_path / "isa")
    f = tmp_path / "isa" / "ops.py"
    src = f.read_text()
    last = "    PEER_READ = 20"
    assert last in src
    f.write_text(src.replace(last, f"    PREFETCHT0 = {N_OPS}\n" + last, 1))
    spec = importlib.util.spec_from_file_location("ops_with_a_new_op", f)
    with pytest.raises(ImportError, match=r"no OP_SPEC row for Op\.PREFETCHT0"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_byte_ranges():
    assert ops_with(lambda s: s.range == RangeKind.DST_SRC) == COPIES
    assert ops_with(lambda s: s.range == RangeKind.LINE) == LINE_FLUSHES
    assert ops_with(lambda s: s.range == RangeKind.LINES) == {Op.FLUSH_RANGE}
    assert ops_with(lambda s: s.range == RangeKind.BYTES) == ONE_ACCESS | VALUE_WAIT
    assert ops_with(lambda s: s.range == RangeKind.NONE) == ADDRESS_LESS | GUARDS


def test_operands():
    # an op has a byte range exactly when its ADDR is an address
    assert ops_with(lambda s: s.addr == AddrKind.ADDRESS) == \
        ops_with(lambda s: s.range != RangeKind.NONE)
    assert ops_with(lambda s: s.addr == AddrKind.NONE) == ADDRESS_LESS
    assert ops_with(lambda s: s.addr == AddrKind.INDEX) == GUARDS
    assert ops_with(lambda s: s.size == SizeRule.LIMIT) == GUARDS
    assert ops_with(lambda s: s.size == SizeRule.UP_TO_LINE) == ONE_ACCESS - {Op.MOVNT}
    assert ops_with(lambda s: s.size == SizeRule.MOVNT) == {Op.MOVNT}
    assert ops_with(lambda s: s.size == SizeRule.LENGTH) == COPIES | {Op.FLUSH_RANGE}
    assert ops_with(lambda s: s.size == SizeRule.VALUE) == VALUE_WAIT
    assert ops_with(lambda s: s.imm == ImmKind.VALUE) == VALUE_WAIT
    assert ops_with(lambda s: s.imm == ImmKind.DATA) == {Op.STORE, Op.MOVNT, Op.PEER_WRITE,
                                                           Op.LOCK_RMW}
    assert ops_with(lambda s: s.imm == ImmKind.FLUSH_KIND) == {Op.FLUSH_RANGE}
    assert ops_with(lambda s: s.imm == ImmKind.CYCLES) == {Op.WORK}
    assert ops_with(lambda s: s.imm == ImmKind.SITE) == {Op.SITE}
    assert ops_with(lambda s: s.imm == ImmKind.BODY) == {Op.BRANCH}
    assert ops_with(lambda s: s.imm == ImmKind.SCALE) == {Op.LOAD}


def test_memory_writes_and_poison():
    assert ops_with(lambda s: s.props & isa_ops.P_WRITES) == WRITERS
    # poison is consumed by a load of its line: loads, a locked RMW's read, a wait's checks,
    # and the loads of a copy's source
    assert ops_with(lambda s: s.props & isa_ops.P_POISON) == {Op.LOAD, Op.LOCK_RMW} | COPIES \
        | VALUE_WAIT
    # an op with data to write writes memory
    assert ops_with(lambda s: s.imm == ImmKind.DATA) <= WRITERS
    assert ops_with(lambda s: s.props & isa_ops.P_BULK) == COPIES | {Op.FLUSH_RANGE}
    assert isa_ops.FLUSH_KINDS == tuple(sorted(LINE_FLUSHES))


def test_transient_window_and_reorder_buffer():
    # Kocher et al. section 4 and emu._speculation: down a mispredicted path loads run,
    # stores are discarded, work and site markers pass, a branch follows its guess (nested
    # windows); any fence, locked op (a full barrier), flush, STAC/CLAC or bulk op ends the
    # window, and so does another core's access and a wait (its PAUSE)
    ends = FENCES | SMAP | LINE_FLUSHES | COPIES | {Op.FLUSH_RANGE, Op.LOCK_RMW} | PEERS \
        | VALUE_WAIT
    assert ops_with(lambda s: s.props & isa_ops.P_ENDS_WINDOW) == ends
    assert set(Op) - ends == {Op.LOAD, Op.STORE, Op.MOVNT, Op.WORK, Op.SITE, Op.INDEX_MASK,
                              Op.BRANCH}
    # a site marker is no instruction, a peer's access is another core's; WORK's uops hold
    # window entries like any other
    assert ops_with(lambda s: not s.props & isa_ops.P_ROB) == {Op.SITE} | PEERS
    assert ops_with(lambda s: s.props & isa_ops.P_PEER) == PEERS
    assert isa_ops.PEER_OPS == tuple(sorted(PEERS))


def test_allowed_flags():
    def allowing(flag):
        return ops_with(lambda s: s.flags & flag)
    # FLAG_DEPENDENT: "LOAD/BRANCH/INDEX_MASK/copies/WORK"
    assert allowing(FLAG_DEPENDENT) == {Op.LOAD, Op.BRANCH, Op.INDEX_MASK, Op.WORK} | COPIES
    # exception-table entries: loads, stores, MOVNT (get_user, put_user, ...), locked ops
    # (futex's user atomics) and copies
    assert allowing(FLAG_EXTABLE) == {Op.LOAD, Op.STORE, Op.MOVNT, Op.LOCK_RMW} | COPIES
    # an MCE-safe fixup exists only where poison can be consumed (a wait's spin loop has no
    # exception-table entry: smp_cond_load_acquire is never a machine-check-safe access)
    assert allowing(FLAG_MCSAFE) == ops_with(lambda s: s.props & isa_ops.P_POISON) - VALUE_WAIT
    assert allowing(FLAG_INDEXED) == allowing(FLAG_MASKED) == {Op.LOAD}
    assert allowing(FLAG_PREDICT_IN) == {Op.BRANCH}
    assert allowing(FLAG_ZERO_TAIL) == COPIES
    # a value read can be recorded by an op that reads one: a load, a locked op, a wait
    assert allowing(FLAG_RECORD) == {Op.LOAD, Op.LOCK_RMW} | VALUE_WAIT
    assert allowing(FLAG_VALUE_DATA) == {Op.STORE}
    assert allowing(FLAG_RMW_ADD) == allowing(FLAG_RMW_CMPXCHG) == allowing(FLAG_SPIN) \
        == {Op.LOCK_RMW}


def test_ops_that_find_their_store_buffer_empty():
    """x86-TSO (docs/design.md, Cores): MFENCE and locked ops drain it (SDM §8.2.3.9), and
    every op that moves bytes in bulk or not through the store buffer sees its stores."""
    empty = {Op.MFENCE, Op.LOCK_RMW, Op.MOVNT, Op.FLUSH_RANGE} | LINE_FLUSHES | COPIES | PEERS
    assert ops_with(lambda s: s.props & isa_ops.P_SB_EMPTY) == empty



def test_the_core_touches_each_ops_byte_range():
    """emu._checks.op_ranges: (dst start, dst end, src start, src end) of each op, the bytes
    that are checked for faults and poison and made present."""
    from emu._checks import op_ranges
    p = (Program().load(0x1003, 8).movnt(0x2010, size=16).clwb(0x1234)
         .flush_range(0x1010, 0x40).flush_range(0x1010, 0).rep_movsb(0x3000, 0x5008, 100)
         .sfence().branch(3, 5, 0).peer_read(0x4038, 16).work(4))
    nothing = (0, 0, 0, 0)
    assert [tuple(int(x) for x in op_ranges(p.ops, i)) for i in range(len(p))] == [
        (0x1003, 0x100b, 0, 0), (0x2010, 0x2020, 0, 0), (0x1200, 0x1240, 0, 0),
        (0x1000, 0x1080, 0, 0), nothing, (0x3000, 0x3064, 0x5008, 0x506c), nothing,
        nothing, (0x4038, 0x4048, 0, 0), nothing]

def test_every_op_has_a_builder_method():
    for op in Op:
        assert callable(getattr(Program, op.name.lower(), None)), op.name



def test_the_run_loop_has_a_branch_for_every_op():
    """Each op has its own handler in emu._core.run (docs/style.md rule 3)."""
    from emu import _core
    src = inspect.getsource(getattr(_core.run, "py_func", _core.run))
    assert [op.name for op in Op if not re.search(rf"\bop == Op\.{op.name}\b", src)] == []

def edited(p, col, value, row=0):
    """Program p with one operand of one op set by hand (as a raw op array could hold)."""
    ops = p.ops.copy()
    ops[row, col] = value
    return Program.from_array(ops, bytes(p._blob), p.site_names, check=False)


def load_with(col, value):
    return edited(Program().load(0x1000), col, value)


# One op failing exactly one check each, with the message Program.validate() gives.
BAD = {
    Check.UNKNOWN_OPCODE: lambda: edited(Program().load(0), 0, len(Op)),
    Check.SIZE: lambda: load_with(COL_SIZE, 65),
    Check.MOVNT_SIZE: lambda: edited(Program().movnt(0x1000, size=16), COL_SIZE, 12),
    Check.MOVNT_ALIGN: lambda: edited(Program().movnt(0x1000, size=16), COL_ADDR, 0x1008),
    Check.ADDR: lambda: load_with(COL_ADDR, -64),
    Check.SRC: lambda: edited(Program().rep_movsb(0, 64, 8), COL_SRC, -1),
    Check.LENGTH: lambda: edited(Program().flush_range(0, 64), COL_SIZE, -1),
    Check.FLUSH_KIND: lambda: edited(Program().flush_range(0, 64), COL_IMM, int(Op.SFENCE)),
    Check.CYCLES: lambda: edited(Program().work(3), COL_IMM, -3),
    Check.SITE: lambda: edited(Program().site("f"), COL_IMM, 1),
    Check.DATA: lambda: edited(Program().store(0, b"abcd"), COL_DATA, 1),
    Check.PHYS: lambda: Program().rep_movsb((1 << 51) + 64, 0, 1 << 51),
    Check.FLAGS: lambda: edited(Program().clwb(0), COL_FLAGS, FLAG_EXTABLE),
    Check.INDEXED: lambda: Program().load(0, 16).load_indexed(0x1000, 8),
    Check.MASKED: lambda: Program().load_masked(0x100, 0x200),
    Check.BODY: lambda: Program().branch(1, 2, 1),
    Check.INDEX: lambda: edited(Program().index_mask(1, 2), COL_SIZE, -2),
    Check.IP: lambda: load_with(COL_SRC, -1),
    Check.VALUE: lambda: Program().store(0, b"a").branch(LOADED, 2, 0),
    Check.VALUE_BOTH: lambda: edited(Program().load(0, 8).branch(LOADED, 2, 0), COL_FLAGS,
                                     FLAG_VALUE_INDEX | FLAG_VALUE_LIMIT, row=1),
    Check.VALUE_SIZE: lambda: Program().wait(0x1002, 0, 4),
    Check.RECORD_FIXUP: lambda: Program().load(0, 8, flags=FLAG_EXTABLE, record=True),
    Check.VALUE_DATA: lambda: Program().store(0, size=8, value=1, plus_recorded=True),
    Check.RMW: lambda: edited(Program().lock_xadd(0, 1, 8), COL_FLAGS,
                              FLAG_RMW_ADD | FLAG_RMW_CMPXCHG),
    Check.AT_LEAST: lambda: Program().wait(0x1000, 5, 8, at_least=True),
}


@pytest.mark.parametrize("check", list(Check), ids=lambda c: c.name)
def test_each_check_reports_its_message(check):
    p = BAD[check]()
    i, op, addr = len(p) - 1, int(p.ops[-1, 0]), int(p.ops[-1, COL_ADDR])
    with pytest.raises(ProgramError) as e:
        p.validate()
    if check == Check.UNKNOWN_OPCODE:
        assert str(e.value) == f"op {i}: unknown opcode {op}"
    else:
        assert str(e.value) == f"op {i} ({Op(op).name} addr={addr:#x}): {WHY[check]}"


def test_a_data_offset_near_the_int64_limit_is_beyond_the_blob():
    """offset + size wraps to a negative number for these: the check must not pass them
    (the core would copy from far outside the blob)."""
    for size in (1, 8, 64):
        p = edited(Program().store(0, bytes(size)), COL_DATA, 2**63 - size)
        with pytest.raises(ProgramError, match="data beyond the data blob"):
            p.validate()


def test_the_kept_answer_is_a_fresh_validation_of_the_ops():
    """validate() keeps its answer until an op is added; batches add theirs to it as they
    go. Whatever the builder did, it must equal the validator's on the ops as they are."""
    rng = np.random.default_rng(5)
    for trial in range(40):
        p = Program()
        for _ in range(rng.integers(1, 8)):
            k = int(rng.integers(0, 6))
            addrs = rng.integers(0, 1 << 30, int(rng.integers(0, 50)))
            if k == 0:
                p.loads(addrs, int(rng.choice([1, 8, 64])), dependent=bool(rng.integers(2)))
            elif k == 1:
                p.stores(addrs, int(rng.choice([4, 64])))
            elif k == 2:
                p.work(int(rng.integers(0, 100)))
            elif k == 3:
                p.store(int(addrs[0]) if len(addrs) else 0, b"x" * int(rng.integers(1, 65)))
            elif k == 4:
                p.extend(Program().loads(addrs, 64).site("s"))
            else:
                with p.guarded(1, 2):
                    p.load(64)
            if rng.integers(2):
                p.validate()
        kept = p.validate()
        assert kept == validated(p.ops, len(p.site_names), len(p._blob)), trial


def test_extend_remaps_sites_and_data_and_takes_the_program_itself():
    p = Program().site("a").load(0, 8).site("b")
    q = Program().site("b").store(128, b"xyz").site("c")
    p.extend(q)
    # by hand: q's sites b, c become p's 1 and (new) 2; q's bytes follow p's (none)
    assert p.site_names == ["a", "b", "c"]
    sites = p.ops[p.ops[:, COL_OP] == Op.SITE, COL_IMM].tolist()
    assert sites == [0, 1, 1, 2]
    assert q.ops[q.ops[:, COL_OP] == Op.SITE, COL_IMM].tolist() == [0, 1]   # q unchanged
    n, blob = len(p), bytes(p._blob)
    p.extend(p)
    assert len(p) == 2 * n and bytes(p._blob) == blob * 2
    second = p.ops[n:].copy()
    has = second[:, COL_DATA] >= 0
    second[has, COL_DATA] -= len(blob)
    assert (second == p.ops[:n]).all()
    assert p.validate() == validated(p.ops, len(p.site_names), len(p._blob))


def test_ops_are_read_only_and_a_raw_edit_is_validated():
    p = Program().loads(np.arange(4) * 64)
    with pytest.raises(ValueError, match="read-only"):
        p.ops[0, COL_ADDR] = -64
    ops = p.ops.copy()
    ops[0, COL_ADDR] = -64
    with pytest.raises(ProgramError, match="negative address"):
        Program().extend(Program.from_array(ops, check=False)).validate()
    with pytest.raises(ProgramError, match="52-bit"):
        Program().loads([(1 << 52) - 8], 16)


def test_unused_operands_are_not_checked():
    """Operands an op does not have are not validated (the core never reads them): a fence's
    ADDR, a PEER_READ's DATA, a CLWB's SIZE."""
    edited(Program().sfence(), COL_ADDR, -1).validate()
    edited(Program().peer_read(0x40), COL_DATA, 10**6).validate()
    edited(Program().clwb((1 << 52) - 64), COL_SIZE, 1 << 20).validate()


def test_wait_at_least_is_a_wrapping_index_comparison():
    """A 2-byte index at 0xFFFE has passed 0xFFF0 and not yet 0x0004 (it wraps at 2^16, as
    virtio's ring indices do); the equality form waits for the exact value."""
    from emu import Machine, WaitForever
    for have, want, done in ((0xFFFE, 0xFFF0, True), (0xFFFE, 0x0004, False),
                             (0x0002, 0xFFF0, True), (0x0004, 0x0004, True)):
        m = Machine("skylake-ddr4")
        m.write(0x200000, have.to_bytes(2, "little"))
        p = Program().wait(0x200000, want, size=2, at_least=True)
        if done:
            m.run(p)
        else:
            with pytest.raises(WaitForever):
                m.run(p)
    with pytest.raises(ValueError, match="at or past"):
        Program().wait(0x200000, 1, size=2, mask=0xFF, at_least=True).validate()
