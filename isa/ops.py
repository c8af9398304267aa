"""Opcodes, the operand layout of a Program's op array, and OP_SPEC: what each op is.

A Program is an int64 array of shape (n, N_COLS); each row is one op. The compiled core
dispatches on the OP column; every opcode has its own handler. OP_SPEC gives one row of
properties per opcode; the validator (isa._validate), the core (emu) and the CLI read
them through the int64 arrays derived below, which compiled code freezes as constants.
"""
from enum import IntEnum
from typing import NamedTuple

import numpy as np


class Op(IntEnum):
    LOAD = 0          # addr, size 1..64, src = ip; FLAG_DEPENDENT: address came from the
    #                   previous load
    STORE = 1         # addr, size 1..64, src = ip; data from DATA (blob offset) or the IMM bytes
    MOVNT = 2         # addr, size 4/8/16/32/64; non-temporal store through a WC buffer
    CLFLUSH = 3       # addr
    CLFLUSHOPT = 4    # addr
    CLWB = 5          # addr
    SFENCE = 6
    LFENCE = 7
    MFENCE = 8
    STAC = 9
    CLAC = 10
    REP_MOVSB = 11    # addr=dst, src, size=len
    NT_COPY = 12      # addr=dst, src, size=len; 8-byte loads + MOVNT of whole lines
    CAREFUL_COPY = 13  # addr=dst, src, size=len; 8-byte load/store loop (copy_mc_fragile)
    FLUSH_RANGE = 14  # addr, size=len, imm=Op.CLFLUSH/CLFLUSHOPT/CLWB
    WORK = 15         # imm = cycles of non-memory work
    SITE = 16         # imm = site id; attributes the following ops to that site
    BRANCH = 17       # addr=index, size=limit, imm=body ops run only if index < limit
    #                   (unsigned; either operand may be the previous load's value: FLAG_VALUE_*),
    #                   src = ip (0: statically predicted by FLAG_PREDICT_IN)
    INDEX_MASK = 18   # addr=index, size=limit: array_index_nospec's cmp/sbb mask
    PEER_WRITE = 19   # addr, size 1..64, data as STORE: another core on the socket writes
    #                   (our copies invalidated; our next access is a cache-to-cache transfer)
    PEER_READ = 20    # addr, size 1..64: another core reads (our copies become shared; our
    #                   next write waits for its copy to be invalidated)
    LOCK_RMW = 21     # addr, size 1..64, data as STORE: a LOCK-prefixed read-modify-write
    #                   (LOCK ADD/XCHG/CMPXCHG) writing those bytes; a full barrier. Its kind
    #                   by flag: none (XCHG: the bytes written), FLAG_RMW_ADD (LOCK XADD: IMM
    #                   added), FLAG_RMW_CMPXCHG (LOCK CMPXCHG: IMM written if the old value
    #                   is SRC; with FLAG_SPIN retried, a PAUSE apart, until it is); sizes 1, 2,
    #                   4, 8 with a kind or FLAG_RECORD (the old value recorded)
    WAIT = 22         # addr, size 1/2/4/8, src = mask, imm = value: a PAUSE loop that loads
    #                   the bytes until (bytes & mask) == (value & mask) (smp_cond_load_acquire);
    #                   FLAG_AT_LEAST: until they are at or past IMM as a wrapping index;
    #                   FLAG_NOT_EQUAL: until (bytes & mask) != (value & mask)


N_OPS = len(Op)

# Columns of the op array.
COL_OP = 0
COL_ADDR = 1
COL_SIZE = 2
COL_SRC = 3    # a copy's source; a LOAD's, STORE's or BRANCH's ip (P_IP), but a FLAG_MASKED
#                load's base
COL_DATA = 4   # offset into the Program's data blob, or -1 (use IMM's little-endian bytes)
COL_IMM = 5
COL_FLAGS = 6
N_COLS = 7

