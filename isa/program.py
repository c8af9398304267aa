"""Program builder: appends ops into a growing int64 array and a data blob.

Single-op methods are sugar; `loads`, `stores` and `extend` take whole arrays.
Operands are validated here so that the compiled core never sees a malformed op.
"""
import sys
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from isa._validate import NO_OPS, ProgramError, range_units, validated
from isa.ops import (
    COL_ADDR,
    COL_DATA,
    COL_FLAGS,
    COL_IMM,
    COL_OP,
    COL_SIZE,
    COL_SRC,
    FLAG_AT_LEAST,
    FLAG_DEPENDENT,
    FLAG_INDEXED,
    FLAG_MASKED,
    FLAG_NOT_EQUAL,
    FLAG_PREDICT_IN,
    FLAG_RECORD,
    FLAG_RMW_ADD,
    FLAG_RMW_CMPXCHG,
    FLAG_SPIN,
    FLAG_VALUE_DATA,
    FLAG_VALUE_INDEX,
    FLAG_VALUE_LIMIT,
    FLUSH_KINDS,
    MAX_WORK_CYCLES,
    MOVNT_SIZES,
    N_COLS,
    PHYS_LIMIT,
    VALUE_USE,
    Op,
)
from isa.sites import remap_sites, site_id
from isa.sourcelines import LINE_SEP, caller_line, line_ip, recording

EFAULT = 14


class _Loaded:
    def __repr__(self):
        return "LOADED"


#: A branch's or index mask's index or limit that is the value the previous LOAD (at most
#: 8 bytes) read, known only when its data is: `p.load(a).branch(LOADED, 16, body)`.
LOADED = _Loaded()


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


def _int(name, what, v):
    """`v` as a Python int, or ProgramError: a float would be truncated by the int64 op
    array, a bool is a mistake, and an int beyond 64 bits does not fit."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ProgramError(f"{name}: {what} {v!r} is not an integer")
    v = int(v)
    if not -(1 << 63) <= v < 1 << 63:
        raise ProgramError(f"{name}: {what} {v} does not fit in 64 bits")
    return v


def _as_bytes(data):
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).view(np.uint8).reshape(-1).tobytes()
    return bytes(data)


def _as_imm(name, value):
    """A store's little-endian integer value as the int64 IMM (two's complement)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ProgramError(f"{name}: value {value!r} is not an integer")
    return int(np.int64(np.uint64(int(value) & (2**64 - 1))))


