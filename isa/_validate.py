"""The compiled validator: one pass over an op array that finds, per check, the first op
failing it. Which operands each op has, and their rules, come from isa.ops.OP_SPEC."""
from enum import IntEnum

import numpy as np
from numba import njit

from isa.ops import (
    ADDR_KIND,
    ALLOWED_FLAGS,
    COL_ADDR,
    COL_DATA,
    COL_FLAGS,
    COL_IMM,
    COL_OP,
    COL_SIZE,
    COL_SRC,
    FLAG_AT_LEAST,
    FLAG_DEPENDENT,
    FLAG_EXTABLE,
    FLAG_INDEXED,
    FLAG_MASKED,
    FLAG_MCSAFE,
    FLAG_NOT_EQUAL,
    FLAG_RECORD,
    FLAG_RMW_ADD,
    FLAG_RMW_CMPXCHG,
    FLAG_SPIN,
    FLAG_VALUE_DATA,
    FLAG_VALUE_INDEX,
    FLAG_VALUE_LIMIT,
    FLUSH,
    HAS_IP,
    IMM_KIND,
    MAX_WORK_CYCLES,
    MOVNT_SIZES,
    N_OPS,
    PEER,
    PHYS_LIMIT,
    RANGE_KIND,
    RMW_KINDS,
    SIZE_RULE,
    VALUE_USE,
    AddrKind,
    ImmKind,
    Op,
    RangeKind,
    SizeRule,
)

MAX_SCALE = 4096

# Ops whose only checks, without flags, are the size (1..64), the address range and a data
# offset: plain loads and stores, most of any trace, take first_bad's short path, and so do
# they with FLAG_DEPENDENT where allowed (a pointer chase's loads): it has no rule of its own.
SIMPLE = np.array([ADDR_KIND[op] == AddrKind.ADDRESS and SIZE_RULE[op] == SizeRule.UP_TO_LINE
                   and RANGE_KIND[op] == RangeKind.BYTES
                   and IMM_KIND[op] in (ImmKind.NONE, ImmKind.SCALE, ImmKind.DATA)
                   for op in range(N_OPS)])
SIMPLE_FLAGS = np.array([ALLOWED_FLAGS[op] & FLAG_DEPENDENT for op in range(N_OPS)])


class ProgramError(ValueError):
    """An op with operands the ISA does not allow."""


# What the validator checks, in the order Program.validate() reports them.
_CHECKS = (
    ("UNKNOWN_OPCODE", "unknown opcode"),
    ("SIZE", "size not in 1..64"),
    ("MOVNT_SIZE", f"movnt size not in {MOVNT_SIZES}"),
    ("MOVNT_ALIGN", "movnt not aligned to its size"),
    ("ADDR", "negative address"),
    ("SRC", "negative source address"),
    ("LENGTH", "negative length"),
    ("FLUSH_KIND", "bad flush kind"),
    ("CYCLES", f"work cycles not in 0..{MAX_WORK_CYCLES}"),
    ("SITE", "site id without a name"),
    ("DATA", "data beyond the data blob"),
    ("PHYS", "range beyond the 52-bit physical address space"),
    ("FLAGS", "flag not allowed on this op"),
    ("INDEXED", ("indexed load: the previous op is not a LOAD of at most 8 bytes nor a "
                 f"comparison of its value, or scale not in 0..{MAX_SCALE}")),
    ("VALUE", ("comparison of the previous load's value: the previous op is not a LOAD of "
               "at most 8 bytes nor a comparison of its value")),
    ("VALUE_BOTH", "index and limit both the previous load's value"),
    ("MASKED", "masked load: base (src) negative or above the address, or not 0 if indexed"),
    ("BODY", "branch body beyond the end of the program"),
    ("INDEX", "negative index or limit"),
    ("IP", "negative instruction address (ip)"),
    ("VALUE_SIZE", "value of a wait, locked op's kind or record not 1, 2, 4 or 8 bytes aligned "
                   "to its size (a recorded load or a value-data store: at most 8 bytes)"),
    ("RECORD_FIXUP", "a recorded op cannot also go to an exception-table fixup"),
    ("VALUE_DATA", "store of a recorded value: no op before it records one"),
    ("RMW", "locked op: both add and cmpxchg, spin without cmpxchg, or data bytes with a kind "
            "(its operand is the immediate)"),
    ("AT_LEAST", "wait for an index at or past a value: not 1, 2 or 4 bytes with the whole "
                 "value (mask -1), or also for a value not equal"),
)
Check = IntEnum("Check", [name for name, _ in _CHECKS], start=0)
WHY = tuple(why for _, why in _CHECKS)


