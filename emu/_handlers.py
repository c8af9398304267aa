"""One handler per op family: loads and stores, flushes, fences and the bulk copies."""
from numba import int64

from emu import _pipeline as pl
from emu.state import SC, SCTR, TP
from isa.ops import (
    COL_ADDR,
    COL_DATA,
    COL_FLAGS,
    COL_IMM,
    COL_OP,
    COL_SIZE,
    COL_SRC,
    FLAG_RMW_ADD,
    FLAG_RMW_CMPXCHG,
    FLAG_VALUE_DATA,
    Op,
)
from memmodel import _hierarchy as hier
from memmodel import _memside as mside
from memmodel import _persist as persist
from memmodel import _wc as wcb
from memmodel import cache as cm
from memmodel import media as md
from memmodel import memory as mm
from memmodel._hierarchy import K_LOAD, K_STORE
from memmodel._memside import FULL_MASK
from memmodel._persist import PK_FENCED, PK_NOW
from memmodel.jit import FRAMES, ROWS, STATE, apart, compiled, inlined, ix
from memmodel.layout import MH, MS, MT


@inlined
def load(S, addr, size, dependent, ip):
    """A LOAD of [addr, addr + size) by the instruction at `ip` (0: none)."""
    t0 = S[SC.NOW]
    if dependent and S[SC.DEP_READY] > t0:
        t0 = S[SC.DEP_READY]
    first = addr >> 6
    last = (addr + size - 1) >> 6
    done, wait = hier.demand(S, first, t0, K_LOAD, ip, addr)
    pl.stall_until(S, wait, SCTR.FILL_BUFFER)
    if last != first:   # the IP-stride prefetcher sees the load once, at its address
        got, wait = hier.demand(S, last, t0, K_LOAD, 0, 0)
        done = max(done, got)
        pl.stall_until(S, wait, SCTR.FILL_BUFFER)
    pl.issue(S, 1)
    S[SC.DEP_READY] = done
    pl.rob_push(S, done)
    S[SC.LSEQ] += 1


@inlined
def store_line(S, line, n, addr):
    """`n` stores to `line`, the first beginning at byte `addr` (an RFO, then n store-buffer
    entries committing in order once the line is owned and the stores have retired)."""
    t0 = S[SC.NOW]
    ready, wait = hier.demand(S, line, t0, K_STORE, 0, addr)
    pl.stall_until(S, wait, SCTR.FILL_BUFFER)
    at = max(ready, t0 + 1, S[SC.DONE_MAX])   # pl.commit_at as of its dispatch at t0
    for _ in range(n):
        pl.sb_push(S, max(at, S[SC.SB_LAST] + S[TP.STORE_COMMIT]), SCTR.STORE_BUFFER)


@inlined
def store(S, addr, size):
    first = addr >> 6
    last = (addr + size - 1) >> 6
    store_line(S, first, 1, addr)
    if last != first:
        store_line(S, last, 1, last << 6)
    pl.issue(S, 1)


@compiled
def locked_rmw(S, addr, size):
    """LOCK-prefixed read-modify-write (LOCK ADD, XCHG, CMPXCHG) of [addr, addr+size): a full
    barrier (older ops complete and the store buffer drains first: SDM Vol.3A §11.10), the
    line owned, then the measured latency; younger ops wait for it."""
    pl.stall_until(S, max(S[SC.DONE_MAX], S[SC.SB_LAST]), SCTR.FENCE)
    pl.retired(S)
    t0 = S[SC.NOW]
    ready = hier.demand(S, addr >> 6, t0, K_STORE, 0, addr)[0]
    last = (addr + size - 1) >> 6
    if last != addr >> 6:
        ready = max(ready, hier.demand(S, last, t0, K_STORE, 0, last << 6)[0])
    done = max(ready, t0 + S[TP.LOCK_RMW])
    pl.issue(S, 1)
    pl.stall_until(S, done, SCTR.FENCE)
    S[SC.DEP_READY] = done
    S[SC.DONE_MAX] = max(S[SC.DONE_MAX], done)
    pl.sb_push(S, max(done, S[SC.SB_LAST] + S[TP.STORE_COMMIT]), SCTR.STORE_BUFFER)


@inlined
def movnt(S, addr, size, r):
    """A non-temporal store: it commits like a store, into a write-combining buffer (waiting
    for one to be free); a full store buffer stalls dispatch."""
    pl.sb_push(S, wcb.movnt_bytes(S, addr, size, r, pl.commit_at(S)), SCTR.STORE_BUFFER)