class Program:
    """A sequence of ops plus the bytes that stores carry."""

    def __init__(self, capacity=1024, line_ips=False):
        """`line_ips`: a load or store emitted without an ip gets its line's
        (isa.sourcelines.line_ip): a kernel path's Python line stands for its instruction."""
        self._ops = np.zeros((max(capacity, 16), N_COLS), dtype=np.int64)
        self._line_ips = line_ips
        self._n = 0
        self._blob = bytearray()
        self.site_names = []
        self._site_ids = {}
        self._function_stack = []
        self._lines = recording()
        self._function = "(none)"    # with _lines: the function of the next op's site
        self._line_site = None       # ... and the site of the last op
        self._no_line = 0            # ... inside a branch body: no new site
        self._checked = NO_OPS       # validate()'s answer, while no op changed since
        self._sites_used = ()        # sites_used()'s, kept with it
        self.record_names = {}       # op index -> the name of the value it records
        self._values = np.zeros(1, dtype=np.int64)   # validate()'s: an op uses values (1)

    def __len__(self):
        return self._n

    @property
    def ops(self):
        """The op array (a read-only view: rows [0, len); a raw array goes through from_array,
        which validates it)."""
        ops = self._ops[:self._n]
        ops.flags.writeable = False
        return ops

    def core_ops(self):
        """The op array as the core takes it: writable (numba types a read-only array as
        another type, and would compile the core for it again); the core only reads it."""
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
        operands = (addr, size, src, imm, flags)
        if not all(type(v) is int and -(1 << 63) <= v < 1 << 63 for v in operands):
            name = f"op {self._n} ({Op(op).name.lower()})"
            operands = [_int(name, what, v) for what, v in
                        zip(("address", "size", "source", "operand", "flags"), operands)]
        if self._lines and op != Op.SITE and not self._no_line and not flags & VALUE_USE:
            self._at_line()
        self._reserve(1)
        self._checked = None
        row = self._ops[self._n]
        row[COL_OP] = op
        row[COL_ADDR], row[COL_SIZE], row[COL_SRC], row[COL_IMM], row[COL_FLAGS] = operands
        row[COL_DATA] = data
        self._n += 1
        return self

    def _add_data(self, data):
        raw = _as_bytes(data)
        off = len(self._blob)
        self._blob += raw
        return off, len(raw)

    @staticmethod
    def _check_addr(name, addr):
        if _int(name, "address", addr) < 0:
            raise ProgramError(f"{name}: negative address {addr:#x}")

    def _load(self, name, addr, size, src=0, imm=0, flags=0):
        self._check_addr(name, addr)
        if flags & FLAG_INDEXED and flags & FLAG_MASKED and src:
            raise ProgramError(f"op {self._n} ({name} at {addr:#x}): a masked indexed load "
                               "masks its index: no base")
        return self._emit(Op.LOAD, addr, size, src=src, imm=imm, flags=flags)

    # -- single ops -------------------------------------------------------------------
    def load(self, addr, size=8, dependent=False, flags=0, ip=0, record=None):
        """Load `size` (1..64) bytes; `dependent`: the address came from the previous load.
        `flags`: FLAG_EXTABLE / FLAG_MCSAFE (a fault or poison goes to a fixup). `ip`: the
        load instruction's address (0: none), what the L1 IP-stride prefetcher tells loads
        apart by; a load without one does not train it. `record`: a name (or True: the op's
        index) under which RunResult.values gives the value it read (at most 8 bytes,
        little-endian; functional memory, with several cores as x86-TSO lets this core see
        it: its own pending stores forwarded)."""
        self._check_addr("load", addr)
        if not 1 <= _int("load", "size", size) <= 64:
            raise ProgramError(f"load at {addr:#x}: size {size} not in 1..64")
        self._record("load", record)
        return self._load("load", addr, size, src=self._ip("load", ip),
                          flags=flags | (FLAG_DEPENDENT if dependent else 0)
                          | (FLAG_RECORD if record is not None else 0))

    def _record(self, name, record):
        """Name the value the op about to be emitted records (`record`: None, True or a str)."""
        if record is None:
            return
        if record is not True and not isinstance(record, str) or record == "":
            raise ProgramError(f"{name}: record={record!r}: True or a name")
        self.record_names[self._n] = self._n if record is True else record

    def load_indexed(self, base, scale, size=8, flags=0, masked=False):
        """Load at base + v * scale, v = the value the previous op (a LOAD of <= 8 bytes, or
        a comparison of its value) read: the dependent table lookup of a Spectre gadget or
        a linked-list walk. `masked`: v ANDed with the last index_mask's mask first
        (array_index_nospec on a loaded index)."""
        return self._load("load_indexed", base, size, imm=scale,
                          flags=flags | FLAG_INDEXED | (FLAG_MASKED if masked else 0))

    def load_masked(self, addr, base, size=8, flags=0):
        """Load base[addr - base] with the offset ANDed with the mask of the last
        index_mask (array_index_nospec): out of bounds it reads base[0]."""
        return self._load("load_masked", addr, size, src=base, flags=flags | FLAG_MASKED)

    def store(self, addr, data=None, size=None, value=0, flags=0, ip=0, plus_recorded=False):
        """Store `data` (bytes/ndarray, 1..64 bytes), or `size` bytes of little-endian `value`.
        `flags`: FLAG_EXTABLE (a fault goes to a fixup). `ip`: the store instruction's
        address (0: none; recorded, no prefetcher trains on it). `plus_recorded`: it stores
        `value` plus the value the last recording op read (`size` <= 8; a non-atomic
        increment is `load(x, record=...)` then `store(x, value=1, plus_recorded=True)`)."""
        if plus_recorded and data is not None:
            raise ProgramError(f"store at {addr:#x}: plus_recorded adds to `value`, not data")
        n, off, imm = self._written("store", addr, data, size, value)
        return self._emit(Op.STORE, addr, n, src=self._ip("store", ip), data=off, imm=imm,
                          flags=flags | (FLAG_VALUE_DATA if plus_recorded else 0))

    def _ip(self, name, ip):
        if _int(name, "ip", ip) < 0:
            raise ProgramError(f"{name}: negative instruction address (ip) {ip:#x}")
        if ip == 0 and self._line_ips:
            return line_ip(sys._getframe(2))
        return int(ip)

    def _written(self, name, addr, data, size, value):
        """(bytes, data offset or -1, IMM) of a write of `data` (1..64 bytes), or of `size`
        (default 8) bytes of little-endian `value`."""
        self._check_addr(name, addr)
        if data is not None:
            off, n = self._add_data(data)
            if not 1 <= n <= 64:
                raise ProgramError(f"{name} at {addr:#x}: {n} data bytes not in 1..64")
            return n, off, 0
        size = 8 if size is None else _int(name, "size", size)
        if not 1 <= size <= 64:
            raise ProgramError(f"{name} at {addr:#x}: size {size} not in 1..64")
        return size, -1, _as_imm(name, value)

    def peer_write(self, addr, data=None, size=None, value=0):
        """Another core on the same socket (a guest's vCPU, a producer thread) writes `data`
        (1..64 bytes), or `size` bytes of little-endian `value`, at this point of the program:
        it takes no issue slot here, invalidates this core's copies of the line(s) and leaves
        them modified in that core's cache, so this core's next access to them is a
        cache-to-cache transfer (profile cache.<last level>.peer_hitm_ns). Privilege and
        SMAP do not apply (it is not this core's access); the address must be mapped."""
        n, off, imm = self._written("peer_write", addr, data, size, value)
        return self._emit(Op.PEER_WRITE, addr, n, data=off, imm=imm)

    def lock_rmw(self, addr, data=None, size=None, value=0, record=None):
        """A LOCK-prefixed read-modify-write (LOCK ADD, XCHG, CMPXCHG) of `size` (default 8)
        bytes at `addr`, leaving `data` or the little-endian `value` there: atomic and a full
        barrier (older loads complete, the store buffer drains), then the measured locked
        latency (profile instr.lock_rmw_cycles). The kernel's smp_mb() and spinlocks.
        `record` (a name or True, as load's): the old value, an XCHG's register."""
        n, off, imm = self._written("lock_rmw", addr, data, size, value)
        self._record("lock_rmw", record)
        return self._emit(Op.LOCK_RMW, addr, n, data=off, imm=imm,
                          flags=FLAG_RECORD if record is not None else 0)

    def lock_xadd(self, addr, value, size=8, record=None):
        """LOCK XADD (or LOCK ADD) of `value` to the `size` (1, 2, 4, 8) bytes at `addr`,
        naturally aligned: the sum wraps at the size. `record`: the old value, as load's.
        Timed as lock_rmw."""
        self._check_addr("lock_xadd", addr)
        self._record("lock_xadd", record)
        return self._emit(Op.LOCK_RMW, addr, _int("lock_xadd", "size", size),
                          imm=_as_imm("lock_xadd", value),
                          flags=FLAG_RMW_ADD | (FLAG_RECORD if record is not None else 0))

    def lock_cmpxchg(self, addr, expected, new, size=8, record=None, spin=False):
        """LOCK CMPXCHG of the `size` (1, 2, 4, 8) bytes at `addr`, naturally aligned: `new`
        written if they hold `expected`, else nothing. `record`: the old value (the op
        succeeded if it is `expected`), as load's; the last recorded value is also what a
        following branch(LOADED...) compares. `spin`: on failure a PAUSE, then again, until it
        succeeds (a test-and-set lock's acquire; with one core, an error). Timed as lock_rmw."""
        self._check_addr("lock_cmpxchg", addr)
        self._record("lock_cmpxchg", record)
        return self._emit(Op.LOCK_RMW, addr, _int("lock_cmpxchg", "size", size),
                          src=_as_imm("lock_cmpxchg", expected), imm=_as_imm("lock_cmpxchg", new),
                          flags=FLAG_RMW_CMPXCHG | (FLAG_SPIN if spin else 0)
                          | (FLAG_RECORD if record is not None else 0))

    def wait(self, addr, value, size=8, mask=-1, record=None, at_least=False, not_equal=False):
        """Spin until the `size` (1, 2, 4, 8) bytes at `addr`, naturally aligned, ANDed with
        `mask` equal `value` ANDed with it: a load each check, and a PAUSE (profile
        instr.pause_cycles) after each that fails (the kernel's smp_cond_load_acquire,
        atomic_cond_read_acquire). With several cores the others run meanwhile; a run in
        which every core left waits and no store is pending stops with WaitForever, as does
        a wait that fails with one core. `record`: the value that ended it, as load's.
        `at_least`: until the bytes (1, 2 or 4, no mask) are at or past `value` as a
        free-running index that wraps at their size (a ring's producer index). `not_equal`:
        until the masked bytes differ from the masked `value` (`smp_cond_load_acquire(p,
        VAL)`: until not 0)."""
        self._check_addr("wait", addr)
        self._record("wait", record)
        return self._emit(Op.WAIT, addr, _int("wait", "size", size), src=_as_imm("wait", mask),
                          imm=_as_imm("wait", value),
                          flags=(FLAG_RECORD if record is not None else 0)
                          | (FLAG_AT_LEAST if at_least else 0)
                          | (FLAG_NOT_EQUAL if not_equal else 0))

    def peer_read(self, addr, size=8):
        """Another core on the same socket reads `size` bytes at this point of the program
        (no issue slot here): a copy this core modified is forwarded, and its copies become
        shared, so this core's next write to the line waits for the other's copy to be
        invalidated (profile cache.<last level>.peer_hitm_ns). The address must be mapped."""
        self._check_addr("peer_read", addr)
        if not 1 <= _int("peer_read", "size", size) <= 64:
            raise ProgramError(f"peer_read at {addr:#x}: size {size} not in 1..64")
        return self._emit(Op.PEER_READ, addr, size)

    def movnt(self, addr, data=None, size=None, value=0):
        """Non-temporal store of 4/8/16/32/64 bytes, naturally aligned."""
        self._check_addr("movnt", addr)
        if data is not None:
            off, n = self._add_data(data)
        else:
            off, n = -1, 8 if size is None else _int("movnt", "size", size)
        if n not in MOVNT_SIZES:
            raise ProgramError(f"movnt at {addr:#x}: size {n} not one of {MOVNT_SIZES}")
        if addr % n:
            raise ProgramError(f"movnt at {addr:#x}: not aligned to its size {n}")
        imm = 0 if data is not None else _as_imm("movnt", value)
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
        if _int(op.name.lower(), "length", n) < 0:
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
        if isinstance(kind, bool) or not isinstance(kind, (int, np.integer)) or \
                kind not in FLUSH_KINDS:
            names = [k.name for k in FLUSH_KINDS]
            raise ProgramError(f"flush_range: kind {kind!r} is not "
                               f"{', '.join(names[:-1])} or {names[-1]}")
        if _int("flush_range", "length", n) < 0:
            raise ProgramError(f"flush_range at {addr:#x}: negative length {n}")
        return self._emit(Op.FLUSH_RANGE, addr, n, imm=int(kind))

    def work(self, cycles, dependent=False):
        """`cycles` of non-memory work (ALU, branches): a chain of that many dependent 1-cycle
        uops, going on where the previous WORK's chain ended. They take issue slots and
        window entries; memory ops overlap them as far as the window allows, and fences,
        stores' commits and retirement wait for them. `dependent`: it works on the previous
        load's data (or a copy's), so it starts once that data is there."""
        if not 0 <= _int("work", "cycles", cycles) <= MAX_WORK_CYCLES:
            raise ProgramError(f"work: cycles {cycles} not in 0..{MAX_WORK_CYCLES}")
        return self._emit(Op.WORK, imm=int(cycles), flags=FLAG_DEPENDENT if dependent else 0)

    @staticmethod
    def _operands(name, index, limit, dependent):
        """(index, limit, flags) of a comparison `index < limit`, either operand LOADED."""
        if index is LOADED and limit is LOADED:
            raise ProgramError(f"{name}: index and limit both LOADED")
        flags = FLAG_DEPENDENT if dependent else 0
        if index is LOADED:
            index, flags = 0, FLAG_VALUE_INDEX | FLAG_DEPENDENT
        if limit is LOADED:
            limit, flags = 0, FLAG_VALUE_LIMIT | FLAG_DEPENDENT
        if _int(name, "index", index) < 0 or _int(name, "limit", limit) < 0:
            raise ProgramError(f"{name}: negative index {index} or limit {limit}")
        return index, limit, flags

    def branch(self, index, limit, body, predict_in=None, dependent=False, ip=0):
        """A bounds check `if (index < limit)` (unsigned) guarding the next `body` ops.
        `index` or `limit` may be LOADED: the value the previous op, a LOAD of at most 8
        bytes, read (0 without functional memory), so the branch resolves only once that
        data is there. Without an `ip` the guess is the static `predict_in` (default True);
        with one (the branch instruction's address, > 0) it is the branch predictor's
        counter of that site, which learns each outcome (docs/machine.md, "Speculation").
        A wrong guess of "in bounds" runs the body transiently until the branch resolves
        (its operands ready: `dependent` = one of them is the previous load's data), an
        LFENCE, or a reorder buffer's worth of uops."""
        index, limit, flags = self._operands("branch", index, limit, dependent)
        if predict_in is not None and not isinstance(predict_in, (bool, np.bool_)):
            raise ProgramError(f"branch: predict_in {predict_in!r} is not a bool")
        if _int("branch", "ip", ip) < 0:   # no line's ip (line_ips): a branch is static
            raise ProgramError(f"branch: negative instruction address (ip) {ip:#x}")
        if ip and predict_in is not None:
            raise ProgramError(f"branch: ip {ip:#x} is predicted by the branch predictor, "
                               "not by predict_in")
        if not ip and (predict_in is None or predict_in):
            flags |= FLAG_PREDICT_IN
        return self._emit(Op.BRANCH, index, limit, src=int(ip), imm=body, flags=flags)

    @contextmanager
    def guarded(self, index, limit, predict_in=None, dependent=False, ip=0):
        """`with p.guarded(i, n): ...` emits a branch whose body is the ops emitted inside."""
        at = self.forward(index, limit, predict_in, dependent, ip)
        self._no_line += 1
        try:
            yield self
        finally:
            self._no_line -= 1
        self.land(at)

    def forward(self, index, limit, predict_in=None, dependent=False, ip=0):
        """A branch (as branch()) whose body is not emitted yet: it ends where land() is
        given the returned label, so that `index < limit` failing goes on at that op (a
        forward `jcc`; `forward(1, 0, predict_in=False)` never holds: a `jmp`). For
        control flow that guarded()'s nesting cannot express: an else, a goto out of
        several blocks."""
        self.branch(index, limit, 0, predict_in, dependent, ip)
        return self._n - 1

    def jump(self):
        """An unconditional forward `jmp` to where land() is given the returned label: a
        branch whose `1 < 0` never holds, statically predicted so (one issue slot)."""
        return self.forward(1, 0, predict_in=False)

    def land(self, *labels):
        """The branches forward() or jump() returned as `labels` skip to the next op
        emitted: their bodies end here."""
        for at in labels:
            if not (isinstance(at, (int, np.integer)) and 0 <= at < self._n
                    and self._ops[at, COL_OP] == Op.BRANCH):
                raise ProgramError(f"land: {at!r} is not a branch of this program")
            self._ops[at, COL_IMM] = self._n - at - 1
        self._checked = None
        return self

    def index_mask(self, index, limit, dependent=False):
        """array_index_nospec(index, limit): cmp + sbb build an all-ones mask when
        index < limit, else 0; later load_masked ops use it (a data dependency, no fence).
        `index` or `limit` may be LOADED, as in branch()."""
        index, limit, flags = self._operands("index_mask", index, limit, dependent)
        return self._emit(Op.INDEX_MASK, index, limit, flags=flags)

    def _site_op(self, name):
        return self._emit(Op.SITE, imm=site_id(self._site_ids, self.site_names, name))

    def _at_line(self):
        """With record_lines: a SITE op if the next op's function or line is not the last's."""
        file, line = caller_line()
        name = f"{self._function}{LINE_SEP}{file}:{line}"
        if name != self._line_site:
            self._line_site = name
            self._site_op(name)

    def _enter(self, name):
        if self._lines:
            self._function = name   # its SITE comes with its first op
        else:
            self._site_op(name)

    def site(self, name):
        """Attribute the following ops to the function `name` in the profiler (with
        record_lines: at the line of this call until an op's line differs)."""
        if not self._lines:
            return self._site_op(name)
        self._function = name
        self._line_site = None
        self._at_line()
        return self

    @contextmanager
    def function(self, name):
        """Attribute the ops emitted inside the block to site `name` (a kernel function), then
        to the enclosing function's site again ("(none)" outside every function)."""
        self._function_stack.append(name)
        self._enter(name)
        try:
            yield self
        finally:
            self._function_stack.pop()
            self._enter(self._function_stack[-1] if self._function_stack else "(none)")

    @contextmanager
    def loop(self, name):
        """A run's driver loop: the ops inside, outside every function, count to site `name`
        as in function(name), and the site stays `name` after the block. Machine.run waits
        after the last op for the store buffer and the memory side to drain, and charges
        that wait to the site current then: the loop's, not an unexplained "(none)"."""
        with self.function(name):
            yield self
        self.site(name)

    # -- batches ----------------------------------------------------------------------
    def _batch(self, op, addrs, size, flags=0, ips=None):
        if ips is not None:
            ips = self._batch_ips(op, ips, np.asarray(addrs).reshape(-1))
        raw = np.asarray(addrs).reshape(-1)
        if len(raw) and (raw.dtype.kind not in "iu" or
                         (raw.dtype.kind == "u" and raw.max() >= 1 << 63)):
            raise ProgramError(f"{op.name.lower()}: batch addresses of dtype {raw.dtype} "
                               "are not int64 integers")
        addrs = raw.astype(np.int64)
        if len(addrs) and addrs.min() < 0:
            raise ProgramError(f"{op.name.lower()}: negative address in batch")
        if not 1 <= _int(op.name.lower(), "size", size) <= 64:
            raise ProgramError(f"{op.name.lower()}: size {size} not in 1..64")
        if len(addrs) and addrs.max() > PHYS_LIMIT - size:
            raise ProgramError(f"{op.name.lower()}: batch address beyond the 52-bit physical "
                               "address space")
        k = len(addrs)
        if self._lines and not self._no_line:
            self._at_line()
        self._reserve(k)
        rows = self._ops[self._n:self._n + k]
        rows[:] = 0
        rows[:, COL_OP] = op
        rows[:, COL_ADDR] = addrs
        rows[:, COL_SIZE] = size
        rows[:, COL_DATA] = -1
        rows[:, COL_FLAGS] = flags
        if ips is not None:
            rows[:, COL_SRC] = ips
        self._n += k
        if self._checked is not None:   # what validate() finds of these rows: no error
            work, units, fixups, peer = self._checked
            self._checked = work, units + k * (1 + range_units(size)), fixups, peer
        return self

    def loads(self, addrs, size=8, dependent=False, ips=None):
        """One LOAD of `size` bytes per address; `ips`: each load's instruction address
        (one for all or one per address, 0: none), as load()'s `ip`."""
        return self._batch(Op.LOAD, addrs, size, FLAG_DEPENDENT if dependent else 0, ips)

    def stores(self, addrs, size=8, ips=None):
        """One STORE of `size` zero bytes per address (trace replay: no data); `ips` as
        loads()'."""
        return self._batch(Op.STORE, addrs, size, ips=ips)

    @staticmethod
    def _batch_ips(op, ips, addrs):
        """`ips` as int64, one per address (a scalar: the same for each)."""
        raw = np.asarray(ips)
        name = op.name.lower()
        if raw.dtype.kind not in "iu" or (raw.size and raw.dtype.kind == "u" and
                                          raw.max() >= 1 << 63):
            raise ProgramError(f"{name}: batch ips of dtype {raw.dtype} are not int64 integers")
        if raw.ndim and raw.reshape(-1).shape != addrs.shape:
            raise ProgramError(f"{name}: {raw.size} ips for {addrs.size} addresses")
        out = np.broadcast_to(raw.astype(np.int64).reshape(-1) if raw.ndim else
                              raw.astype(np.int64), addrs.shape)
        if out.size and out.min() < 0:
            raise ProgramError(f"{name}: negative instruction address (ip) in batch")
        return out

    def extend(self, other):
        """Append another Program (its data and site names are remapped)."""
        k = len(other)
        self._reserve(k)
        self._checked = None
        rows = self._ops[self._n:self._n + k]   # beyond the program's end until _n moves
        rows[:] = other.ops
        rows[rows[:, COL_DATA] >= 0, COL_DATA] += len(self._blob)
        self._blob += bytes(other._blob) if other is self else other._blob   # no self-export
        remap_sites(rows, other.site_names, self._site_ids, self.site_names)
        self.record_names.update({self._n + i: self._n + i if name == i else name
                                  for i, name in list(other.record_names.items())})
        self._n += k
        return self

    @classmethod
    def from_array(cls, ops, data=b"", site_names=(), copy=True, check=True):
        """Build from a raw op array (e.g. from .npy), validating every row unless check=False
        (a builder's, which Machine.run validates); copy=False: the Program keeps `ops` (C-
        contiguous, writable int64, the caller's no more) instead of a copy: a builder's."""
        ops = np.asarray(ops)
        if ops.ndim != 2 or ops.shape[1] != N_COLS:
            raise ProgramError(f"op array must have shape (n, {N_COLS}), got {ops.shape}")
        if copy:
            p = cls(capacity=len(ops))
            p._ops[:len(ops)] = ops   # cast as astype() would, without its extra copy
        elif ops.dtype != np.int64 or not (ops.flags.c_contiguous and ops.flags.writeable):
            layout = ("a C-contiguous" if ops.flags.c_contiguous else "a non-contiguous") + (
                "" if ops.flags.writeable else " read-only")
            raise ProgramError(f"from_array(copy=False) takes a C-contiguous writable int64 "
                               f"array, not {layout} {ops.dtype} one")
        else:
            p, p._ops = cls(capacity=0), ops
        p._n = len(ops)
        p._blob = bytearray(data)
        p.site_names = list(site_names)
        p._site_ids = {n: i for i, n in enumerate(p.site_names)}
        p._checked = None
        if check:
            p.validate()
        return p

    def validate(self):
        """Raise ProgramError naming the first op whose operands the core cannot execute.
        Returns (WORK cycles, ops plus cachelines touched) as floats, what Machine.run
        bounds the run's cycles with, then whether any op has FLAG_EXTABLE or FLAG_MCSAFE
        and whether any is another core's access (isa.ops.PEER_OPS). The answer is kept
        until an op is added: a program run many times, or built of batches whose rows
        are checked as they are added, is read once (or never) at 56 bytes an op."""
        if self._checked is None:
            first = np.full(max(len(self.site_names), 1), -1, dtype=np.int64)
            self._checked = validated(self.ops, len(self.site_names), len(self._blob), first,
                                      self._values)
            used = np.flatnonzero(first >= 0)
            self._sites_used = tuple(used[np.argsort(first[used])].tolist())
        return self._checked

    def needs_values(self):
        """Whether an op records, waits for or computes on values in memory (only
        functional memory has them): found by validate() (batches of loads and stores add
        none)."""
        self.validate()
        return bool(self._values[0])

    def sites_used(self):
        """The indices of the site names SITE ops use, in the order of their first SITE ops
        (found by validate(): batches of loads and stores add none)."""
        self.validate()
        return self._sites_used
