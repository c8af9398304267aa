"""Before an op runs: the byte ranges it touches, faults (unmapped, privilege, SMAP, poison),
pages made present; after a caught fault: the exception-table fixup."""
from numba import int64

from emu import _handlers as hd
from emu import _pipeline as pl
from emu.state import (
    SC,
    SCTR,
    ST_FAULT_MCE,
    ST_FAULT_PRIVILEGE,
    ST_FAULT_SMAP,
    ST_FAULT_UNMAPPED,
    ST_NEED_PAGES,
    ST_OK,
    TP,
)
from isa.ops import (
    BULK,
    COL_ADDR,
    COL_FLAGS,
    COL_OP,
    COL_SIZE,
    COL_SRC,
    CONSUMES_POISON,
    FLAG_EXTABLE,
    FLAG_MCSAFE,
    FLAG_ZERO_TAIL,
    PEER,
    RANGE_KIND,
    WRITES_MEMORY,
    RangeKind,
)
from memmodel import _memside as mside
from memmodel import _persist as persist
from memmodel import memory as mm
from memmodel.jit import FRAMES, ROWS, STATE, WORDS, apart, compiled, inlined, ix
from memmodel.layout import MS, MT


@inlined
def op_ranges(ops, i):
    """The byte ranges op i touches (its OP_SPEC range kind): (dst start, dst end, src start,
    src end)."""
    kind = RANGE_KIND[ix(ops[i, COL_OP])]
    a = ops[i, COL_ADDR]
    n = ops[i, COL_SIZE]
    if kind == RangeKind.BYTES:
        return a, a + n, 0, 0
    if kind == RangeKind.LINE:
        return a & ~63, (a & ~63) + 64, 0, 0
    if kind == RangeKind.LINES and n > 0:
        return a & ~63, ((a + n + 63) >> 6) << 6, 0, 0
    if kind == RangeKind.DST_SRC:
        return a, a + n, ops[i, COL_SRC], ops[i, COL_SRC] + n
    return 0, 0, 0, 0


@inlined
def fast_ok(S, op, d0, d1, s0, s1):
    """The common case needs no check: ranges inside the region checked last, and a
    functional write of some bytes into the page made present last."""
    lo, hi = S[SC.REG_LO], S[SC.REG_HI]
    if d1 > d0 and (d0 < lo or d1 > hi):
        return False
    if s1 > s0:
        return False
    if S[MT.FUNCTIONAL] and d1 > d0 and WRITES_MEMORY[ix(op)]:
        return (d0 >> 12) == S[SC.PAGE_OK] and ((d1 - 1) >> 12) == S[SC.PAGE_OK]
    return True


@compiled
def _denied(S, r):
    """Why a data access to region r is refused now: ST_OK, ST_FAULT_PRIVILEGE (user mode,
    supervisor page) or ST_FAULT_SMAP (kernel mode, user page, SMAP on, EFLAGS.AC clear)."""
    user = mm.reg(S, r, mm.RG.USER)
    if not S[SC.KERNEL]:
        return ST_OK if user else ST_FAULT_PRIVILEGE
    if user and S[TP.SMAP] and not S[SC.AC]:
        return ST_FAULT_SMAP
    return ST_OK


@compiled
def first_fault(S, a0, a1, checked):
    """(address, why) of the first byte of [a0, a1) that faults now (unmapped, SMAP,
    privilege; without `checked` only unmapped), or (a1, ST_OK)."""
    pos = a0
    while pos < a1:
        r = mm.find_region(S, pos)
        if r < 0:
            return pos, ST_FAULT_UNMAPPED
        why = _denied(S, r) if checked else ST_OK
        if why != ST_OK:
            return pos, why
        pos = mm.reg(S, r, mm.RG.END)
    return a1, ST_OK


@compiled
def _zero_tail(S, ops, i, d0, d1):
    """Does op i's fixup zero the destination's uncopied tail (copy_from_user)? Only when
    the fault was in the source and the whole destination is accessible."""
    s0 = ops[i, COL_SRC]
    return (ops[i, COL_FLAGS] & FLAG_ZERO_TAIL) != 0 and S[SC.FAULT] != ST_OK and \
        s0 <= S[SC.FAULT_ADDR] < s0 + ops[i, COL_SIZE] and \
        first_fault(S, d0, d1, True)[1] == ST_OK


