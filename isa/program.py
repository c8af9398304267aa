"""Program builder: appends ops into a growing int64 array and a data blob.

Single-op methods are sugar; `loads`, `stores` and `extend` take whole arrays.
Operands are validated here so that the compiled core never sees a malformed op.
"""
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from numba import njit

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
    FLAG_ZERO_TAIL,
    MOVNT_SIZES,
    N_COLS,
    N_OPS,
    Op,
)

_FLUSH_KINDS = (Op.CLFLUSH, Op.CLFLUSHOPT, Op.CLWB)


EFAULT = 14

# The core indexes a load or masks it, never both: an indexed load drops the mask silently.
_INDEXED_AND_MASKED = ("FLAG_INDEXED together with FLAG_MASKED "
                       "(the core does not mask an indexed load)")


@dataclass(frozen=True)
class Ret:
    """What an emitted kernel function returns, known once its Program has run
    (RunResult.ret): the bytes op `op` left undone ("left": copy_*_user, copy_mc_*), or
    0 / -EFAULT ("efault": get_user, put_user). With op=None the value was known when the
    ops were emitted (e.g. access_ok refused the range). `op` indexes the Program the
    function emitted into."""
    op: int | None
    kind: str = "left"
    value: int = 0


class ProgramError(ValueError):
    """An op with operands the ISA does not allow."""


def _as_bytes(data):
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).view(np.uint8).reshape(-1).tobytes()
    return bytes(data)


def remap_sites(ops, names, ids, id_names):
    """Rewrite the site ids of ops' SITE rows (indices into `names`) to ids of the table
    `ids` (name -> id), adding unknown names to it and to the list `id_names`. Returns a
    copy of ops if any row changed, else ops itself."""
    if not names:  # a program without site names has no (valid) SITE rows: skip the scan
        return ops
    rows = np.nonzero(ops[:, COL_OP] == Op.SITE)[0]
    if not len(rows):
        return ops
    ops = ops.copy()
    for i in rows:
        name = names[ops[i, COL_IMM]]
        sid = ids.get(name)
        if sid is None:
            sid = ids[name] = len(id_names)
            id_names.append(name)
        ops[i, COL_IMM] = sid
    return ops


