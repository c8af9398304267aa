"""Branches on loaded values, the branch predictor and nested transient windows.

Expected values come from the semantics of the operations (an unsigned compare of the
loaded bytes, little-endian) and from hand counts of a 2-bit saturating counter (Smith,
"A study of branch prediction strategies", ISCA 1981: counters 0-1 predict "not", 2-3
predict "in", each outcome moves the counter one step towards it).
"""
import pytest

from emu import Machine
from isa import LOADED, Program, ProgramError
from isa.ops import COL_FLAGS, FLAG_VALUE_INDEX, FLAG_VALUE_LIMIT

BOUND = 0x200000      # an 8-byte variable the branches load
OUT = 0x6000          # a byte the branch bodies store


def _machine(value, functional=True, **kw):
    m = Machine("skylake-ddr4", functional=functional, **kw)
    if functional:
        m.write(BOUND, int(value).to_bytes(8, "little"))
    return m


def _ran(m, index, limit, size=8):
    """Whether the body (a store of b'Y' at OUT) of `if (index < limit)` ran, one operand
    LOADED from BOUND."""
    p = Program().load(BOUND, size)
    with p.guarded(index, limit):
        p.store(OUT, b"Y")
    m.run(p)
    return m.read(OUT, 1) == b"Y"


@pytest.mark.parametrize("value, index, ran", [(16, 5, True), (16, 15, True), (16, 16, False),
                                               (3, 5, False), (0, 0, False)])
def test_branch_on_a_loaded_limit(value, index, ran):
    assert _ran(_machine(value), index, LOADED) == ran


@pytest.mark.parametrize("value, limit, ran", [(5, 16, True), (16, 16, False),
                                               (2**64 - 1, 16, False), (2**63, 2**62, False)])
def test_branch_on_a_loaded_index_is_unsigned(value, limit, ran):
    # the loaded bytes compare as an unsigned 64-bit number: 2**64 - 1 is no small index
    assert _ran(_machine(value), LOADED, limit) == ran


def test_loaded_value_is_its_bytes_only():
    # a 1-byte load of 0x...0105 is 5: in bounds of 16 (the other bytes are not loaded)
    assert _ran(_machine(0x0105), LOADED, 16, size=1)
    assert not _ran(_machine(0x0105), LOADED, 16, size=2)   # 0x105 = 261


def test_without_functional_memory_the_value_is_zero():
    # documented: no bytes are kept, so the loaded value is 0 (0 < 16 holds, 5 < 0 not)
    m = _machine(0, functional=False)
    p = Program().load(BOUND, 8)
    with p.guarded(LOADED, 16):
        p.work(1000)
    p.load(BOUND, 8)
    with p.guarded(5, LOADED):
        p.work(100_000)
    assert 1000 <= m.run(p).cycles < 100_000


def test_an_indexed_load_after_a_value_branch_uses_the_loaded_index():
    m = _machine(7)
    p = Program().load(BOUND, 8)
    with p.guarded(LOADED, 16):
        p.load_indexed(0x1000000, 4096, 1)
    m.run(p)
    assert m.cached(0x1000000 + 7 * 4096) == "l1d"


def test_a_value_branch_resolves_after_the_data():
    # predicted "out", actually in: the penalty follows the branch's resolution, which
    # waits for the bound's miss to memory (more than the LLC's hit time)
    prof = Machine("skylake-ddr4").profile
    penalty = prof.get("instr.branch_mispredict_cycles")
    resolve = prof.get("instr.branch_resolve_cycles")
    cycles = {}
    for guess in (True, False):
        m = _machine(16)
        m.run(Program().clflush(BOUND).mfence())
        cycles[guess] = m.run(Program().load(BOUND, 8).branch(5, LOADED, 0,
                                                              predict_in=guess)).cycles
    llc = prof.get("cache.llc.hit_cycles")
    assert cycles[False] - cycles[True] >= resolve + penalty
    assert cycles[False] >= llc + resolve + penalty


def test_value_comparisons_are_validated():
    with pytest.raises(ProgramError, match="both LOADED"):
        Program().load(BOUND, 8).branch(LOADED, LOADED, 0)
    with pytest.raises(ProgramError, match="both LOADED"):
        Program().load(BOUND, 8).index_mask(LOADED, LOADED)
    with pytest.raises(ProgramError, match="comparison of the previous load's value"):
        Program().store(BOUND, b"a").branch(LOADED, 16, 0).validate()
    with pytest.raises(ProgramError, match="comparison of the previous load's value"):
        Program().load(BOUND, 16).index_mask(5, LOADED).validate()
    with pytest.raises(ProgramError, match="comparison of the previous load's value"):
        Program().branch(5, LOADED, 0).validate()
    ops = Program().load(BOUND, 8).branch(LOADED, 16, 0).ops.copy()
    ops[1, COL_FLAGS] |= FLAG_VALUE_LIMIT
    with pytest.raises(ProgramError, match=r"op 1 \(BRANCH .*\): index and limit both"):
        Program.from_array(ops)
    ops = Program().load(BOUND, 8).work(1).ops.copy()
    ops[1, COL_FLAGS] = FLAG_VALUE_INDEX   # WORK does not compare
    with pytest.raises(ProgramError, match="flag not allowed"):
        Program.from_array(ops)
    # a chain of comparisons of one value is valid: each passes the value on
    Program().load(BOUND, 8).branch(LOADED, 16, 2).index_mask(LOADED, 16) \
        .load_indexed(0x1000, 64, 1).validate()
