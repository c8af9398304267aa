"""Branches and the transient window of a misprediction (Spectre v1 and its barriers)."""
from numba import int64

from emu import _checks as ck
from emu import _pipeline as pl
from emu import _tso as tso
from emu.state import EH, SC, SCTR, ST_OK, TP
from isa.ops import (
    COL_ADDR,
    COL_FLAGS,
    COL_IMM,
    COL_OP,
    COL_SIZE,
    COL_SRC,
    ENDS_WINDOW,
    FLAG_DEPENDENT,
    FLAG_INDEXED,
    FLAG_MASKED,
    FLAG_PREDICT_IN,
    FLAG_VALUE_INDEX,
    FLAG_VALUE_LIMIT,
    Op,
)
from memmodel import _hierarchy as hier
from memmodel import memory as mm
from memmodel._hierarchy import K_LOAD
from memmodel.jit import BYTES, FRAMES, ROWS, STATE, apart, inlined, ix
from memmodel.layout import MS, MT

FAR = 1 << 62   # an indexed address beyond the physical address space: unmapped
SIGN = -(1 << 63)   # x ^ SIGN orders int64s as their unsigned values


@inlined
def holds(ops, i, val):
    """Whether BRANCH or INDEX_MASK i's `index < limit` holds, unsigned (a loaded value with
    its top bit set is above every constant); `val`: the previous load's value."""
    flags = ops[i, COL_FLAGS]
    index = val if flags & FLAG_VALUE_INDEX else ops[i, COL_ADDR]
    limit = val if flags & FLAG_VALUE_LIMIT else ops[i, COL_SIZE]
    return index ^ SIGN < limit ^ SIGN


@inlined
def load_address(S, ops, i, val, mask):
    """Address of LOAD i: indexed by the previous load's value `val`, masked by the last
    INDEX_MASK's `mask` (both: the index masked), or as written."""
    a = ops[i, COL_ADDR]
    flags = ops[i, COL_FLAGS]
    if flags & FLAG_INDEXED:
        if flags & FLAG_MASKED:
            val &= mask
        if val < 0 or val > (1 << 40):
            return FAR
        return a + val * ops[i, COL_IMM]
    if flags & FLAG_MASKED:
        base = ops[i, COL_SRC]
        return base + ((a - base) & mask)
    return a


@inlined
def index_mask(S, ops, j, t, dep, val):
    """INDEX_MASK op j issued at cycle t (`dep`: when the previous load's data `val` is
    ready): (the mask, the cycle the masked index is ready)."""
    if ops[j, COL_FLAGS] & FLAG_DEPENDENT:
        t = max(t, dep)
    return (-1 if holds(ops, j, val) else 0), t + S[TP.INDEX_MASK]


@inlined
def counter(S, ip):
    """The index in S of the predictor's 2-bit counter for the branch at `ip` (> 0): its
    site, XOR the global history when the profile keeps one (gshare). ip >= 0 (validated)
    and the history >= 0, so the remainder is a row of the table."""
    return S[EH.BPRED] + (ip ^ S[SC.BP_HIST]) % S[TP.BP_ENTRIES]


@inlined
def predicted_in(S, ops, i):
    """Whether BRANCH i is predicted "in" (its body runs): its site's counter is 2 or 3,
    or, without an ip, its static FLAG_PREDICT_IN."""
    ip = ops[i, COL_SRC]
    if ip == 0:
        return ops[i, COL_FLAGS] & FLAG_PREDICT_IN != 0
    return S[ix(counter(S, ip))] >= 2