class Program:
    """A sequence of ops plus the bytes that stores carry."""

    def __init__(self, capacity=1024):
        self._ops = np.zeros((max(capacity, 16), N_COLS), dtype=np.int64)
        self._n = 0
        self._blob = bytearray()
        self.site_names = []
        self._site_ids = {}
        self._function_stack = []

    def __len__(self):
        return self._n

    @property
    def ops(self):
        """The op array (a view: rows [0, len))."""
        return self._ops[:self._n]

    @property
    def data(self):
        """The data blob as a writable uint8 array (always the same array type, so that the
        compiled core has one signature whether or not a program carries data)."""
        return np.frombuffer(bytearray(self._blob or b"\0"), dtype=np.uint8)

    def _reserve(self, k):
        need = self._n + k
        if need > len(self._ops):
            new = np.zeros((max(need, 2 * len(self._ops)), N_COLS), dtype=np.int64)
            new[:self._n] = self._ops[:self._n]
            self._ops = new

    def _emit(self, op, addr=0, size=0, src=0, data=-1, imm=0, flags=0):
        self._reserve(1)
        row = self._ops[self._n]
        row[COL_OP] = op
        row[COL_ADDR] = addr
        row[COL_SIZE] = size
        row[COL_SRC] = src
        row[COL_DATA] = data
        row[COL_IMM] = imm
        row[COL_FLAGS] = flags
        self._n += 1
        return self

    def _add_data(self, data):
        raw = _as_bytes(data)
        off = len(self._blob)
        self._blob += raw
        return off, len(raw)

    @staticmethod
    def _check_addr(name, addr):
        if addr < 0:
            raise ProgramError(f"{name}: negative address {addr:#x}")

    def _load(self, name, addr, size, src=0, imm=0, flags=0):
        self._check_addr(name, addr)
        if flags & FLAG_INDEXED and flags & FLAG_MASKED:
            raise ProgramError(f"op {self._n} ({name} at {addr:#x}): {_INDEXED_AND_MASKED}")
        return self._emit(Op.LOAD, addr, size, src=src, imm=imm, flags=flags)

    # -- single ops -------------------------------------------------------------------
    def load(self, addr, size=8, dependent=False, flags=0):
        """Load `size` (1..64) bytes; `dependent`: the address came from the previous load.
        `flags`: FLAG_EXTABLE / FLAG_MCSAFE (a fault or poison goes to a fixup)."""
        if not 1 <= size <= 64:
            raise ProgramError(f"load at {addr:#x}: size {size} not in 1..64")
        return self._load("load", addr, size, flags=flags | (FLAG_DEPENDENT if dependent else 0))

    def load_indexed(self, base, scale, size=8, flags=0):
        """Load at base + v * scale, v = the value the previous op (a LOAD of <= 8 bytes)
        read: the dependent table lookup of a Spectre gadget or a linked-list walk."""
        return self._load("load_indexed", base, size, imm=scale, flags=flags | FLAG_INDEXED)

    def load_masked(self, addr, base, size=8, flags=0):
        """Load base[addr - base] with the offset ANDed with the mask of the last
        index_mask (array_index_nospec): out of bounds it reads base[0]."""
        return self._load("load_masked", addr, size, src=base, flags=flags | FLAG_MASKED)

    def store(self, addr, data=None, size=None, value=0, flags=0):
        """Store `data` (bytes/ndarray, 1..64 bytes), or `size` bytes of little-endian `value`.
        `flags`: FLAG_EXTABLE (a fault goes to a fixup)."""
        n, off, imm = self._written("store", addr, data, size, value)
        return self._emit(Op.STORE, addr, n, data=off, imm=imm, flags=flags)

    def _written(self, name, addr, data, size, value):
        """(bytes, data offset or -1, IMM) of a write of `data` (1..64 bytes), or of `size`
        (default 8) bytes of little-endian `value`."""
        self._check_addr(name, addr)
        if data is not None:
            off, n = self._add_data(data)
            if not 1 <= n <= 64:
                raise ProgramError(f"{name} at {addr:#x}: {n} data bytes not in 1..64")
            return n, off, 0
        size = 8 if size is None else size
        if not 1 <= size <= 64:
            raise ProgramError(f"{name} at {addr:#x}: size {size} not in 1..64")
        return size, -1, int(np.int64(np.uint64(value & (2**64 - 1))))

    def peer_write(self, addr, data=None, size=None, value=0):
        """Another core on the same socket (a guest's vCPU, a producer thread) writes `data`
        (1..64 bytes), or `size` bytes of little-endian `value`, at this point of the program:
        it takes no issue slot here, invalidates this core's copies of the line(s) and leaves
        them modified in that core's cache, so this core's next access to them is a
        cache-to-cache transfer (profile cache.<last level>.peer_hitm_ns). Privilege and
        SMAP do not apply (it is not this core's access); the address must be mapped."""
        n, off, imm = self._written("peer_write", addr, data, size, value)
        return self._emit(Op.PEER_WRITE, addr, n, data=off, imm=imm)

    def peer_read(self, addr, size=8):
        """Another core on the same socket reads `size` bytes at this point of the program
        (no issue slot here): a copy this core modified is forwarded, and its copies become
        shared, so this core's next write to the line waits for the other's copy to be
        invalidated (profile cache.<last level>.peer_hitm_ns). The address must be mapped."""
        self._check_addr("peer_read", addr)
        if not 1 <= size <= 64:
            raise ProgramError(f"peer_read at {addr:#x}: size {size} not in 1..64")
        return self._emit(Op.PEER_READ, addr, size)

    def movnt(self, addr, data=None, size=None, value=0):
        """Non-temporal store of 4/8/16/32/64 bytes, naturally aligned."""
        self._check_addr("movnt", addr)
        if data is not None:
            off, n = self._add_data(data)
        else:
            off, n = -1, 8 if size is None else size
        if n not in MOVNT_SIZES:
            raise ProgramError(f"movnt at {addr:#x}: size {n} not one of {MOVNT_SIZES}")
        if addr % n:
            raise ProgramError(f"movnt at {addr:#x}: not aligned to its size {n}")
        imm = 0 if data is not None else int(np.int64(np.uint64(value & (2**64 - 1))))
        return self._emit(Op.MOVNT, addr, n, data=off, imm=imm)

    def clflush(self, addr):
        self._check_addr("clflush", addr)
        return self._emit(Op.CLFLUSH, addr, 1)

    def clflushopt(self, addr):
        self._check_addr("clflushopt", addr)
        return self._emit(Op.CLFLUSHOPT, addr, 1)

    def clwb(self, addr):
        self._check_addr("clwb", addr)
        return self._emit(Op.CLWB, addr, 1)

    def sfence(self):
        return self._emit(Op.SFENCE)

    def lfence(self):
        return self._emit(Op.LFENCE)

    def mfence(self):
        return self._emit(Op.MFENCE)

    def stac(self):
        return self._emit(Op.STAC)

    def clac(self):
        return self._emit(Op.CLAC)

    def _copy(self, op, dst, src, n, flags):
        self._check_addr(op.name.lower(), dst)
        self._check_addr(op.name.lower(), src)
        if n < 0:
            raise ProgramError(f"{op.name.lower()} {dst:#x} <- {src:#x}: negative length {n}")
        return self._emit(op, dst, n, src=src, flags=flags)

    # Copies take `flags`: FLAG_EXTABLE / FLAG_MCSAFE (a fault or consumed poison ends the
    # copy at that byte; RunResult.left gives the bytes not copied) and FLAG_ZERO_TAIL.
    def rep_movsb(self, dst, src, n, flags=0):
        """`rep movsb`: copy n bytes forward from src to dst (fast strings)."""
        return self._copy(Op.REP_MOVSB, dst, src, n, flags)

    def nt_copy(self, dst, src, n, flags=0):
        """Non-temporal copy: cached 8-byte loads of src, MOVNT of dst through WC buffers."""
        return self._copy(Op.NT_COPY, dst, src, n, flags)

    def careful_copy(self, dst, src, n, flags=0):
        """8-byte load/store loop (copy_mc_fragile style), byte ops for the edges."""
        return self._copy(Op.CAREFUL_COPY, dst, src, n, flags)

    def flush_range(self, addr, n, kind=Op.CLWB):
        """One CLFLUSH/CLFLUSHOPT/CLWB per 64-byte line overlapping [addr, addr+n)."""
        self._check_addr("flush_range", addr)
        if Op(kind) not in _FLUSH_KINDS:
            raise ProgramError(f"flush_range: kind {kind!r} is not CLFLUSH, CLFLUSHOPT or CLWB")
        if n < 0:
            raise ProgramError(f"flush_range at {addr:#x}: negative length {n}")
        return self._emit(Op.FLUSH_RANGE, addr, n, imm=int(kind))

    def work(self, cycles, dependent=False):
        """`cycles` of non-memory work (ALU, branches). `dependent`: it works on the
        previous load's data (or a copy's), so it starts once that data is there."""
        if cycles < 0:
            raise ProgramError(f"work: negative cycles {cycles}")
        return self._emit(Op.WORK, imm=int(cycles), flags=FLAG_DEPENDENT if dependent else 0)

    def branch(self, index, limit, body, predict_in=True, dependent=False):
        """A bounds check `if (index < limit)` (unsigned) guarding the next `body` ops. The
        predictor guesses `predict_in`; a wrong guess of "in bounds" runs the body
        transiently until the branch resolves (its operands ready: `dependent` = one of them
        is the previous load's data), an LFENCE, or a reorder buffer's worth of uops."""
        if index < 0 or limit < 0:
            raise ProgramError(f"branch: negative index {index} or limit {limit}")
        flags = (FLAG_PREDICT_IN if predict_in else 0) | (FLAG_DEPENDENT if dependent else 0)
        return self._emit(Op.BRANCH, index, limit, imm=body, flags=flags)

    @contextmanager
    def guarded(self, index, limit, predict_in=True, dependent=False):
        """`with p.guarded(i, n): ...` emits a branch whose body is the ops emitted inside."""
        at = self._n
        self.branch(index, limit, 0, predict_in, dependent)
        yield self
        self._ops[at, COL_IMM] = self._n - at - 1

    def index_mask(self, index, limit, dependent=False):
        """array_index_nospec(index, limit): cmp + sbb build an all-ones mask when
        index < limit, else 0; later load_masked ops use it (a data dependency, no fence)."""
        if index < 0 or limit < 0:
            raise ProgramError(f"index_mask: negative index {index} or limit {limit}")
        return self._emit(Op.INDEX_MASK, index, limit,
                          flags=FLAG_DEPENDENT if dependent else 0)

    def site(self, name):
        """Attribute the following ops to the function `name` in the profiler."""
        sid = self._site_ids.get(name)
        if sid is None:
            sid = self._site_ids[name] = len(self.site_names)
            self.site_names.append(name)
        return self._emit(Op.SITE, imm=sid)

    @contextmanager
    def function(self, name):
        """Attribute the ops emitted inside the block to site `name` (a kernel function), then
        to the enclosing function's site again ("(none)" outside every function)."""
        self._function_stack.append(name)
        self.site(name)
        try:
            yield self
        finally:
            self._function_stack.pop()
            self.site(self._function_stack[-1] if self._function_stack else "(none)")

    # -- batches ----------------------------------------------------------------------
    def _batch(self, op, addrs, size, flags=0):
        addrs = np.asarray(addrs, dtype=np.int64).reshape(-1)
        if len(addrs) and addrs.min() < 0:
            raise ProgramError(f"{op.name.lower()}: negative address in batch")
        if not 1 <= size <= 64:
            raise ProgramError(f"{op.name.lower()}: size {size} not in 1..64")
        k = len(addrs)
        self._reserve(k)
        rows = self._ops[self._n:self._n + k]
        rows[:] = 0
        rows[:, COL_OP] = op
        rows[:, COL_ADDR] = addrs
        rows[:, COL_SIZE] = size
        rows[:, COL_DATA] = -1
        rows[:, COL_FLAGS] = flags
        self._n += k
        return self

    def loads(self, addrs, size=8, dependent=False):
        """One LOAD of `size` bytes per address."""
        return self._batch(Op.LOAD, addrs, size, FLAG_DEPENDENT if dependent else 0)

    def stores(self, addrs, size=8):
        """One STORE of `size` zero bytes per address (trace replay: no data)."""
        return self._batch(Op.STORE, addrs, size)

    def extend(self, other):
        """Append another Program (its data and site names are remapped)."""
        k = len(other)
        self._reserve(k)
        rows = other.ops.copy()
        has_data = rows[:, COL_DATA] >= 0
        rows[has_data, COL_DATA] += len(self._blob)
        self._blob += other._blob
        self._ops[self._n:self._n + k] = remap_sites(rows, other.site_names, self._site_ids,
                                                     self.site_names)
        self._n += k
        return self

    @classmethod
    def from_array(cls, ops, data=b"", site_names=()):
        """Build from a raw op array (e.g. loaded from .npy); validates every row."""
        ops = np.asarray(ops)
        if ops.ndim != 2 or ops.shape[1] != N_COLS:
            raise ProgramError(f"op array must have shape (n, {N_COLS}), got {ops.shape}")
        p = cls(capacity=len(ops))
        p._ops[:len(ops)] = ops.astype(np.int64)
        p._n = len(ops)
        p._blob = bytearray(data)
        p.site_names = list(site_names)
        p._site_ids = {n: i for i, n in enumerate(p.site_names)}
        p.validate()
        return p

    def validate(self):
        """Raise ProgramError naming the first op whose operands the core cannot execute."""
        ops = self.ops
        if not len(ops):
            return
        first = np.full(len(_CHECKS), -1, dtype=np.int64)
        _first_bad(ops, len(self.site_names), len(self._blob), first)
        for k, why in enumerate(_CHECKS):
            i = int(first[k])
            if i < 0:
                continue
            op = ops[i, COL_OP]
            if k == 0:
                raise ProgramError(f"op {i}: unknown opcode {op}")
            raise ProgramError(f"op {i} ({Op(op).name} addr={ops[i, COL_ADDR]:#x}): {why}")