@njit(cache=True, nogil=True)
def range_units(n):
    """The cost units of a range of n bytes: its cache lines, at most (one more for an
    unaligned start). An op counts one unit more for itself (first_bad's cost[1])."""
    return n // 64 + 2


@njit(cache=True, nogil=True)
def _fail(first, check, i):
    if first[check] < 0:
        first[check] = i


@njit(cache=True, nogil=True)
def first_bad(ops, n_sites, blob_len, first, cost, site_first):
    """first[c] = index of the first op failing Check c (left -1 if none); site_first[k] =
    index of the first SITE op of site k (left -1 if none); cost[0] = the
    program's WORK cycles, cost[1] = its ops plus the cachelines they touch (floats: no
    sum of valid operands can wrap); cost[2] = 1 if an op has an exception-table,
    machine-check-safe or record flag (the run keeps a word per op), cost[3] = 1 if an op
    is another core's access, cost[4] = 1 if an op waits for, records or computes on a
    value in memory (what Machine.run needs to know of the whole program, found in the
    same pass)."""
    work = 0.0
    units = float(ops.shape[0])
    peer = False
    recorded = False   # an op before i records a value
    for i in range(ops.shape[0]):
        op = ops[i, COL_OP]
        if op < 0 or op >= N_OPS:
            _fail(first, Check.UNKNOWN_OPCODE, i)
            continue
        addr = ops[i, COL_ADDR]
        size = ops[i, COL_SIZE]
        peer |= PEER[op] != 0
        if SIMPLE[op] and ops[i, COL_FLAGS] & ~SIMPLE_FLAGS[op] == 0 and 1 <= size <= 64 and \
                0 <= addr <= PHYS_LIMIT - size and ops[i, COL_SRC] >= 0 and \
                (IMM_KIND[op] != ImmKind.DATA or
                                                   ops[i, COL_DATA] < 0
                                                   or ops[i, COL_DATA] <= blob_len - size):
            units += range_units(size)
            continue
        src = ops[i, COL_SRC]
        imm = ops[i, COL_IMM]
        flags = ops[i, COL_FLAGS]
        if flags & (FLAG_EXTABLE | FLAG_MCSAFE | FLAG_RECORD):
            cost[2] = 1.0
        rule = SIZE_RULE[op]
        aligned_value = (size == 1 or size == 2 or size == 4 or size == 8) and addr % size == 0
        if rule == SizeRule.VALUE and not aligned_value:
            _fail(first, Check.VALUE_SIZE, i)
        if op == Op.LOCK_RMW and flags & (RMW_KINDS | FLAG_RECORD) and not aligned_value:
            _fail(first, Check.VALUE_SIZE, i)
        if (op == Op.LOAD and flags & FLAG_RECORD or op == Op.STORE and flags & FLAG_VALUE_DATA) \
                and size > 8:
            _fail(first, Check.VALUE_SIZE, i)
        if flags & FLAG_RECORD and flags & (FLAG_EXTABLE | FLAG_MCSAFE):
            _fail(first, Check.RECORD_FIXUP, i)
        if flags & FLAG_VALUE_DATA and not recorded:
            _fail(first, Check.VALUE_DATA, i)
        if op == Op.LOCK_RMW and (flags & RMW_KINDS == RMW_KINDS or (
                flags & FLAG_SPIN and not flags & FLAG_RMW_CMPXCHG) or (
                flags & RMW_KINDS and ops[i, COL_DATA] >= 0)):
            _fail(first, Check.RMW, i)
        if op == Op.WAIT and flags & FLAG_AT_LEAST and (size == 8 or src != -1
                                                        or flags & FLAG_NOT_EQUAL):
            _fail(first, Check.AT_LEAST, i)
        recorded |= (flags & FLAG_RECORD) != 0
        if op == Op.WAIT or flags & (FLAG_RECORD | FLAG_VALUE_DATA | RMW_KINDS):
            cost[4] = 1.0
        if (rule == SizeRule.UP_TO_LINE or rule == SizeRule.MOVNT) and not 1 <= size <= 64:
            _fail(first, Check.SIZE, i)
        if rule == SizeRule.MOVNT:
            if size not in MOVNT_SIZES:
                _fail(first, Check.MOVNT_SIZE, i)
            if addr % max(size, 1) != 0:
                _fail(first, Check.MOVNT_ALIGN, i)
        if rule == SizeRule.LENGTH and size < 0:
            _fail(first, Check.LENGTH, i)
        if ADDR_KIND[op] == AddrKind.ADDRESS and addr < 0:
            _fail(first, Check.ADDR, i)
        if ADDR_KIND[op] == AddrKind.INDEX and (addr < 0 or size < 0):
            _fail(first, Check.INDEX, i)
        kind = IMM_KIND[op]
        # (d + size could wrap: a huge offset would pass)
        if kind == ImmKind.DATA and ops[i, COL_DATA] >= 0 and (
                ops[i, COL_DATA] > blob_len or size > blob_len - ops[i, COL_DATA]):
            _fail(first, Check.DATA, i)
        if kind == ImmKind.FLUSH_KIND and (imm < 0 or imm >= N_OPS or not FLUSH[imm]):
            _fail(first, Check.FLUSH_KIND, i)
        if kind == ImmKind.CYCLES:
            if not 0 <= imm <= MAX_WORK_CYCLES:
                _fail(first, Check.CYCLES, i)
            work += imm
        if kind == ImmKind.SITE:
            if imm < 0 or imm >= n_sites:
                _fail(first, Check.SITE, i)
            elif site_first[imm] < 0:
                site_first[imm] = i
        if kind == ImmKind.BODY and (imm < 0 or imm >= ops.shape[0] - i):
            _fail(first, Check.BODY, i)
        if flags & ~ALLOWED_FLAGS[op]:
            _fail(first, Check.FLAGS, i)
        # the value an op uses is the last load's: the op before is that LOAD, or an op
        # using the same value (a BRANCH or INDEX_MASK comparing it leaves it as it was)
        no_value = i == 0 or (ops[i - 1, COL_SIZE] > 8 if ops[i - 1, COL_OP] == Op.LOAD
                              else (ops[i - 1, COL_FLAGS] & (VALUE_USE | FLAG_RECORD)) == 0)
        if flags & FLAG_INDEXED and (no_value or imm < 0 or imm > MAX_SCALE):
            _fail(first, Check.INDEXED, i)
        if flags & (FLAG_VALUE_INDEX | FLAG_VALUE_LIMIT):
            if no_value:
                _fail(first, Check.VALUE, i)
            if flags & FLAG_VALUE_INDEX and flags & FLAG_VALUE_LIMIT:
                _fail(first, Check.VALUE_BOTH, i)
        if flags & FLAG_MASKED and not (src == 0 if flags & FLAG_INDEXED else 0 <= src <= addr):
            _fail(first, Check.MASKED, i)
        if HAS_IP[op] and not flags & FLAG_MASKED and src < 0:
            _fail(first, Check.IP, i)
        copy = RANGE_KIND[op] == RangeKind.DST_SRC
        if copy and src < 0:
            _fail(first, Check.SRC, i)
        if RANGE_KIND[op] != RangeKind.NONE:
            # the bytes from addr on that the op touches (an indexed load: its base, at least)
            n = 1 if flags & FLAG_INDEXED or RANGE_KIND[op] == RangeKind.LINE else max(size, 0)
            if addr > PHYS_LIMIT - min(n, PHYS_LIMIT) or n > PHYS_LIMIT or \
                    (copy and src > PHYS_LIMIT - min(n, PHYS_LIMIT)):
                _fail(first, Check.PHYS, i)
            units += range_units(n) * (2.0 if copy else 1.0)
    cost[0] = work
    cost[1] = units
    cost[3] = 1.0 if peer else 0.0


