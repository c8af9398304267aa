"""The register-resident path for plain loads and stores: the pipeline scalars, the L1's use
stamp and two memo entries in registers, its L1 steps memmodel._l1's (pinned to the general
path by tests/test_fast_path.py)."""
from numba import int64

from emu import _handlers as hd
from emu import _pipeline as pl
from emu.state import EH, SC, TP
from isa.ops import (
    COL_ADDR,
    COL_FLAGS,
    COL_OP,
    COL_SIZE,
    COL_SRC,
    FLAG_DEPENDENT,
    N_COLS,
    VALUE_USE,
    Op,
)
from memmodel import _hierarchy as hier
from memmodel import _l1 as l1
from memmodel import _persist as persist
from memmodel import cache as cm
from memmodel import memory as mm
from memmodel._hierarchy import K_LOAD, K_STORE
from memmodel.jit import BYTES, FRAMES, ROWS, STATE, apart, host_prefetch, inlined, ix
from memmodel.layout import MH, MS, MT

PF_AHEAD = 16   # ops of lookahead for host prefetch hints of the sets an op will touch
OPS_AHEAD = 64  # ... and of the op array itself, which streams from host memory


PLAIN_RUN_BACKOFF = 8   # a guess; any value gives the same results


@inlined
def host_prefetch_op(S, opf, j):
    """Host-cache hint for op j (a few ops ahead; `opf`: the op array flat, so a row is a
    constant multiple): if it is a load or store of a new line, start loading its sets'
    state below L1 (L1's is small and stays in the host cache)."""
    r = j * N_COLS
    op = opf[ix(r + COL_OP)]
    if op == Op.LOAD or op == Op.STORE:
        line = opf[ix(r + COL_ADDR)] >> 6
        if line != opf[ix(r - N_COLS + COL_ADDR)] >> 6 and \
                line != opf[ix(r - 2 * N_COLS + COL_ADDR)] >> 6:
            for lvl in range(1, S[MT.LEVELS]):
                cm.prefetch_set(S, lvl, line)


@inlined
def _load_checked(opf, r, i, n, flags, functional):
    """Whether load i (row r, `flags`) takes the general path: flags beyond DEPENDENT, or
    functional data read for the op after it, which uses the value (isa.ops.VALUE_USE)."""
    return flags & ~FLAG_DEPENDENT or (functional and i + 1 < n
                                       and opf[ix(r + N_COLS + COL_FLAGS)] & VALUE_USE)


@inlined
def _off_line(addr, size, lo, hi):
    """Whether [addr, addr + size) crosses a line or leaves the region [lo, hi)."""
    return (addr & 63) + size > 64 or addr < lo or addr + size > hi


@inlined
def _load_tail(S, rob, lb, rseq, rlseq, rdone, rops, upc, site_start, ready, now, frac, seq,
               w_issue, lseq, rh, rc, rs, dmax):
    """A load's issue, and its window entry until `ready`. Returns the scalars it changes."""
    before = now
    now, frac, seq = pl.issue_v(now, frac, seq, 1, upc)
    if now != before:
        w_issue += pl.waited(before, now, site_start)
    now, rh, rc, rs, dmax = pl.rob_push_v(S, rob, lb, rseq, rlseq, rdone, rops, ready, now,
                                          seq, lseq, rh, rc, rs, dmax)
    return now, frac, seq, w_issue, rh, rc, rs, dmax


@inlined
def _store_tail(S, sbn, sb, commit, upc, site_start, ready, t0, now, frac, seq, dmax, sh, sc,
                sl, end, w_sb, w_issue):
    """A store's entry in the store buffer (t0: the cycle it issued, before a miss's stall:
    pl.commit_at) and its issue. Returns the scalars it changes."""
    before = now
    now, sh, sc, sl, end = pl.sb_push_v(S, sbn, sb, max(ready, t0 + 1, dmax, sl + commit),
                                        now, sh, sc, sl, end)
    w_sb += pl.waited(before, now, site_start)
    before = now
    now, frac, seq = pl.issue_v(now, frac, seq, 1, upc)
    if now != before:
        w_issue += pl.waited(before, now, site_start)
    return now, frac, seq, sh, sc, sl, end, w_sb, w_issue


