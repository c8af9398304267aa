"""A compiled writer of op rows, for builders that assemble a program's columns apart from
its order (kernels.dmapool's rounds). It lives in isa, under the compiled-cache digest,
because it freezes the COL_* offsets."""
from numba import njit

from isa.ops import COL_ADDR, COL_DATA, COL_FLAGS, COL_IMM, COL_OP, COL_SIZE, COL_SRC

# The rows of put_rows' `values`, in order.
COLUMNS = (COL_OP, COL_ADDR, COL_SIZE, COL_IMM, COL_FLAGS)


@njit(cache=True, nogil=True)
def put_rows(ops, place, values):
    """ops[place[i]] = op i of `values` (one row per column of COLUMNS), with no source
    operand and no data. `place` must be a permutation of ops' row indices: nothing here
    checks the bounds."""
    for i in range(len(place)):
        r = place[i]
        ops[r, COL_OP] = values[0, i]
        ops[r, COL_ADDR] = values[1, i]
        ops[r, COL_SIZE] = values[2, i]
        ops[r, COL_SRC] = 0
        ops[r, COL_DATA] = -1
        ops[r, COL_IMM] = values[3, i]
        ops[r, COL_FLAGS] = values[4, i]