@inlined
def store_imm(S, ops, i):
    """The immediate whose bytes store i writes (COL_DATA -1): with FLAG_VALUE_DATA, plus
    the last recorded value."""
    if ops[i, COL_FLAGS] & FLAG_VALUE_DATA:
        return ops[i, COL_IMM] + S[SC.VAL]
    return ops[i, COL_IMM]


@inlined
def store_data(S, pt, frames, ops, data, i, addr, size):
    if ops[i, COL_DATA] >= 0:
        mm.write_bytes(S, pt, frames, addr, data, ops[i, COL_DATA], size)
    else:
        mm.write_imm(S, pt, frames, addr, store_imm(S, ops, i), size)


@inlined
def store_data_in(frames, fd, opf, r, data, addr, size):
    """store_data of a store within one page, whose frame fd the caller knows; `opf`: the
    op array flat, the store's row at r (a constant stride, no multiply by a loaded one)."""
    od = addr & (mm.PAGE_BYTES - 1)
    at = opf[ix(r + COL_DATA)]
    if at >= 0:
        mm.bytes_in(frames, fd, od, data, at, size)
    else:
        mm.imm_in(frames, fd, od, opf[ix(r + COL_IMM)], 0, size)


@inlined
def write_memory(S, pt, frames, ops, data, i, addr, size):
    """With functional memory, op i's bytes land at [addr, addr+size), and under eADR they
    are on their way to the persistence domain (a cached store is durable there)."""
    if S[MT.FUNCTIONAL]:
        store_data(S, pt, frames, ops, data, i, addr, size)
        persist.eadr_store(S, addr, size)


@compiled
def rmw_memory(S, pt, frames, ops, data, i, addr, size):
    """Functional memory's side of LOCK_RMW i (the op is one atomic step: the scheduler runs
    no other core's op, nor lands a store, inside it): its old value (of a kind's or a
    recorded op's 1, 2, 4 or 8 bytes) read, the new one written. Returns (old value,
    whether it wrote: a CMPXCHG that found another value than SRC writes nothing)."""
    flags = ops[i, COL_FLAGS]
    old = mm.read_value(S, pt, frames, addr, min(size, 8))
    if flags & FLAG_RMW_CMPXCHG:
        want = ops[i, COL_SRC]
        if size < 8:
            want &= (1 << (8 * size)) - 1
        if old != want:
            return old, False
        mm.write_imm(S, pt, frames, addr, ops[i, COL_IMM], size)
        persist.eadr_store(S, addr, size)
    elif flags & FLAG_RMW_ADD:   # write_imm writes `size` bytes: the sum wraps as LOCK XADD's
        mm.write_imm(S, pt, frames, addr, old + ops[i, COL_IMM], size)
        persist.eadr_store(S, addr, size)
    else:
        write_memory(S, pt, frames, ops, data, i, addr, size)
    return old, True


@inlined
def flush(S, line, kind, r):
    """CLFLUSH (ordered among themselves), CLFLUSHOPT or CLWB (overlapping until a fence);
    r: the line's region, or -1."""
    # it commits from the store buffer like a store: once retired, after older stores
    now = max(S[SC.NOW], S[SC.DONE_MAX], S[SC.SB_LAST])
    dirty = hier.evict_everywhere(S, line, kind == Op.CLWB)
    if kind == Op.CLFLUSH:
        start = max(now, S[SC.CLFLUSH_CHAIN])
        done = start + S[TP.CLFLUSH]
        if dirty:  # CLFLUSH is ordered with stores: durable once done (PMDK drains no fence)
            done = max(done, mside.mem_write(S, r, line, FULL_MASK, start, PK_NOW))
        S[SC.CLFLUSH_CHAIN] = done
        pl.sb_push(S, done, SCTR.FLUSH)
    else:
        start = max(now, S[SC.FLUSH_UNIT])
        cost = S[TP.CLWB] if kind == Op.CLWB else S[TP.CLFLUSHOPT]
        S[SC.FLUSH_UNIT] = start + cost
        done = start + cost
        if dirty:  # guaranteed durable only after the next fence
            done = max(done, mside.mem_write(S, r, line, FULL_MASK, start, PK_FENCED))
        if done > S[MS.WB_PENDING]:
            S[MS.WB_PENDING] = done
        pl.sb_push(S, start + cost, SCTR.FLUSH)
    pl.issue(S, 1)