# What validate() checks, in the order it reports them; _first_bad finds, per check, the
# first op that fails it (one compiled pass instead of a dozen numpy passes over columns).
_CHECKS = (
    "unknown opcode",
    "size not in 1..64",
    f"movnt size not in {MOVNT_SIZES}",
    "movnt not aligned to its size",
    "negative address",
    "negative source address",
    "negative length",
    "bad flush kind",
    "negative work cycles",
    "site id without a name",
    "data beyond the data blob",
    "range beyond the 52-bit physical address space",
    "flag not allowed on this op",
    "indexed load: the previous op is not a LOAD of at most 8 bytes, or scale not in 0..4096",
    "masked load: base (src) negative or above the address",
    "branch body beyond the end of the program",
    "negative index or limit",
    _INDEXED_AND_MASKED,
)
# Flags each op may carry (others are rejected: the core would ignore them silently).
_ALLOWED_FLAGS = {
    Op.LOAD: FLAG_DEPENDENT | FLAG_EXTABLE | FLAG_MCSAFE | FLAG_INDEXED | FLAG_MASKED,
    Op.STORE: FLAG_EXTABLE,
    Op.MOVNT: FLAG_EXTABLE,
    Op.REP_MOVSB: FLAG_DEPENDENT | FLAG_EXTABLE | FLAG_MCSAFE | FLAG_ZERO_TAIL,
    Op.NT_COPY: FLAG_DEPENDENT | FLAG_EXTABLE | FLAG_MCSAFE | FLAG_ZERO_TAIL,
    Op.CAREFUL_COPY: FLAG_DEPENDENT | FLAG_EXTABLE | FLAG_MCSAFE | FLAG_ZERO_TAIL,
    Op.WORK: FLAG_DEPENDENT,
    Op.BRANCH: FLAG_DEPENDENT | FLAG_PREDICT_IN,
    Op.INDEX_MASK: FLAG_DEPENDENT,
}
ALLOWED = np.array([_ALLOWED_FLAGS.get(Op(k), 0) for k in range(N_OPS)], dtype=np.int64)
MAX_SCALE = 4096
PHYS_LIMIT = 1 << 52   # x86-64 MAXPHYADDR at most 52 bits: larger ranges cannot be memory
_LOAD, _STORE, _MOVNT = int(Op.LOAD), int(Op.STORE), int(Op.MOVNT)
_PEER, _PEER_R = int(Op.PEER_WRITE), int(Op.PEER_READ)
_REP, _NT, _CAREFUL = int(Op.REP_MOVSB), int(Op.NT_COPY), int(Op.CAREFUL_COPY)
_FLUSH_RANGE, _WORK, _SITE = int(Op.FLUSH_RANGE), int(Op.WORK), int(Op.SITE)
_CLFLUSH, _CLFLUSHOPT, _CLWB = int(Op.CLFLUSH), int(Op.CLFLUSHOPT), int(Op.CLWB)
_BRANCH, _MASK = int(Op.BRANCH), int(Op.INDEX_MASK)