FLAG_DEPENDENT = 1      # LOAD/BRANCH/INDEX_MASK/copies/WORK: an operand is the previous
#                         load's data (a copy's loads count as loads)
FLAG_EXTABLE = 2        # a page fault (unmapped, SMAP, privilege) goes to a fixup: the op
#                         stops at the first faulting byte, the run goes on
FLAG_MCSAFE = 4         # consumed poison (#MC) goes to a fixup likewise (copy_mc_*)
FLAG_INDEXED = 8        # LOAD at addr + (previous load's value) * imm
FLAG_MASKED = 16        # LOAD at src + ((addr - src) & mask of the last INDEX_MASK); with
#                         FLAG_INDEXED at addr + (value & mask) * imm (src: 0, no ip)
FLAG_PREDICT_IN = 32    # BRANCH without an ip predicted "index < limit" (the body runs)
FLAG_ZERO_TAIL = 64     # copy: on a fault, zero the destination's uncopied tail
FLAG_VALUE_INDEX = 128  # BRANCH/INDEX_MASK: the index is the previous load's value, not ADDR
FLAG_VALUE_LIMIT = 256  # BRANCH/INDEX_MASK: the limit is the previous load's value, not SIZE
FLAG_RECORD = 512       # LOAD (at most 8 bytes), LOCK_RMW, WAIT: the value it read (a locked
#                         op's old value) is recorded: RunResult.values, and the value a
#                         FLAG_VALUE_DATA store adds to
FLAG_VALUE_DATA = 1024  # STORE of at most 8 bytes: it writes IMM plus the last recorded value
#                         (a non-atomic increment: `ld r, [x]; st [x], r + 1`)
FLAG_RMW_ADD = 2048     # LOCK_RMW: LOCK XADD of IMM
FLAG_RMW_CMPXCHG = 4096  # LOCK_RMW: LOCK CMPXCHG, expected SRC, new IMM
FLAG_SPIN = 8192        # LOCK_RMW with FLAG_RMW_CMPXCHG: retried, a PAUSE apart, until it succeeds
FLAG_AT_LEAST = 16384   # WAIT of 1, 2 or 4 bytes, the whole value: until it is at or past IMM
#                         as a free-running index wrapping at its size ((v - IMM) mod 2^bits
#                         below half of it: virtio's ring indices, jiffies' time_after_eq)
FLAG_NOT_EQUAL = 32768  # WAIT: until the bytes ANDed with the mask differ from IMM ANDed with
#                         it (smp_cond_load_acquire(p, VAL): an MCS node's `locked` or `next`)
#: The flags of an op that reads the value a LOAD before it loaded (the core reads a load's
#: value only when the op after it has one of them)
VALUE_USE = FLAG_INDEXED | FLAG_VALUE_INDEX | FLAG_VALUE_LIMIT
#: A LOCK_RMW that computes on the old value (functional memory read, then written)
RMW_KINDS = FLAG_RMW_ADD | FLAG_RMW_CMPXCHG
#: Sizes of a value an op compares, adds or records (naturally aligned: one atomic access)
VALUE_SIZES = (1, 2, 4, 8)

MOVNT_SIZES = (4, 8, 16, 32, 64)
LINE_BYTES = 64
PHYS_LIMIT = 1 << 52   # x86-64 MAXPHYADDR at most 52 bits: larger ranges cannot be memory
#: The most cycles one WORK op may declare (about 6 minutes at 3 GHz): far beyond any
#: declared software cost, and small enough that sums of them stay far from overflowing
#: the core's int64 clock (Machine.run bounds a whole run's cycles before it starts).
MAX_WORK_CYCLES = 1 << 40


class AddrKind(IntEnum):
    """What COL_ADDR holds."""
    NONE = 0
    ADDRESS = 1   # a byte address (a copy's destination)
    INDEX = 2     # an index compared with the limit in COL_SIZE: no address (with
    #               FLAG_VALUE_INDEX unused: the index is the previous load's value)


class SizeRule(IntEnum):
    """What COL_SIZE holds, and the values allowed."""
    NONE = 0
    UP_TO_LINE = 1   # 1..64 bytes (they may cross into the next line)
    MOVNT = 2        # one of MOVNT_SIZES, the address aligned to it
    LENGTH = 3       # any length >= 0
    LIMIT = 4        # the bound (>= 0) of the index in COL_ADDR (FLAG_VALUE_LIMIT: unused)
    VALUE = 5        # one of VALUE_SIZES, the address aligned to it


class ImmKind(IntEnum):
    """What COL_IMM holds."""
    NONE = 0
    DATA = 1         # the bytes written (little-endian) when COL_DATA is -1
    SCALE = 2        # FLAG_INDEXED: the scale of the index, 0..MAX_SCALE
    FLUSH_KIND = 3   # an op with P_FLUSH, repeated per line
    CYCLES = 4       # cycles of work, >= 0
    SITE = 5         # an index into the Program's site names
    BODY = 6         # how many of the following ops the op guards, all inside the program
    VALUE = 7        # a value compared with memory's (WAIT)