@compiled
def rfo_ahead(S, ops, i, n):
    """Before the flush at op i - 1 goes to the memory side, the RFOs of the younger stores
    ops[i:] in the store buffer (up to core.rfo_ahead_stores of them) go out, each once a
    line fill buffer is free, if that is no later than the flush starts. A store's RFO
    leaves once its address is known and an LFB is free, before older stores commit
    (the key's source); but the ops are modelled one after another, and a flush's
    write-back, timed at its start, would otherwise take the media before younger RFOs the
    core sent earlier. The scan passes over SITE markers and stops at an op other than a plain
    store or a flush (a fence orders them) and at a store outside the region checked last (its
    access is not known to be allowed). The line is owned, not yet written: the store itself
    marks it dirty."""
    left = S[TP.RFO_AHEAD]
    by = max(S[SC.NOW], S[SC.DONE_MAX], S[SC.SB_LAST])   # the flush's start (flush())
    seen = 0
    for j in range(i, n):
        if seen == S[TP.SB] or left <= 0:
            return
        op = ops[j, COL_OP]
        if op == Op.SITE:   # costs nothing: a profiled program must run as the plain one
            continue
        seen += 1
        if op == Op.CLWB or op == Op.CLFLUSHOPT or op == Op.CLFLUSH:
            continue
        addr, size = ops[j, COL_ADDR], ops[j, COL_SIZE]
        if op != Op.STORE or ops[j, COL_FLAGS] != 0 or size <= 0 or \
                addr < S[SC.REG_LO] or addr + size > S[SC.REG_HI]:
            return
        for line in range(addr >> 6, ((addr + size - 1) >> 6) + 1):
            if cm.lookup(S, 0, line) < 0:
                t = max(S[SC.NOW], hier.first_free(S, S[MH.LFB]))
                if t > by:
                    return
                hier.demand_miss(S, line, t, K_STORE, 0, 0)
                b = cm.lookup(S, 0, line)
                cm.set_flags(S, b, cm.flags(S, b) & ~cm.F_DIRTY)
                cm.count(S, 0, cm.CC.STORE_HITS, -1)   # the store's own L1 hit: one access
                left -= 1


# Lines of lookahead for the host-cache hints of bulk ops: the LLC's state of each line is
# a host cache miss (its sets span megabytes), the other levels' are host-cached.


BULK_AHEAD = 4


@apart(STATE, ROWS, FRAMES, int64, int64, int64)
def flush_range(S, pt, frames, addr, size, kind):
    """FLUSH_RANGE: a flush of every line of [addr, addr + size), each write-back moved on
    to the persistence domain at once; region and pt row looked up once a page."""
    page, r, row = -1, -1, -1
    for line in range(addr >> 6, ((addr + size - 1) >> 6) + 1):
        if (line << 6) >> mm.PAGE_SHIFT != page:
            page = (line << 6) >> mm.PAGE_SHIFT
            r = mm.find_region(S, line << 6)
            row = mm.page_row(S, line << 6)
        cm.prefetch_set(S, S[MT.LEVELS] - 1, line + BULK_AHEAD)   # found there: invalidated
        pl.rob_gate(S, 0)
        flush(S, line, kind, r)
        if S[MS.PQ_COUNT]:
            persist.persist_queue(S, pt, frames, page, row)


@inlined
def fence_cost(S, cycles):
    """A fence's own execution time, after what it waited for."""
    pl.stall_until(S, S[SC.NOW] + cycles, SCTR.FENCE)


@compiled
def sfence(S):
    """Older NT stores and flushes reach the memory side first: once the store buffer has
    committed them into WC buffers and the flush machinery, those drain."""
    t = max(S[SC.NOW], S[SC.SB_LAST])
    pl.stall_until(S, max(wcb.wc_drain_all(S, t), S[MS.WB_PENDING], S[SC.CLFLUSH_CHAIN]),
                   SCTR.FENCE)
    fence_cost(S, S[TP.SFENCE])


@compiled
def lfence(S):
    """SDM: it executes once every older instruction has completed locally, and nothing
    younger executes before it completes (stores need not have committed)."""
    pl.drain_window(S, SCTR.FENCE)
    fence_cost(S, S[TP.LFENCE])


@compiled
def refill(S, ops, i, n):
    """After op i drained the window and blocked issue past itself (LFENCE; a serializing
    STAC/CLAC), the next op executes a pipeline later (TP.LFENCE_REFILL), unless it is
    itself such a fence, whose own measured cost holds that ([ILX] back-to-back LFENCE
    4.25 c). SITE markers are not instructions."""
    j = i + 1
    while j < n and ops[j, COL_OP] == Op.SITE:
        j += 1
    if j < n and ops[j, COL_OP] != Op.LFENCE and not (S[TP.STAC_SERIAL] and (
            ops[j, COL_OP] == Op.STAC or ops[j, COL_OP] == Op.CLAC)):
        pl.stall_until(S, S[SC.NOW] + S[TP.LFENCE_REFILL], SCTR.FENCE)