@inlined
def _store_data(S, pt, frames, opf, r, data, addr, size, page_ok, fr_ok):
    """A store's bytes, in page page_ok, whose frame `fr_ok` is looked up once (-1: not
    yet). Returns the frame."""
    if fr_ok < 0:
        fr_ok = mm.frame_of(S, pt, page_ok << 12)
    hd.store_data_in(frames, fr_ok, opf, r, data, addr, size)
    return fr_ok


@inlined
def _plain(opf, r, i, n, op, flags, addr, size, functional, page_ok, lo, hi):
    """Whether op i (row r) is a load or store this path takes: within a line of the region
    [lo, hi) and, for a store, in the page page_ok; L1's block is checked apart."""
    if op == Op.LOAD:
        if _load_checked(opf, r, i, n, flags, functional):
            return False
    elif op != Op.STORE or flags or (functional and addr >> 12 != page_ok):
        return False
    return not _off_line(addr, size, lo, hi)


@inlined
def _copy_pairs(S, pt, frames, opf, data, i, n, ml0, ms0, mb0, ml1, ms1, mb1, lo, hi,
                functional, page_ok, fr_ok, hit, policy, repl, ways, flg, rdy, rob, lb, rseq,
                rlseq, rdone, rops, upc, sbn, sb, commit, site_start, stamp, now, frac, seq,
                lseq, dep, rh, rc, rs, dmax, sh, sc, sl, end, w_sb, w_issue):
    """plain_run's copy words from op i on: a load of line ml1 then a store to line ml0 (L1
    holds both, the store before set ml0's dirty flag). Each pair's two hits swap the lines
    used last twice (the general path's order), which leaves them as they are. Returns the
    op index and the scalars it changes. (The load's steps are written out here and in
    plain_run's loop over one line's loads: one inlined helper for both executed more
    instructions per op on every trace, benchmarks/instructions.py's count; see
    docs/performance.md. That loop stays in plain_run's body: as an inlined helper of its
    own, LLVM kept plain_run's loop invariants in stack slots around it.)"""
    while i + 1 < n:
        r = i * N_COLS
        rt = r + N_COLS   # the store's row
        flags = opf[ix(r + COL_FLAGS)]
        addr = opf[ix(r + COL_ADDR)]
        size = opf[ix(r + COL_SIZE)]
        to = opf[ix(rt + COL_ADDR)]
        to_size = opf[ix(rt + COL_SIZE)]
        if opf[ix(r + COL_OP)] != Op.LOAD or addr >> 6 != ml1 or \
                opf[ix(rt + COL_OP)] != Op.STORE or to >> 6 != ml0 or \
                not _plain(opf, r, i, n, Op.LOAD, flags, addr, size, functional,
                           page_ok, lo, hi) or \
                not _plain(opf, rt, i + 1, n, Op.STORE, opf[ix(rt + COL_FLAGS)], to,
                           to_size, functional, page_ok, lo, hi):
            break
        if i + OPS_AHEAD + 1 < n:
            host_prefetch(opf, ix(r + OPS_AHEAD * N_COLS))
            host_prefetch(opf, ix(rt + OPS_AHEAD * N_COLS))
        now, rh, rc, rs = pl.rob_gate_v(S, rob, lb, rseq, rlseq, rdone, rops, now, seq,
                                        lseq + 1, rh, rc, rs)
        t0 = now
        if flags and dep > t0:
            t0 = dep
        stamp, ready = l1.hit(S, policy, repl, ways, ms1, mb1, stamp, t0, hit, flg,
                              rdy, False)
        now, frac, seq, w_issue, rh, rc, rs, dmax = _load_tail(
            S, rob, lb, rseq, rlseq, rdone, rops, upc, site_start, ready, now, frac,
            seq, w_issue, lseq, rh, rc, rs, dmax)
        dep = ready
        lseq += 1
        now, rh, rc, rs = pl.rob_gate_v(S, rob, lb, rseq, rlseq, rdone, rops, now, seq,
                                        lseq, rh, rc, rs)
        t0 = now
        stamp, ready = l1.hit(S, policy, repl, ways, ms0, mb0, stamp, t0, hit, flg,
                              rdy, False)
        now, frac, seq, sh, sc, sl, end, w_sb, w_issue = _store_tail(
            S, sbn, sb, commit, upc, site_start, ready, t0, now, frac, seq, dmax, sh,
            sc, sl, end, w_sb, w_issue)
        if functional:
            fr_ok = _store_data(S, pt, frames, opf, rt, data, to, to_size, page_ok,
                                fr_ok)
        i += 2
    return i, stamp, now, frac, seq, lseq, dep, rh, rc, rs, dmax, sh, sc, sl, end, w_sb, \
        w_issue, fr_ok