class RangeKind(IntEnum):
    """The bytes an op touches (emu._checks.op_ranges): what is checked for faults and
    poison, made present, and remapped with a trace."""
    NONE = 0
    BYTES = 1      # [addr, addr+size)
    LINE = 2       # the 64-byte line holding addr
    LINES = 3      # the lines overlapping [addr, addr+size); none when size is 0
    DST_SRC = 4    # destination [addr, addr+size) and source [src, src+size)


# Properties, the bits of OpSpec.props.
P_WRITES = 1       # writes functional memory (its pages must be present)
P_POISON = 2       # consumes poison: it loads its bytes (a copy, its source's)
P_ENDS_WINDOW = 4  # not run down a mispredicted path: it ends the transient window (a
#                    BRANCH does not: the path follows its guess, emu._speculation.transient)
P_ROB = 8          # takes a reorder-buffer entry (waits at the ROB gate)
P_BULK = 16        # many accesses in one op: a caught fault stops it at that byte
P_PEER = 32        # another core's access: no issue slot, checked only for being mapped
P_FLUSH = 64       # writes its line back and/or evicts it: a kind FLUSH_RANGE repeats
P_IP = 128         # COL_SRC is the address of its instruction, `ip` (>= 0; 0: none), which
#                    the L1 IP-stride prefetcher trains on (a load's; memmodel.prefetch.ip_stride),
#                    the branch predictor indexes its counters by (a branch's) and a trace
#                    records; a FLAG_MASKED load's COL_SRC is its base: no ip
P_SB_EMPTY = 256   # with several cores, its core's pending stores are in functional memory
#                    before it runs (x86-TSO: a full barrier, a locked op, or an op that moves
#                    bytes in bulk or not through the store buffer; a buffer may drain at any
#                    time, so this is always a legal step)


class OpSpec(NamedTuple):
    props: int                       # P_* bits
    addr: AddrKind = AddrKind.NONE
    size: SizeRule = SizeRule.NONE
    imm: ImmKind = ImmKind.NONE
    range: RangeKind = RangeKind.NONE
    flags: int = 0                   # FLAG_* the op may carry (the core ignores others)


_AT = {"addr": AddrKind.ADDRESS, "range": RangeKind.BYTES}   # an access to [addr, addr+size)
_COPY = {"addr": AddrKind.ADDRESS, "size": SizeRule.LENGTH, "range": RangeKind.DST_SRC,
         "flags": FLAG_DEPENDENT | FLAG_EXTABLE | FLAG_MCSAFE | FLAG_ZERO_TAIL}
_COPY_PROPS = P_WRITES | P_POISON | P_ENDS_WINDOW | P_ROB | P_BULK | P_SB_EMPTY
_LINE = {"addr": AddrKind.ADDRESS, "range": RangeKind.LINE}
_GUARD = {"addr": AddrKind.INDEX, "size": SizeRule.LIMIT}
_ON_VALUE = FLAG_DEPENDENT | FLAG_VALUE_INDEX | FLAG_VALUE_LIMIT

