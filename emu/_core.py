"""The compiled run loop: executes a whole Program over the machine state in one call,
dispatching each op to its handler (emu._handlers, emu._speculation, memmodel)."""
from numba import boolean, int64

from emu import _checks as ck
from emu import _fast as fast
from emu import _handlers as hd
from emu import _pipeline as pl
from emu import _speculation as spec
from emu import _tso as tso_
from emu.state import SC, SCTR, ST_NEED_PAGES, ST_OK, ST_WAIT, TP
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
    FLAG_RECORD,
    FLAG_SPIN,
    HOLDS_ROB,
    RMW_KINDS,
    SB_EMPTY,
    VALUE_USE,
    Op,
)
from memmodel import _hierarchy as hier
from memmodel import _persist as persist
from memmodel import memory as mm
from memmodel.jit import BYTES, FRAMES, ROWS, STATE, WORDS, apart, compiled, ix
from memmodel.layout import MS, MT


# apart: the cores' scheduler calls it by symbol instead of compiling a copy of its code
@apart(STATE, ROWS, FRAMES, ROWS, BYTES, WORDS, int64, WORDS, WORDS, boolean, int64, boolean)
def run(S, pt, frames, ops, data, sites, start, res, out, plain, stop, tso):
    """Execute ops[start:stop], a SITE op's immediate k marking the machine's site sites[k]
    (ops are the program's, never rewritten; the ops from `stop` on are still the ones the
    core looks ahead at, so that a run resumed at `stop` goes on as one run would).
    out[0] = status (ST_OK when all ran), out[1] = op index reached (the next to run);
    on a stop out[2:4] say why. The op that stopped the run has had no effect, but for a
    WAIT's (ST_WAIT): its failed check, and with `tso` its PAUSE, took their time. res[i]
    gets the bytes an exception-table op i left undone, or the value a FLAG_RECORD op i
    read (res is as long as ops when any op has FLAG_EXTABLE, FLAG_MCSAFE or FLAG_RECORD).
    `plain`: whether plain loads and stores may take _plain_run (the results are the same
    either way; a test holds the two paths equal), which runs to the end: only when stop is
    len(ops). `tso`: one of several cores, whose stores wait in its pending ring (emu._tso)
    until the scheduler lands them."""
    out[0] = ST_OK
    functional = S[MT.FUNCTIONAL]
    n = ops.shape[0]
    opf = ops.reshape(ops.size)
    i = start
    # after _plain_run took no op, the next few bypass it; it runs to n, so not before stop
    skip = 0 if plain and stop == n else n
    while i < stop:
        op = ops[i, COL_OP]
        if (op == Op.LOAD or op == Op.STORE) and skip == 0:
            j = fast.plain_run(S, pt, frames, ops, data, i, n)
            if j == n:
                i = n
                break
            if j == i:
                skip = fast.PLAIN_RUN_BACKOFF
            i = j
        elif skip > 0:
            skip -= 1
        out[1] = i
        if i + fast.PF_AHEAD < n:
            fast.host_prefetch_op(S, opf, i + fast.PF_AHEAD)
        op = ops[i, COL_OP]
        flags = ops[i, COL_FLAGS]
        addr = ops[i, COL_ADDR]
        size = ops[i, COL_SIZE]
        if op == Op.LOAD and flags & (FLAG_INDEXED | FLAG_MASKED):
            addr = spec.load_address(S, ops, i, S[SC.VAL], S[SC.MASK])
            d0, d1, s0, s1 = addr, addr + size, 0, 0
        else:
            d0, d1, s0, s1 = ck.op_ranges(ops, i)
        if tso and (op == Op.MFENCE or op == Op.LOCK_RMW) and tso_.count(S) and \
                S[SC.NOW] < S[SC.SB_LAST]:
            # it waits for its stores to drain (as it would inside), and runs once the
            # scheduler has landed them at their drain cycles, other cores' ops between
            pl.stall_until(S, S[SC.SB_LAST], SCTR.FENCE)
            out[1] = i
            return
        ok = size
        if not ck.fast_ok(S, op, d0, d1, s0, s1):
            ok = ck.precheck(S, pt, frames, ops, i, d0, d1, s0, s1, out)
            if ok < 0:
                return
        if op != Op.SITE:   # a site's ops are the program's, not the profiler's marks
            S[SC.OPS] += 1
        if tso and SB_EMPTY[ix(op)]:
            tso_.flush(S, pt, frames, data)
        if HOLDS_ROB[ix(op)]:
            pl.rob_gate(S, 1 if op == Op.LOAD else 0)
        if op == Op.LOAD:
            if ok == size:
                hd.load(S, addr, size, flags & (FLAG_DEPENDENT | FLAG_INDEXED | FLAG_MASKED),
                        0 if flags & FLAG_MASKED else ops[i, COL_SRC])   # a masked one's: base
                if functional and (flags & FLAG_RECORD or (
                        i + 1 < n and ops[i + 1, COL_FLAGS] & VALUE_USE)):
                    S[SC.VAL] = tso_.read_value(S, pt, frames, data, addr, min(size, 8)) \
                        if tso else mm.read_value(S, pt, frames, addr, min(size, 8))
                    if flags & FLAG_RECORD:
                        res[i] = S[SC.VAL]
        elif op == Op.STORE:
            if ok == size:
                hd.store(S, addr, size)
                if tso:   # it lands when it leaves the store buffer
                    tso_.push(S, pt, frames, data, S[SC.SB_LAST], addr, size, ops[i, COL_DATA],
                              hd.store_imm(S, ops, i))
                else:
                    hd.write_memory(S, pt, frames, ops, data, i, addr, size)
        elif op == Op.MOVNT:
            if ok == size:
                hd.movnt(S, addr, size, -1)
                pl.issue(S, S[TP.MOVNT])
                if functional:
                    hd.store_data(S, pt, frames, ops, data, i, addr, size)
        elif op == Op.CLFLUSH or op == Op.CLFLUSHOPT or op == Op.CLWB:
            if S[TP.RFO_AHEAD] > 0:
                hd.rfo_ahead(S, ops, i + 1, n)
            hd.flush(S, addr >> 6, op, -1)
        elif op == Op.FLUSH_RANGE:
            if size > 0:
                hd.flush_range(S, pt, frames, addr, size, ops[i, COL_IMM])
        elif op == Op.SFENCE:
            hd.sfence(S)
        elif op == Op.LFENCE:
            hd.lfence(S)
            hd.refill(S, ops, i, n)
        elif op == Op.MFENCE:
            hd.mfence(S)
        elif op == Op.STAC or op == Op.CLAC:
            S[SC.AC] = 1 if op == Op.STAC else 0
            if S[TP.SMAP]:
                if S[TP.STAC_SERIAL]:
                    pl.drain_window(S, SCTR.SMAP)
                pl.stall_until(S, S[SC.NOW] + (S[TP.STAC] if op == Op.STAC else S[TP.CLAC]),
                               SCTR.SMAP)
                if S[TP.STAC_SERIAL]:
                    hd.refill(S, ops, i, n)
        elif op == Op.REP_MOVSB or op == Op.NT_COPY or op == Op.CAREFUL_COPY:
            if flags & FLAG_DEPENDENT:   # its addresses came from the previous load's data
                pl.stall_until(S, S[SC.DEP_READY], SCTR.DEPENDENCY)
            hd.copy(S, pt, frames, op, addr, ops[i, COL_SRC], ok)
        elif op == Op.WORK:
            # the program's non-memory work is one chain: it goes on where the last WORK
            # ended, and once the previous load's data is there if it computes on it
            start = max(S[SC.NOW], S[SC.WORK_END])
            if flags & FLAG_DEPENDENT:
                start = max(start, S[SC.DEP_READY])
            pl.work(S, ops[i, COL_IMM], start)
            S[SC.WORK_END] = start + ops[i, COL_IMM]
        elif op == Op.LOCK_RMW:
            if ok == size:
                hd.locked_rmw(S, addr, size)
                if functional and flags & (RMW_KINDS | FLAG_RECORD):
                    old, done = hd.rmw_memory(S, pt, frames, ops, data, i, addr, size)
                    S[SC.VAL] = old
                    if flags & FLAG_RECORD:
                        res[i] = old
                    if not done and flags & FLAG_SPIN:   # tried again after a PAUSE
                        spin(S, tso, i, addr, old, out)
                        return
                else:
                    hd.write_memory(S, pt, frames, ops, data, i, addr, size)
        elif op == Op.WAIT:
            if ok == size:
                hd.load(S, addr, size, 0, 0)
                v = tso_.read_value(S, pt, frames, data, addr, size) if tso else \
                    mm.read_value(S, pt, frames, addr, size)
                mask = ops[i, COL_SRC]
                if size < 8:
                    mask &= (1 << (8 * size)) - 1
                same = (v & mask) == (ops[i, COL_IMM] & mask)
                if (((v - ops[i, COL_IMM]) & mask) > (mask >> 1) if flags & FLAG_AT_LEAST
                        else same if flags & FLAG_NOT_EQUAL else not same):
                    spin(S, tso, i, addr, v, out)
                    return
                S[SC.VAL] = v
                if flags & FLAG_RECORD:
                    res[i] = v
        elif op == Op.SITE:
            pl.site_close(S, S[SC.NOW])
            S[SC.SITE] = S[MS.TAG] = sites[ix(ops[i, COL_IMM])]
        elif op == Op.BRANCH:
            i += spec.branch(S, pt, frames, data, ops, i)
        elif op == Op.PEER_WRITE:
            for line in range(addr >> 6, ((addr + size - 1) >> 6) + 1):
                hier.peer_write(S, line, S[SC.NOW])
            hd.write_memory(S, pt, frames, ops, data, i, addr, size)   # eADR: the peer's cache too
        elif op == Op.PEER_READ:
            for line in range(addr >> 6, ((addr + size - 1) >> 6) + 1):
                hier.peer_read(S, line, S[SC.NOW])
        elif op == Op.INDEX_MASK:
            S[SC.MASK], S[SC.DEP_READY] = spec.index_mask(S, ops, i, S[SC.NOW], S[SC.DEP_READY],
                                                          S[SC.VAL])
            pl.issue(S, 3)   # cmp, sbb, and
        if S[SC.FAULT] != ST_OK:
            ck.fixup(S, pt, frames, ops, i, ok, res)
        if functional:
            if S[MS.PQ_COUNT]:
                persist.persist_queue(S, pt, frames, -1, -1)
            if (op == Op.SFENCE or op == Op.MFENCE) and S[MS.PEND_COUNT]:
                persist.apply_pending(S, pt, frames)
        i += 1
    out[1] = i


