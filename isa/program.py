"""Program builder: appends ops into a growing int64 array and a data blob.

Single-op methods are sugar; `loads`, `stores` and `extend` take whole arrays.
Operands are validated here so that the compiled core never sees a malformed op.
"""
import numpy as np

from isa.ops import (COL_ADDR, COL_DATA, COL_FLAGS, COL_IMM, COL_OP, COL_SIZE, COL_SRC,
                     FLAG_DEPENDENT, MOVNT_SIZES, N_COLS, N_OPS, Op)

_FLUSH_KINDS = (Op.CLFLUSH, Op.CLFLUSHOPT, Op.CLWB)


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

    def __len__(self):
        return self._n

    @property
    def ops(self):
        """The op array (a view: rows [0, len))."""
        return self._ops[:self._n]

    @property
    def data(self):
        """The data blob as a uint8 array."""
        return np.frombuffer(bytes(self._blob), dtype=np.uint8) if self._blob else np.zeros(1, np.uint8)

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

    # -- single ops -------------------------------------------------------------------
    def load(self, addr, size=8, dependent=False):
        """Load `size` (1..64) bytes; `dependent`: the address came from the previous load."""
        self._check_addr("load", addr)
        if not 1 <= size <= 64:
            raise ProgramError(f"load at {addr:#x}: size {size} not in 1..64")
        return self._emit(Op.LOAD, addr, size, flags=FLAG_DEPENDENT if dependent else 0)

    def store(self, addr, data=None, size=None, value=0):
        """Store `data` (bytes/ndarray, 1..64 bytes), or `size` bytes of little-endian `value`."""
        self._check_addr("store", addr)
        if data is not None:
            off, n = self._add_data(data)
            if not 1 <= n <= 64:
                raise ProgramError(f"store at {addr:#x}: {n} data bytes not in 1..64")
            return self._emit(Op.STORE, addr, n, data=off)
        size = 8 if size is None else size
        if not 1 <= size <= 64:
            raise ProgramError(f"store at {addr:#x}: size {size} not in 1..64")
        return self._emit(Op.STORE, addr, size, imm=int(np.int64(np.uint64(value & (2**64 - 1)))))

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

    def _copy(self, op, dst, src, n):
        self._check_addr(op.name.lower(), dst)
        self._check_addr(op.name.lower(), src)
        if n < 0:
            raise ProgramError(f"{op.name.lower()} {dst:#x} <- {src:#x}: negative length {n}")
        return self._emit(op, dst, n, src=src)

    def rep_movsb(self, dst, src, n):
        """`rep movsb`: copy n bytes forward from src to dst (fast strings)."""
        return self._copy(Op.REP_MOVSB, dst, src, n)

    def nt_copy(self, dst, src, n):
        """Non-temporal copy: cached 8-byte loads of src, MOVNT of dst through WC buffers."""
        return self._copy(Op.NT_COPY, dst, src, n)

    def careful_copy(self, dst, src, n):
        """8-byte load/store loop (copy_mc_fragile style), byte ops for the edges."""
        return self._copy(Op.CAREFUL_COPY, dst, src, n)

    def flush_range(self, addr, n, kind=Op.CLWB):
        """One CLFLUSH/CLFLUSHOPT/CLWB per 64-byte line overlapping [addr, addr+n)."""
        self._check_addr("flush_range", addr)
        if Op(kind) not in _FLUSH_KINDS:
            raise ProgramError(f"flush_range: kind {kind!r} is not CLFLUSH, CLFLUSHOPT or CLWB")
        if n < 0:
            raise ProgramError(f"flush_range at {addr:#x}: negative length {n}")
        return self._emit(Op.FLUSH_RANGE, addr, n, imm=int(kind))

    def work(self, cycles):
        """`cycles` of non-memory work (ALU, branches)."""
        if cycles < 0:
            raise ProgramError(f"work: negative cycles {cycles}")
        return self._emit(Op.WORK, imm=int(cycles))

    def site(self, name):
        """Attribute the following ops to the function `name` in the profiler."""
        sid = self._site_ids.get(name)
        if sid is None:
            sid = self._site_ids[name] = len(self.site_names)
            self.site_names.append(name)
        return self._emit(Op.SITE, imm=sid)

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
        op = ops[:, COL_OP]
        bad = (op < 0) | (op >= N_OPS)
        if bad.any():
            i = int(np.argmax(bad))
            raise ProgramError(f"op {i}: unknown opcode {op[i]}")
        size = ops[:, COL_SIZE]
        addr = ops[:, COL_ADDR]
        data = ops[:, COL_DATA]
        src = ops[:, COL_SRC]
        imm = ops[:, COL_IMM]
        memop = (op == Op.LOAD) | (op == Op.STORE) | (op == Op.MOVNT)
        copy = (op == Op.REP_MOVSB) | (op == Op.NT_COPY) | (op == Op.CAREFUL_COPY)
        checks = [
            (memop & ((size < 1) | (size > 64)), "size not in 1..64"),
            ((op == Op.MOVNT) & ~np.isin(size, MOVNT_SIZES), f"movnt size not in {MOVNT_SIZES}"),
            ((op == Op.MOVNT) & (np.mod(addr, np.maximum(size, 1)) != 0), "movnt not aligned to its size"),
            ((op != Op.WORK) & (op != Op.SITE) & (addr < 0), "negative address"),
            (copy & (src < 0), "negative source address"),
            ((copy | (op == Op.FLUSH_RANGE)) & (size < 0), "negative length"),
            ((op == Op.FLUSH_RANGE) & ~np.isin(imm, [int(k) for k in _FLUSH_KINDS]), "bad flush kind"),
            ((op == Op.WORK) & (imm < 0), "negative work cycles"),
            ((op == Op.SITE) & ((imm < 0) | (imm >= max(len(self.site_names), 0))), "site id without a name"),
            (((op == Op.STORE) | (op == Op.MOVNT)) & (data >= 0) & (data + size > len(self._blob)),
             "data beyond the data blob"),
        ]
        for mask, why in checks:
            if mask.any():
                i = int(np.argmax(mask))
                raise ProgramError(f"op {i} ({Op(op[i]).name} addr={addr[i]:#x}): {why}")
