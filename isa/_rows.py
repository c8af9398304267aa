"""A compiled writer of op rows, for builders that assemble a program's columns apart from
its order (kernels.dmapool's rounds). It lives in isa, under the compiled-cache digest,
because it freezes the COL_* offsets."""
from numba import njit

from isa.ops import COL_ADDR, COL_DATA, COL_FLAGS, COL_IMM, COL_OP, COL_SIZE, COL_SRC


@njit(cache=True, nogil=True)
def put_rows(ops, place, op, addr, size, src, imm, flags):
    """ops[place[i]] = op i of the columns op, addr, size, src, imm and flags, with no
    data; a column of one value is that value in every row. `place` must
    hold indices of ops' rows and each column one value or len(place): nothing here checks
    the bounds."""
    for i in range(len(place)):
        r = place[i]
        ops[r, COL_OP] = op[i if len(op) > 1 else 0]
        ops[r, COL_ADDR] = addr[i if len(addr) > 1 else 0]
        ops[r, COL_SIZE] = size[i if len(size) > 1 else 0]
        ops[r, COL_SRC] = src[i if len(src) > 1 else 0]
        ops[r, COL_DATA] = -1
        ops[r, COL_IMM] = imm[i if len(imm) > 1 else 0]
        ops[r, COL_FLAGS] = flags[i if len(flags) > 1 else 0]
