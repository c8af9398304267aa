"""The compiled run loop: executes a whole Program over the machine state in one call,
dispatching each op to its handler (emu._handlers, emu._speculation, memmodel)."""
from numba import boolean, int64

from emu import _checks as ck
from emu import _fast as fast
from emu import _handlers as hd
from emu import _pipeline as pl
from emu import _speculation as spec
from emu.state import SC, SCTR, ST_OK, TP
from isa.ops import (
    COL_ADDR,
    COL_FLAGS,
    COL_IMM,
    COL_OP,
    COL_SIZE,
    COL_SRC,
    FLAG_DEPENDENT,
    FLAG_INDEXED,
    FLAG_MASKED,
    HOLDS_ROB,
    VALUE_USE,
    Op,
)
from memmodel import _hierarchy as hier
from memmodel import _persist as persist
from memmodel import memory as mm
from memmodel.jit import BYTES, FRAMES, ROWS, STATE, WORDS, apart, compiled, ix
from memmodel.layout import MS, MT


# apart: the cores' scheduler calls it by symbol instead of compiling a copy of its code
@apart(STATE, ROWS, FRAMES, ROWS, BYTES, WORDS, int64, WORDS, WORDS, boolean, int64)
def run(S, pt, frames, ops, data, sites, start, res, out, plain, stop):
    """Execute ops[start:stop], a SITE op's immediate k marking the machine's site sites[k]
    (ops are the program's, never rewritten; the ops from `stop` on are still the ones the
    core looks ahead at, so that a run resumed at `stop` goes on as one run would).
    out[0] = status (ST_OK when all ran), out[1] = op index reached (the next to run);
    on a stop out[2:4] say why. The op that stopped the run has had no effect. res[i] gets
    the bytes an exception-table op i left undone (res is as long as ops when any op has
    FLAG_EXTABLE or FLAG_MCSAFE). `plain`: whether plain loads and stores may take
    _plain_run (the results are the same either way; a test holds the two paths equal), which
    runs to the end: only when stop is len(ops)."""
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
        ok = size
        if not ck.fast_ok(S, op, d0, d1, s0, s1):
            ok = ck.precheck(S, pt, frames, ops, i, d0, d1, s0, s1, out)
            if ok < 0:
                return
        if op != Op.SITE:   # a site's ops are the program's, not the profiler's marks
            S[SC.OPS] += 1
        if HOLDS_ROB[ix(op)]:
            pl.rob_gate(S, 1 if op == Op.LOAD else 0)
        if op == Op.LOAD:
            if ok == size:
                hd.load(S, addr, size, flags & (FLAG_DEPENDENT | FLAG_INDEXED | FLAG_MASKED),
                        0 if flags & FLAG_MASKED else ops[i, COL_SRC])   # a masked one's: base
                if functional and i + 1 < n and ops[i + 1, COL_FLAGS] & VALUE_USE:
                    S[SC.VAL] = mm.read_value(S, pt, frames, addr, min(size, 8))
        elif op == Op.STORE:
            if ok == size:
                hd.store(S, addr, size)
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
                hd.write_memory(S, pt, frames, ops, data, i, addr, size)
        elif op == Op.SITE:
            pl.site_close(S, S[SC.NOW])
            S[SC.SITE] = S[MS.TAG] = sites[ix(ops[i, COL_IMM])]
        elif op == Op.BRANCH:
            i += spec.branch(S, pt, frames, ops, i)
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
def run_cores(B, fixed_words, pt, frames, ops, data, sites, res, begin, pos, out):
    """Run one program per core over the state B (core k's view: B[k * fixed_words:]), always
    the next op of the core whose clock (SC.NOW) is earliest, the lowest core first on a tie,
    so that the cores' accesses happen in the order of simulated time. Core k's program is
    ops[begin[k, 0]:begin[k + 1, 0]], its data, sites and undone bytes start at data[begin[k,
    1]], sites[begin[k, 2]] and res[begin[k, 3]] (res empty where it has no exception-table
    ops: begin[k, 3] = -1); pos[k] is its next op, kept between calls. out[0:4] as run()'s,
    out[4] the core that stopped (ST_OK: every program ran)."""
    cores = pos.shape[0]
    while True:
        k = -1
        for c in range(cores):
            if pos[c] < begin[c + 1, 0] - begin[c, 0] and (
                    k < 0 or B[c * fixed_words + SC.NOW] < B[k * fixed_words + SC.NOW]):
                k = c
        if k < 0:
            out[0] = ST_OK
            return
        o0, o1 = begin[k, 0], begin[k + 1, 0]
        r0 = begin[k, 3]
        run(B[k * fixed_words:], pt, frames, ops[o0:o1], data[begin[k, 1]:],
            sites[begin[k, 2]:], pos[k], res[r0:r0 + o1 - o0] if r0 >= 0 else res[:0], out,
            False, pos[k] + 1)
        out[4] = k
        if out[0] != ST_OK:
            return
        pos[k] = out[1]