@apart(STATE, ROWS, FRAMES, ROWS, BYTES, int64, int64)
def plain_run(S, pt, frames, ops, data, i, n):
    """Execute ops i.. while they are plain loads and stores within one line that need no
    check (the common case of most traces), with the pipeline scalars and the L1 use stamp
    in registers; returns the first op not executed. Each op has exactly
    the effects the general path gives it (same helpers, same order): only the loads and
    stores of S between ops are gone, whose store-to-load chains bound the general path.
    An L1 miss hands the L1 use stamp to memmodel._hierarchy.demand_miss in S."""
    functional = S[MT.FUNCTIONAL]
    lo, hi, page_ok = S[SC.REG_LO], S[SC.REG_HI], S[SC.PAGE_OK]
    # stores into an eADR region queue their lines for the persistence domain: general path
    if functional and hi > lo and mm.persistence(S, lo) == mm.P_EADR:
        page_ok = -1
    fr_ok = -1
    opf = ops.reshape(ops.size)   # rows at a constant stride: no multiply by a loaded one
    hit = cm.hit_cycles(S, 0)
    upc, commit = S[TP.UPC], S[TP.STORE_COMMIT]
    tags, flg, rdy = S[MH.TAGS], S[MH.FLAGS], S[MH.READY]
    rob, lb, rseq, rlseq, rdone = S[TP.ROB], S[TP.LB], S[EH.ROB_SEQ], S[EH.ROB_LSEQ], S[EH.ROB_DONE]
    rops, rs = S[EH.ROB_OPS], S[SC.ROB_SLOTS]
    sbn, sb = S[TP.SB], S[EH.SB]
    policy, ways, repl = cm.policy(S, 0), cm.ways(S, 0), S[MH.REPL]
    now, frac, seq = S[SC.NOW], S[SC.UOP_FRAC], S[SC.UOP_SEQ]
    rh, rc, dmax, dep, lseq = S[SC.ROB_HEAD], S[SC.ROB_COUNT], S[SC.DONE_MAX], S[SC.DEP_READY], \
        S[SC.LSEQ]
    sh, sc, sl, end = S[SC.SB_HEAD], S[SC.SB_COUNT], S[SC.SB_LAST], S[SC.END]
    stamp = S[l1.STAMP_AT]
    # memo entries of the two L1 blocks used last (a copy alternates between a source and a
    # destination line)
    ml0, ms0, mb0 = l1.recall(S)
    ml1, ms1, mb1 = -1, 0, 0
    start, now0, lseq0 = i, now, lseq
    misses0 = cm.counter(S, 0, cm.CC.LOAD_MISSES), cm.counter(S, 0, cm.CC.STORE_MISSES)
    # dispatch's waits (pl.charge) for the store buffer, fill buffers and issue bandwidth;
    # the window's is the rest of dispatch's advance within the site (at the end)
    site_start, w_sb, w_lfb, w_issue = S[SC.SITE_START], 0, 0, 0
    bad = cm.F_PREFETCHED | cm.F_TRANSIENT | cm.F_SHARED
    while i < n:
        r = i * N_COLS
        op = opf[ix(r + COL_OP)]
        flags = opf[ix(r + COL_FLAGS)]
        addr = opf[ix(r + COL_ADDR)]
        size = opf[ix(r + COL_SIZE)]
        if not _plain(opf, r, i, n, op, flags, addr, size, functional, page_ok, lo, hi):
            break
        line = addr >> 6
        fresh = line != ml0 and line != ml1   # neither of the two lines used last
        if l1.holds(S, tags, line, ml0, mb0):
            i0, b = ms0, mb0
        elif l1.holds(S, tags, line, ml1, mb1):
            i0, b = ms1, mb1
            ml1, ms1, mb1 = ml0, ms0, mb0
            ml0, ms0, mb0 = line, i0, b
        else:
            i0, b = l1.search(S, line)
            if b >= 0:
                ml1, ms1, mb1 = ml0, ms0, mb0
                ml0, ms0, mb0 = line, i0, b
        if b >= 0 and S[ix(flg + b)] & bad:
            break
        if i + OPS_AHEAD < n:
            host_prefetch(opf, ix(r + OPS_AHEAD * N_COLS))
        if fresh and i + PF_AHEAD < n:   # a new line here, a new one likely there
            host_prefetch_op(S, opf, i + PF_AHEAD)
        now, rh, rc, rs = pl.rob_gate_v(S, rob, lb, rseq, rlseq, rdone, rops, now, seq,
                                        lseq + (op == Op.LOAD), rh, rc, rs)
        t0 = now
        if op == Op.LOAD and flags and dep > t0:
            t0 = dep
        if b >= 0:
            stamp, ready = l1.hit(S, policy, repl, ways, i0, b, stamp, t0, hit, flg, rdy,
                                  op == Op.STORE)
        else:
            S[l1.STAMP_AT] = stamp   # the miss's fills advance it
            load = op == Op.LOAD   # a plain load's COL_SRC is its ip
            ready, wait = hier.demand_miss(S, line, t0, K_LOAD if load else K_STORE,
                                           opf[ix(r + COL_SRC)] if load else 0, addr)
            w_lfb += pl.waited(now, wait, site_start)
            now, stamp = max(now, wait), S[l1.STAMP_AT]
            ml1, ms1, mb1 = ml0, ms0, mb0
            _, ms0, mb0 = l1.recall(S)   # demand_miss remembered the block it filled
            ml0 = line
        if op == Op.LOAD:
            now, frac, seq, w_issue, rh, rc, rs, dmax = _load_tail(
                S, rob, lb, rseq, rlseq, rdone, rops, upc, site_start, ready, now, frac, seq,
                w_issue, lseq, rh, rc, rs, dmax)
            dep = ready
            lseq += 1
        else:
            now, frac, seq, sh, sc, sl, end, w_sb, w_issue = _store_tail(
                S, sbn, sb, commit, upc, site_start, ready, t0, now, frac, seq, dmax, sh, sc,
                sl, end, w_sb, w_issue)
            if functional:
                fr_ok = _store_data(S, pt, frames, opf, r, data, addr, size, page_ok, fr_ok)
        if b < 0 and functional and S[MS.PQ_COUNT]:   # a miss wrote a dirty victim back
            persist.persist_queue(S, pt, frames, -1, -1)
        i += 1
        # the loads of this line after it, which L1 still holds (every path above leaves
        # ml0 == line)
        if i < n and opf[ix(r + N_COLS + COL_OP)] == Op.LOAD and \
                opf[ix(r + N_COLS + COL_ADDR)] >> 6 == line and l1.valid(S, tags, line, mb0) and \
                not S[ix(flg + mb0)] & bad:
            b, i0 = mb0, ms0
            ready_line = S[ix(rdy + b)]
            while i < n:
                r = i * N_COLS
                flags = opf[ix(r + COL_FLAGS)]
                addr = opf[ix(r + COL_ADDR)]
                size = opf[ix(r + COL_SIZE)]
                if opf[ix(r + COL_OP)] != Op.LOAD or addr >> 6 != line or \
                        _off_line(addr, size, lo, hi) or \
                        _load_checked(opf, r, i, n, flags, functional):
                    break
                if i + OPS_AHEAD < n:
                    host_prefetch(opf, ix(r + OPS_AHEAD * N_COLS))
                now, rh, rc, rs = pl.rob_gate_v(S, rob, lb, rseq, rlseq, rdone, rops, now, seq,
                                                lseq + 1, rh, rc, rs)
                t0 = now
                if flags and dep > t0:
                    t0 = dep
                stamp = l1.use(S, policy, repl, ways, i0, b, stamp)
                ready = max(t0 + hit, ready_line)
                now, frac, seq, w_issue, rh, rc, rs, dmax = _load_tail(
                    S, rob, lb, rseq, rlseq, rdone, rops, upc, site_start, ready, now, frac,
                    seq, w_issue, lseq, rh, rc, rs, dmax)
                dep = ready
                lseq += 1
                i += 1
        # a copy's words after a store: a load of the line used before it, then a store to
        # its line, while L1 holds both
        elif op == Op.STORE and i + 1 < n and ml1 >= 0 and l1.valid(S, tags, ml0, mb0) and \
                l1.valid(S, tags, ml1, mb1) and not (S[ix(flg + mb0)] | S[ix(flg + mb1)]) & bad:
            i, stamp, now, frac, seq, lseq, dep, rh, rc, rs, dmax, sh, sc, sl, end, w_sb, \
                w_issue, fr_ok = _copy_pairs(
                    S, pt, frames, opf, data, i, n, ml0, ms0, mb0, ml1, ms1, mb1, lo, hi,
                    functional, page_ok, fr_ok, hit, policy, repl, ways, flg, rdy, rob, lb, rseq,
                    rlseq, rdone, rops, upc, sbn, sb, commit, site_start, stamp, now, frac, seq,
                    lseq, dep, rh, rc, rs, dmax, sh, sc, sl, end, w_sb, w_issue)
    if i == start:
        return i
    S[SC.NOW], S[SC.UOP_FRAC], S[SC.UOP_SEQ] = now, frac, seq
    S[SC.ROB_HEAD], S[SC.ROB_COUNT], S[SC.ROB_SLOTS] = rh, rc, rs
    S[SC.DONE_MAX], S[SC.DEP_READY] = dmax, dep
    S[SC.LSEQ] = lseq
    S[SC.SB_HEAD], S[SC.SB_COUNT], S[SC.SB_LAST], S[SC.END] = sh, sc, sl, end
    S[l1.STAMP_AT] = stamp
    S[SC.OPS] += i - start
    # the hits: the ops less the misses, which demand_miss counted
    loads = lseq - lseq0
    cm.count(S, 0, cm.CC.LOAD_HITS, loads - cm.counter(S, 0, cm.CC.LOAD_MISSES) + misses0[0])
    cm.count(S, 0, cm.CC.STORE_HITS,
             i - start - loads - cm.counter(S, 0, cm.CC.STORE_MISSES) + misses0[1])
    l1.remember(S, ml0, ms0, mb0)
    # every advance of dispatch is one of the four waits; the sum of their parts within the
    # site telescopes
    w_window = pl.waited(now0, now, site_start) - w_sb - w_lfb - w_issue
    pl.site_stalls(S, w_window, w_sb, w_lfb)
    return i