@compiled
def spin(S, tso, i, addr, found, out):
    """Op i (a WAIT or a spinning CMPXCHG) found `found` at `addr`, not what it waits for: a
    PAUSE (with several cores: with one, no other core can change it), and out says so
    (ST_WAIT) with op i still to run."""
    if tso:
        pl.stall_until(S, S[SC.NOW] + tso_.pause_cycles(S), SCTR.DEPENDENCY)
    out[0], out[1], out[2], out[3] = ST_WAIT, i, addr, found


@compiled
def run_cores(B, fixed_words, pt, frames, ops, data, sites, res, begin, pos, spinning, out):
    """Run one program per core over the state B (core k's view: B[k * fixed_words:]), always
    the next op of the core whose clock (SC.NOW) is earliest, the lowest core first on a tie,
    so that the cores' accesses happen in the order of simulated time. Core k's program is
    ops[begin[k, 0]:begin[k + 1, 0]], its data, sites and recorded or undone words start at
    data[begin[k, 1]], sites[begin[k, 2]] and res[begin[k, 3]] (res empty where it has none:
    begin[k, 3] = -1); pos[k] is its next op, kept between calls; spinning[k] is 1 while
    core k's last check failed and memory has not changed since (zeros at the start). out[0:4]
    as run()'s, out[4] the core that stopped (ST_OK: every program ran).
    With several cores and functional memory (x86-TSO, emu._tso): before an op runs, every
    core's stores that have left their store buffer by its clock land in memory, in drain
    order; at the end (or a stop other than for pages) all of them do. A WAIT that fails
    spins (its core's clock moves a PAUSE on); when every core left is spinning and no store
    is pending, none can ever go on: ST_WAIT, out[1:4] the op of core out[4] last tried."""
    cores = pos.shape[0]
    tso = cores > 1 and B[MT.FUNCTIONAL] != 0
    while True:
        k = -1
        for c in range(cores):
            if pos[c] < begin[c + 1, 0] - begin[c, 0] and (
                    k < 0 or B[c * fixed_words + SC.NOW] < B[k * fixed_words + SC.NOW]):
                k = c
        if k < 0:
            out[0] = ST_OK
            break
        if tso and tso_.apply_until(B, fixed_words, pt, frames, data, begin,
                                    B[k * fixed_words + SC.NOW]):
            spinning[:] = 0
        o0, o1 = begin[k, 0], begin[k + 1, 0]
        r0 = begin[k, 3]
        run(B[k * fixed_words:], pt, frames, ops[o0:o1], data[begin[k, 1]:],
            sites[begin[k, 2]:], pos[k], res[r0:r0 + o1 - o0] if r0 >= 0 else res[:0], out,
            False, pos[k] + 1, tso)
        out[4] = k
        if out[0] == ST_WAIT:
            spinning[k] = 1
            if _stuck(B, fixed_words, begin, pos, spinning, tso):
                break
            continue
        if out[0] != ST_OK:
            break
        spinning[:] = 0
        pos[k] = out[1]
    if tso and out[0] != ST_NEED_PAGES:   # the buffers drain at the end: a legal last step
        tso_.apply_until(B, fixed_words, pt, frames, data, begin, tso_.NONE - 1)


@compiled
def _stuck(B, fixed_words, begin, pos, spinning, tso):
    """Whether every core with ops left spins on a value no store can change any more: none
    is pending in any core's ring (with `tso`; without, stores land at once)."""
    for c in range(pos.shape[0]):
        if pos[c] < begin[c + 1, 0] - begin[c, 0] and not spinning[c]:
            return False
        if tso and tso_.count(B[c * fixed_words:]):
            return False
    return True