@njit(cache=True, nogil=True)
def _first_bad(ops, n_sites, blob_len, first):
    """first[k] = index of the first op failing check k of _CHECKS (left -1 if none)."""
    for i in range(ops.shape[0]):
        op = ops[i, COL_OP]
        if op < 0 or op >= N_OPS:
            if first[0] < 0:
                first[0] = i
            continue
        size = ops[i, COL_SIZE]
        addr = ops[i, COL_ADDR]
        if op == _LOAD or op == _STORE or op == _MOVNT or op == _PEER or op == _PEER_R:
            if (size < 1 or size > 64) and first[1] < 0:
                first[1] = i
            if op == _MOVNT:
                if size != 4 and size != 8 and size != 16 and size != 32 and size != 64 \
                        and first[2] < 0:
                    first[2] = i
                if addr % max(size, 1) != 0 and first[3] < 0:
                    first[3] = i
            if op != _LOAD and ops[i, COL_DATA] >= 0 and \
                    ops[i, COL_DATA] + size > blob_len and first[10] < 0:
                first[10] = i
        flags = ops[i, COL_FLAGS]
        if flags & ~ALLOWED[op] and first[12] < 0:
            first[12] = i
        if flags & FLAG_INDEXED and first[13] < 0 and (
                i == 0 or ops[i - 1, COL_OP] != _LOAD or ops[i - 1, COL_SIZE] > 8
                or ops[i, COL_IMM] < 0 or ops[i, COL_IMM] > MAX_SCALE):
            first[13] = i
        if flags & FLAG_MASKED and not 0 <= ops[i, COL_SRC] <= addr and first[14] < 0:
            first[14] = i
        if flags & FLAG_INDEXED and flags & FLAG_MASKED and first[17] < 0:
            first[17] = i
        if op == _BRANCH or op == _MASK:
            if (addr < 0 or size < 0) and first[16] < 0:
                first[16] = i
            if op == _BRANCH and (ops[i, COL_IMM] < 0 or ops[i, COL_IMM] >= ops.shape[0] - i) \
                    and first[15] < 0:
                first[15] = i
            continue
        if op != _WORK and op != _SITE and addr < 0 and first[4] < 0:
            first[4] = i
        copy = op == _REP or op == _NT or op == _CAREFUL
        if copy and ops[i, COL_SRC] < 0 and first[5] < 0:
            first[5] = i
        if (copy or op == _FLUSH_RANGE) and size < 0 and first[6] < 0:
            first[6] = i
        imm = ops[i, COL_IMM]
        if op == _FLUSH_RANGE and imm != _CLFLUSH and imm != _CLFLUSHOPT and imm != _CLWB \
                and first[7] < 0:
            first[7] = i
        if op == _WORK and imm < 0 and first[8] < 0:
            first[8] = i
        if op == _SITE and (imm < 0 or imm >= n_sites) and first[9] < 0:
            first[9] = i
        if op != _WORK and op != _SITE and first[11] < 0:
            n = max(size, 0) if not flags & FLAG_INDEXED else 1
            if addr > PHYS_LIMIT - min(n, PHYS_LIMIT) or n > PHYS_LIMIT or \
                    (copy and ops[i, COL_SRC] > PHYS_LIMIT - min(n, PHYS_LIMIT)):
                first[11] = i