OP_SPEC = {
    Op.LOAD: OpSpec(P_POISON | P_ROB | P_IP, **_AT, size=SizeRule.UP_TO_LINE, imm=ImmKind.SCALE,
                    flags=FLAG_DEPENDENT | FLAG_EXTABLE | FLAG_MCSAFE | FLAG_INDEXED
                    | FLAG_MASKED | FLAG_RECORD),
    Op.STORE: OpSpec(P_WRITES | P_ROB | P_IP, **_AT, size=SizeRule.UP_TO_LINE, imm=ImmKind.DATA,
                     flags=FLAG_EXTABLE | FLAG_VALUE_DATA),
    Op.MOVNT: OpSpec(P_WRITES | P_ROB | P_SB_EMPTY, **_AT, size=SizeRule.MOVNT,
                     imm=ImmKind.DATA, flags=FLAG_EXTABLE),
    Op.CLFLUSH: OpSpec(P_FLUSH | P_ENDS_WINDOW | P_ROB | P_SB_EMPTY, **_LINE),
    Op.CLFLUSHOPT: OpSpec(P_FLUSH | P_ENDS_WINDOW | P_ROB | P_SB_EMPTY, **_LINE),
    Op.CLWB: OpSpec(P_FLUSH | P_ENDS_WINDOW | P_ROB | P_SB_EMPTY, **_LINE),
    Op.SFENCE: OpSpec(P_ENDS_WINDOW | P_ROB),
    Op.LFENCE: OpSpec(P_ENDS_WINDOW | P_ROB),
    Op.MFENCE: OpSpec(P_ENDS_WINDOW | P_ROB | P_SB_EMPTY),
    Op.STAC: OpSpec(P_ENDS_WINDOW | P_ROB),
    Op.CLAC: OpSpec(P_ENDS_WINDOW | P_ROB),
    Op.REP_MOVSB: OpSpec(_COPY_PROPS, **_COPY),
    Op.NT_COPY: OpSpec(_COPY_PROPS, **_COPY),
    Op.CAREFUL_COPY: OpSpec(_COPY_PROPS, **_COPY),
    Op.FLUSH_RANGE: OpSpec(P_ENDS_WINDOW | P_ROB | P_BULK | P_SB_EMPTY, addr=AddrKind.ADDRESS,
                           size=SizeRule.LENGTH, imm=ImmKind.FLUSH_KIND,
                           range=RangeKind.LINES),
    Op.WORK: OpSpec(P_ROB, imm=ImmKind.CYCLES, flags=FLAG_DEPENDENT),
    Op.SITE: OpSpec(0, imm=ImmKind.SITE),
    Op.BRANCH: OpSpec(P_ROB | P_IP, **_GUARD, imm=ImmKind.BODY,
                      flags=_ON_VALUE | FLAG_PREDICT_IN),
    Op.INDEX_MASK: OpSpec(P_ROB, **_GUARD, flags=_ON_VALUE),
    Op.PEER_WRITE: OpSpec(P_WRITES | P_ENDS_WINDOW | P_PEER | P_SB_EMPTY, **_AT,
                          size=SizeRule.UP_TO_LINE, imm=ImmKind.DATA),
    Op.PEER_READ: OpSpec(P_ENDS_WINDOW | P_PEER | P_SB_EMPTY, **_AT, size=SizeRule.UP_TO_LINE),
    Op.LOCK_RMW: OpSpec(P_WRITES | P_POISON | P_ENDS_WINDOW | P_ROB | P_SB_EMPTY, **_AT,
                        size=SizeRule.UP_TO_LINE, imm=ImmKind.DATA,
                        flags=FLAG_EXTABLE | FLAG_MCSAFE | FLAG_RECORD | RMW_KINDS | FLAG_SPIN),
    Op.WAIT: OpSpec(P_POISON | P_ENDS_WINDOW | P_ROB, **_AT, size=SizeRule.VALUE,
                    imm=ImmKind.VALUE, flags=FLAG_RECORD | FLAG_AT_LEAST | FLAG_NOT_EQUAL),
}

_missing = [op.name for op in Op if op not in OP_SPEC]
if _missing:   # an op without a row would get another op's properties, or none, silently
    raise ImportError(f"isa.ops: no OP_SPEC row for Op.{', Op.'.join(_missing)}")


def _column(get):
    return np.array([get(OP_SPEC[op]) for op in Op], dtype=np.int64)


def _has(prop):
    return _column(lambda s: 1 if s.props & prop else 0)


# One int64 per opcode each, read by compiled code as frozen constants.
ADDR_KIND = _column(lambda s: s.addr)
SIZE_RULE = _column(lambda s: s.size)
IMM_KIND = _column(lambda s: s.imm)
RANGE_KIND = _column(lambda s: s.range)
ALLOWED_FLAGS = _column(lambda s: s.flags)
WRITES_MEMORY = _has(P_WRITES)
CONSUMES_POISON = _has(P_POISON)
ENDS_WINDOW = _has(P_ENDS_WINDOW)
HOLDS_ROB = _has(P_ROB)
BULK = _has(P_BULK)
PEER = _has(P_PEER)
FLUSH = _has(P_FLUSH)
HAS_IP = _has(P_IP)
SB_EMPTY = _has(P_SB_EMPTY)

PEER_OPS = tuple(op for op in Op if OP_SPEC[op].props & P_PEER)
FLUSH_KINDS = tuple(op for op in Op if OP_SPEC[op].props & P_FLUSH)
