"""Opcodes and the operand layout of a Program's op array.

A Program is an int64 array of shape (n, N_COLS); each row is one op. The
compiled core dispatches on the OP column; every opcode has its own handler.
"""
from enum import IntEnum


class Op(IntEnum):
    LOAD = 0          # addr, size 1..64; FLAG_DEPENDENT: address came from the previous load
    STORE = 1         # addr, size 1..64; data from DATA (blob offset) or the IMM bytes
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
    INDEX_MASK = 18   # addr=index, size=limit: array_index_nospec's cmp/sbb mask
    PEER_WRITE = 19   # addr, size 1..64, data as STORE: another core on the socket writes
    #                   (our copies invalidated; our next access is a cache-to-cache transfer)
    PEER_READ = 20    # addr, size 1..64: another core reads (our copies become shared; our
    #                   next write waits for its copy to be invalidated)


N_OPS = len(Op)

# Columns of the op array.
COL_OP = 0
COL_ADDR = 1
COL_SIZE = 2
COL_SRC = 3
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
FLAG_MASKED = 16        # LOAD at src + ((addr - src) & mask of the last INDEX_MASK); not
#                         with FLAG_INDEXED
FLAG_PREDICT_IN = 32    # BRANCH predicted "index < limit" (the body runs)
FLAG_ZERO_TAIL = 64     # copy: on a fault, zero the destination's uncopied tail

MOVNT_SIZES = (4, 8, 16, 32, 64)
LINE_BYTES = 64