@apart(STATE, ROWS, FRAMES, ROWS, int64, int64, int64, int64, int64, WORDS)
def precheck(S, pt, frames, ops, i, d0, d1, s0, s1, out):
    """Validate op i before any side effect: mapped, permitted (privilege, SMAP), no poison
    consumed, and pages present when functional. Returns how many of its bytes execute:
    all of them, fewer when an exception-table op faults part-way (S[SC.FAULT] then says
    why; for a load or store, none), or -1 if the run must stop here (out[] filled)."""
    op = ops[i, COL_OP]
    flags = ops[i, COL_FLAGS]
    ok = ops[i, COL_SIZE]
    why = ST_OK
    at = 0
    peer = PEER[ix(op)]
    fd, wd = first_fault(S, d0, d1, not peer)   # another core's access: mapped only
    if wd != ST_OK:
        ok, why, at = fd - d0, wd, fd
    fs, ws = first_fault(S, s0, s1, True)
    if ws != ST_OK and fs - s0 < ok:
        ok, why, at = fs - s0, ws, fs
    if S[SC.POISON_N] and CONSUMES_POISON[ix(op)]:
        r0 = s0 if RANGE_KIND[ix(op)] == RangeKind.DST_SRC else d0   # a copy loads its source
        p = mm.first_poisoned(S, pt, r0, r0 + ok)
        if p >= 0:   # poison is consumed by the load of its line
            ok, why, at = max(p, r0) - r0, ST_FAULT_MCE, p
    S[SC.FAULT] = ST_OK
    if why != ST_OK:
        if not flags & (FLAG_MCSAFE if why == ST_FAULT_MCE else FLAG_EXTABLE):
            out[0] = why
            out[2] = at
            return -1
        S[SC.FAULT] = why
        S[SC.FAULT_ADDR] = at
        if not BULK[ix(op)]:   # a single access does none of its bytes
            ok = 0
    elif d1 > d0 and not S[SC.POISON_N] and not peer:   # not checked as ours
        r = mm.find_region(S, d0)
        # remember the region for the fast path unless its permission depends on EFLAGS.AC
        if d1 <= mm.reg(S, r, mm.RG.END) and not (S[SC.KERNEL] and S[TP.SMAP]
                                                  and mm.reg(S, r, mm.RG.USER)):
            S[SC.REG_LO] = mm.reg(S, r, mm.RG.BASE)
            S[SC.REG_HI] = mm.reg(S, r, mm.RG.END)
    if S[MT.FUNCTIONAL] and WRITES_MEMORY[ix(op)]:
        e0 = d1 if _zero_tail(S, ops, i, d0, d1) else d0 + ok
        e1 = s0 + ok if s1 > s0 else s0
        need = out[2:4]
        need[0] = 0
        need[1] = 0
        mm.missing_pages(S, pt, d0, e0, need)
        mm.missing_pages(S, pt, s0, e1, need)
        if need[1] > 0:
            if need[0] > pt.shape[0] - mm.allocated(S, mm.ALLOC.CHUNKS) or \
                    need[1] > frames.shape[0] - mm.allocated(S, mm.ALLOC.FRAMES):
                out[0] = ST_NEED_PAGES
                return -1
            mm.map_pages(S, pt, d0, e0)
            mm.map_pages(S, pt, s0, e1)
        if why == ST_OK:
            S[SC.PAGE_OK] = d0 >> 12
    return ok


@compiled
def _zero_fill(S, pt, frames, dst, n):
    """Cached stores of n zero bytes at dst, line by line (the memset of a fixup)."""
    pos = 0
    while pos < n:
        d = dst + pos
        k = min(64 - (d & 63), n - pos)
        pl.rob_gate(S, 0)
        hd.store_line(S, d >> 6, (k + 7) // 8, d)
        pl.issue(S, (k + 7) // 8)
        if S[MT.FUNCTIONAL]:
            mm.write_imm(S, pt, frames, d, 0, k)
            persist.eadr_store(S, d, k)
            if S[MS.PQ_COUNT]:
                persist.persist_queue(S, pt, frames, -1, -1)
        pos += k


@apart(STATE, ROWS, FRAMES, ROWS, int64, int64, WORDS)
def fixup(S, pt, frames, ops, i, ok, res):
    """Op i faulted after `ok` bytes and its exception-table entry catches it: pay for the
    exception, record the bytes not done, zero the tail where asked."""
    d0, d1, s0, s1 = op_ranges(ops, i)
    res[i] = ops[i, COL_SIZE] - ok
    if S[SC.FAULT] == ST_FAULT_MCE:   # the consuming read reaches the media, then #MC
        pl.stall_until(S, mside.mem_read(S, S[SC.FAULT_ADDR] >> 6, S[SC.NOW]), SCTR.FAULT)
        pl.stall_until(S, S[SC.NOW] + S[TP.MCE], SCTR.FAULT)
    else:
        pl.stall_until(S, S[SC.NOW] + S[TP.FAULT_FIXUP], SCTR.FAULT)
    if _zero_tail(S, ops, i, d0, d1):
        _zero_fill(S, pt, frames, d0 + ok, d1 - d0 - ok)
    S[SC.FAULT] = ST_OK