@compiled
def mfence(S):
    pl.stall_until(S, max(S[SC.DONE_MAX], S[SC.SB_LAST]), SCTR.FENCE)
    sfence(S)
    pl.retired(S)
    fence_cost(S, S[TP.MFENCE] - S[TP.SFENCE])


@apart(STATE, ROWS, FRAMES, int64, int64, int64, int64)
def copy(S, pt, frames, op, dst, src, n):
    """Bulk copies, expanded per destination line (sources are read line by line)."""
    if n <= 0:
        return
    nrfo = op == Op.REP_MOVSB and n >= S[TP.REP_NRFO]
    if op == Op.REP_MOVSB:
        S[SC.NOW] += S[TP.REP_START]
    functional = S[MT.FUNCTIONAL]
    prev_src = -1
    pos = 0
    # the last destination page's region, pt row and frame, whether it is under eADR, and
    # the last source page's frame (pages keep their frames and regions during a run, and
    # regions are whole pages); a destination piece never crosses a page
    dpage, r, drow, fd, eadr, spage, fs = -1, -1, -1, -1, False, -1, -1
    while pos < n:
        d = dst + pos
        k = min(64 - (d & 63), n - pos)
        s = src + pos
        cm.prefetch_tags(S, S[MT.LEVELS] - 1, (d >> 6) + BULK_AHEAD)
        if d >> mm.PAGE_SHIFT != dpage:
            dpage = d >> mm.PAGE_SHIFT
            r = mm.find_region(S, d)
            eadr = mm.reg(S, r, mm.RG.PERSIST) == mm.P_EADR
            if functional:
                drow = mm.page_row(S, d)
                fd = mm.frame_in(pt, drow, d)
        if functional:  # piece by piece, so that a write-back sees the bytes copied so far
            os_ = s & (mm.PAGE_BYTES - 1)
            if os_ + k <= mm.PAGE_BYTES:
                if s >> mm.PAGE_SHIFT != spage:
                    spage = s >> mm.PAGE_SHIFT
                    fs = mm.frame_of(S, pt, s)
                mm.move(frames, fd, d & (mm.PAGE_BYTES - 1), fs, os_, k)
            else:
                mm.copy_bytes(S, pt, frames, d, s, k)
        words = (k + 7) // 8
        loads = 1 if op == Op.REP_MOVSB else words   # a fast string: a line per load
        pl.rob_gate(S, loads)
        t0 = S[SC.NOW]
        ready = t0
        for sl in range(s >> 6, ((s + k - 1) >> 6) + 1):
            if sl != prev_src:
                got, wait = hier.demand(S, sl, t0, K_LOAD, 0, 0)
                ready = max(ready, got)
                pl.stall_until(S, wait, SCTR.FILL_BUFFER)
                prev_src = sl
                if op != Op.REP_MOVSB:  # the loop's other 8-byte loads of this line hit L1
                    cm.count(S, 0, cm.CC.LOAD_HITS, max(0, min(words, 8) - 1))
        pl.rob_push(S, ready)
        S[SC.LSEQ] += loads
        S[SC.DEP_READY] = max(S[SC.DEP_READY], ready) if pos else ready   # the data copied
        line = d >> 6
        if op == Op.NT_COPY:
            acc = wcb.movnt_bytes(S, d, k, r, pl.commit_at(S))
            for _ in range(words):   # one MOVNTI each
                pl.sb_push(S, max(acc, S[SC.SB_LAST] + S[TP.STORE_COMMIT]), SCTR.STORE_BUFFER)
            pl.issue(S, words * (1 + S[TP.MOVNT]))
        elif op == Op.REP_MOVSB:
            if nrfo and k == 64:
                hier.own_line(S, line, t0)
                pl.sb_push(S, pl.commit_at(S), SCTR.STORE_BUFFER)
            else:
                store_line(S, line, 1, d)
            f = S[SC.REP_FRAC] + S[TP.REP_LINE_FP] * k // 64
            S[SC.NOW] += f // md.FP
            S[SC.REP_FRAC] = f % md.FP
        else:
            store_line(S, line, words, d)
            cm.count(S, 0, cm.CC.STORE_HITS, words - 1)
            pl.issue(S, 2 * words)
        if functional:
            if op != Op.NT_COPY and eadr:  # persist.eadr_store(S, d, k): d..d+k is in one line
                persist.pq_push(S, d >> 6, FULL_MASK, PK_NOW)
            if S[MS.PQ_COUNT]:
                persist.persist_queue(S, pt, frames, dpage, drow)
        pos += k