@apart(STATE, ROWS, FRAMES, BYTES, ROWS, int64, int64, int64)
def transient(S, pt, frames, data, ops, j0, j1, resolve):
    """Run ops j0..j1-1 down a mispredicted path until the branch resolves at `resolve`:
    loads fill the caches (lines from memory marked F_TRANSIENT), stores are discarded,
    an op with OP_SPEC's P_ENDS_WINDOW (an LFENCE, or any fence, flush, STAC/CLAC, bulk
    op, another core's access) ends the window, as does a reorder buffer's worth of
    uops. A load that would fault or consume poison ends it too: no fill; a load reads its
    core's pending stores as an architectural one does (store forwarding: on the wrong path
    too), `data` being the program's data blob. A branch on
    the path follows its guess (predicted_in; the predictor is not trained by it), into
    its body or past it; the first one guessed wrong that resolves before `resolve`
    sends the path, once it has, the right way after the misprediction penalty, its
    wrong path's uops squashed. Architectural state other than the caches is left as
    it was."""
    start = now = S[SC.NOW]
    S[MS.SPEC] = 1
    dep, val, mask = S[SC.DEP_READY], S[SC.VAL], S[SC.MASK]
    uops = 0
    work = 0
    back = -1         # a branch on the path guessed wrong: where the right way goes on,
    back_at = resolve  # when it resolves (else the window's end), the path's state then
    back_uops, back_dep, back_val, back_mask = 0, dep, val, mask
    j = j0
    while j < j1:
        op = ops[j, COL_OP]
        flags = ops[j, COL_FLAGS]
        t = now + uops // S[TP.UPC] + work
        if op == Op.LOAD and flags & (FLAG_DEPENDENT | FLAG_INDEXED | FLAG_MASKED):
            t = max(t, dep)
        if t >= back_at or uops >= S[TP.ROB]:
            if back < 0:
                break
            j, uops, work = back, back_uops, 0
            now = back_at + S[TP.MISPREDICT] - uops // S[TP.UPC]
            dep, val, mask = back_dep, back_val, back_mask
            back, back_at = -1, resolve
            continue
        if op == Op.LOAD:
            a = load_address(S, ops, j, val, mask)
            size = ops[j, COL_SIZE]
            if ck.first_fault(S, a, a + size, True)[1] != ST_OK or \
                    (S[SC.POISON_N] != 0 and mm.first_poisoned(S, pt, a, a + size) >= 0):
                break
            # a transient load trains the prefetchers as any load does
            dep = hier.demand(S, a >> 6, t, K_LOAD, 0 if flags & FLAG_MASKED else
                              ops[j, COL_SRC], a)[0]
            if (a + size - 1) >> 6 != a >> 6:
                dep = max(dep, hier.demand(S, (a + size - 1) >> 6, t, K_LOAD, 0, 0)[0])
            val = tso.read_value(S, pt, frames, data, a, min(size, 8)) if S[MT.FUNCTIONAL] else 0
        elif op == Op.INDEX_MASK:
            mask, dep = index_mask(S, ops, j, t, dep, val)
        elif op == Op.WORK:
            work += ops[j, COL_IMM]
        elif op == Op.BRANCH:
            guess = predicted_in(S, ops, j)
            at = (max(t, dep) if flags & FLAG_DEPENDENT else t) + S[TP.BRANCH_RESOLVE]
            if guess != holds(ops, j, val) and back < 0 and at < resolve:
                back, back_at = j + 1 + (ops[j, COL_IMM] if guess else 0), at
                back_uops, back_dep, back_val, back_mask = uops + 1, dep, val, mask
            if not guess:
                j += ops[j, COL_IMM]
        elif ENDS_WINDOW[ix(op)]:
            break
        uops += 1
        j += 1
    S[MS.SPEC] = 0
    S[SC.NOW] = start   # the wrong path's fill-buffer waits (demand's second value) delay nothing


@apart(STATE, ROWS, FRAMES, BYTES, ROWS, int64)
def branch(S, pt, frames, data, ops, i):
    """A bounds-check branch (macro-fused cmp + jcc). Returns how many ops to skip."""
    t = S[SC.NOW]
    if ops[i, COL_FLAGS] & FLAG_DEPENDENT:
        t = max(t, S[SC.DEP_READY])
    resolve = t + S[TP.BRANCH_RESOLVE]
    inside = holds(ops, i, S[SC.VAL])
    predicted = predicted_in(S, ops, i)
    body = ops[i, COL_IMM]
    pl.issue(S, 1)
    if predicted != inside:
        if predicted:
            transient(S, pt, frames, data, ops, i + 1, i + 1 + body, resolve)
        pl.stall_until(S, max(S[SC.NOW], resolve) + S[TP.MISPREDICT], SCTR.MISPREDICT)
    ip = ops[i, COL_SRC]
    if ip != 0:   # the counter learns the outcome (one step towards it), then the history
        c = ix(counter(S, ip))
        S[c] = min(S[c] + 1, 3) if inside else max(S[c] - 1, 0)
        S[SC.BP_HIST] = (S[SC.BP_HIST] * 2 + inside) & ((1 << S[TP.BP_HISTORY]) - 1)
    return 0 if inside else body