NO_OPS = (0.0, 0.0, False, False)   # validated()'s answer for no ops


def validated(ops, n_sites, blob_len, site_first=None, values=None):
    """Raise ProgramError naming the first op whose operands the core cannot execute; else
    (WORK cycles, ops plus cachelines touched, any FLAG_EXTABLE, FLAG_MCSAFE or FLAG_RECORD
    op, any other core's access), as Program.validate returns them. site_first (n_sites
    long, all -1), if given, gets the index of each site's first SITE op; values (one
    word), if given, whether an op waits for, records or computes on a value in memory."""
    if not len(ops):
        return NO_OPS
    first = np.full(len(Check), -1, dtype=np.int64)
    cost = np.zeros(5, dtype=np.float64)
    if site_first is None:
        site_first = np.full(max(n_sites, 1), -1, dtype=np.int64)
    first_bad(ops, n_sites, blob_len, first, cost, site_first)
    if values is not None:
        values[0] = int(cost[4])
    for check in Check:
        i = int(first[check])
        if i < 0:
            continue
        op = ops[i, COL_OP]
        if check == Check.UNKNOWN_OPCODE:
            raise ProgramError(f"op {i}: unknown opcode {op}")
        raise ProgramError(f"op {i} ({Op(op).name} addr={ops[i, COL_ADDR]:#x}): {WHY[check]}")
    return float(cost[0]), float(cost[1]), bool(cost[2]), bool(cost[3])
