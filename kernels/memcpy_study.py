"""The 2016 NVDIMM copy study: 16 KiB copies walking through a 4 MiB persistent buffer.

Two ways to make the copies durable (docs/scenarios.md §4):
- cached memcpy (glibc's memcpy of 16 KiB is `rep movsb` on ERMS CPUs) into the buffer and,
  after every 4 MiB, a CLFLUSH of every line of the whole buffer;
- a non-temporal copy (pmem_memcpy_persist style: movnt of whole lines) and one SFENCE per copy.
The driver builds the whole program as one op array (no Python loop per copy).
"""
import numpy as np

from isa.ops import COL_ADDR, COL_DATA, COL_IMM, COL_OP, COL_SIZE, COL_SRC, N_COLS, Op
from isa.program import Program

COPY_BYTES = 16 * 1024
BUFFER_BYTES = 4 * 1024 * 1024
COPIES_PER_BUFFER = BUFFER_BYTES // COPY_BYTES


def study_program(variant, dst_base, src_base, rounds):
    """`rounds` passes over the 4 MiB buffer (256 copies each) for variant "clflush" or
    "movnt"."""
    copies = rounds * COPIES_PER_BUFFER
    per_round = COPIES_PER_BUFFER + 1 if variant == "clflush" else 2 * COPIES_PER_BUFFER
    ops = np.zeros((rounds * per_round, N_COLS), dtype=np.int64)
    ops[:, COL_DATA] = -1
    row = np.arange(len(ops))
    if variant == "clflush":
        is_copy = row % per_round < COPIES_PER_BUFFER
        flush = ~is_copy
        ops[flush, COL_OP] = Op.FLUSH_RANGE
        ops[flush, COL_ADDR] = dst_base
        ops[flush, COL_SIZE] = BUFFER_BYTES
        ops[flush, COL_IMM] = Op.CLFLUSH
        copy_op = Op.REP_MOVSB
    elif variant == "movnt":
        is_copy = row % 2 == 0
        ops[~is_copy, COL_OP] = Op.SFENCE
        copy_op = Op.NT_COPY
    else:
        raise ValueError(f"unknown variant {variant!r}: clflush or movnt")
    ops[is_copy, COL_OP] = copy_op
    ops[is_copy, COL_ADDR] = dst_base + (np.arange(copies) % COPIES_PER_BUFFER) * COPY_BYTES
    ops[is_copy, COL_SRC] = src_base
    ops[is_copy, COL_SIZE] = COPY_BYTES
    return Program.from_array(ops)
