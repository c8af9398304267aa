"""The register-resident path for plain loads and stores (pinned to the general path by
tests/test_fast_path.py)."""
from emu import _handlers as hd
from emu import _pipeline as pl
from emu.state import EH, SC, TP
from isa.ops import (
    COL_ADDR,
    COL_FLAGS,
    COL_OP,
    COL_SIZE,
    FLAG_DEPENDENT,
    FLAG_INDEXED,
    N_COLS,
    Op,
)
from memmodel import _hierarchy as hier
from memmodel import _persist as persist
from memmodel import cache as cm
from memmodel import memory as mm
from memmodel._hierarchy import K_LOAD, K_STORE
from memmodel.jit import compiled, host_prefetch, inlined, ix
from memmodel.layout import MH, MS, MT

PF_AHEAD = 16   # ops of lookahead for host prefetch hints of the sets an op will touch
OPS_AHEAD = 64  # ... and of the op array itself, which streams from host memory


PLAIN_RUN_BACKOFF = 8   # a guess; any value gives the same results


@inlined
def host_prefetch_op(S, ops, j):
    """Host-cache hint for op j (a few ops ahead): if it is a load or store of a new line,
    start loading its sets' state below L1 (L1's is small and stays in the host cache)."""
    op = ops[ix(j), COL_OP]
    if op == Op.LOAD or op == Op.STORE:
        line = ops[ix(j), COL_ADDR] >> 6
        if line != ops[ix(j - 1), COL_ADDR] >> 6 and line != ops[ix(j - 2), COL_ADDR] >> 6:
            for lvl in range(1, S[MT.LEVELS]):
                cm.prefetch_set(S, lvl, line)


@compiled
def plain_run(S, pt, frames, ops, data, i, n):
    """Execute ops i.. while they are plain loads and stores within one line that need no
    check (the common case of most traces), with the pipeline scalars, the L1 use stamp
    and hit counters in registers; returns the first op not executed. Each op has exactly
    the effects the general path gives it (same helpers, same order): only the loads and
    stores of S between ops are gone, whose store-to-load chains bound the general path.
    An L1 miss hands the L1 use stamp to memmodel._hierarchy.demand_miss in S."""
    functional = S[MT.FUNCTIONAL]
    lo, hi, page_ok = S[SC.REG_LO], S[SC.REG_HI], S[SC.PAGE_OK]
    # stores into an eADR region queue their lines for the persistence domain: general path
    if functional and hi > lo and mm.persistence(S, lo) == mm.P_EADR:
        page_ok = -1
    fr_ok = -1
    hit = cm.hit_cycles(S, 0)
    upc, commit = S[TP.UPC], S[TP.STORE_COMMIT]
    tags, flg, rdy = S[MH.TAGS], S[MH.FLAGS], S[MH.READY]
    rob, lb, rseq, rlseq, rdone = S[TP.ROB], S[TP.LB], S[EH.ROB_SEQ], S[EH.ROB_LSEQ], S[EH.ROB_DONE]
    sbn, sb = S[TP.SB], S[EH.SB]
    policy, ways, repl = cm.policy(S, 0), cm.ways(S, 0), S[MH.REPL]
    now, frac, seq = S[SC.NOW], S[SC.UOP_FRAC], S[SC.UOP_SEQ]
    rh, rc, dmax, dep, lseq = S[SC.ROB_HEAD], S[SC.ROB_COUNT], S[SC.DONE_MAX], S[SC.DEP_READY], \
        S[SC.LSEQ]
    sh, sc, sl, end = S[SC.SB_HEAD], S[SC.SB_COUNT], S[SC.SB_LAST], S[SC.END]
    stamp = S[cm.LV_AT + cm.LV.STAMP]
    # the two L1 blocks used last (a copy alternates between a source and a destination
    # line), each valid while its block still holds its line
    ml0, ms0, mb0 = S[cm.L1_MEMO_AT + cm.MEMO.LINE], S[cm.L1_MEMO_AT + cm.MEMO.SET], \
        S[cm.L1_MEMO_AT + cm.MEMO.BLOCK]
    ml1, ms1, mb1 = -1, 0, 0
    start = i
    lhits, shits = 0, 0
    # dispatch's waits for the window, the store buffer and fill buffers (pl.charge)
    site_start, w_window, w_sb, w_lfb = S[SC.SITE_START], 0, 0, 0
    while i < n:
        op = ops[ix(i), COL_OP]
        flags = ops[ix(i), COL_FLAGS]
        addr = ops[ix(i), COL_ADDR]
        size = ops[ix(i), COL_SIZE]
        if op == Op.LOAD:
            if flags & ~FLAG_DEPENDENT or (functional and i + 1 < n
                                           and ops[ix(i + 1), COL_FLAGS] & FLAG_INDEXED):
                break
        elif op != Op.STORE or flags or (functional and addr >> 12 != page_ok):
            break
        if (addr & 63) + size > 64 or addr < lo or addr + size > hi:
            break
        line = addr >> 6
        if line == ml0 and S[ix(tags + mb0)] == line:
            i0, b = ms0, mb0
        elif line == ml1 and S[ix(tags + mb1)] == line:
            i0, b = ms1, mb1
            ml1, ms1, mb1 = ml0, ms0, mb0
            ml0, ms0, mb0 = line, i0, b
        else:
            i0 = cm.set_start(S, 0, line)
            b = cm.find(S, 0, i0, line)
            if b >= 0:
                ml1, ms1, mb1 = ml0, ms0, mb0
                ml0, ms0, mb0 = line, i0, b
        if b >= 0 and S[ix(flg + b)] & (cm.F_PREFETCHED | cm.F_TRANSIENT | cm.F_SHARED):
            break
        if i + OPS_AHEAD < n:
            host_prefetch(ops, (i + OPS_AHEAD) * N_COLS)
        if i + PF_AHEAD < n:
            host_prefetch_op(S, ops, i + PF_AHEAD)
        t0 = now
        now, rh, rc = pl.rob_gate_v(S, rob, lb, rseq, rlseq, rdone, now, seq,
                                    lseq + (op == Op.LOAD), rh, rc)
        w_window += pl.waited(t0, now, site_start)
        t0 = now
        if op == Op.LOAD and flags and dep > t0:
            t0 = dep
        if b >= 0:
            stamp += 1
            cm.policy_hit(S, policy, repl + i0, ways, b - i0, stamp)
            ready = max(t0 + hit, S[ix(rdy + b)])
            if op == Op.LOAD:
                lhits += 1
            else:
                shits += 1
                S[ix(flg + b)] |= cm.F_DIRTY
        else:
            S[cm.LV_AT + cm.LV.STAMP] = stamp   # the miss's fills advance it
            ready, wait = hier.demand_miss(S, line, t0, K_LOAD if op == Op.LOAD else K_STORE)
            w_lfb += pl.waited(now, wait, site_start)
            now, stamp = max(now, wait), S[cm.LV_AT + cm.LV.STAMP]
            ml1, ms1, mb1 = ml0, ms0, mb0
            ml0, ms0, mb0 = line, S[cm.L1_MEMO_AT + cm.MEMO.SET], \
                S[cm.L1_MEMO_AT + cm.MEMO.BLOCK]
        if op == Op.LOAD:
            now, frac, seq = pl.issue_v(now, frac, seq, 1, upc)
            dep = ready
            before = now
            now, rh, rc, dmax = pl.rob_push_v(S, rob, lb, rseq, rlseq, rdone, ready, now, seq,
                                              lseq, rh, rc, dmax)
            w_window += pl.waited(before, now, site_start)
            lseq += 1
        else:
            # t0: the cycle the store issued, before a miss's stall (pl.commit_at)
            before = now
            now, sh, sc, sl, end = pl.sb_push_v(S, sbn, sb, max(ready, t0 + 1, dmax, sl + commit),
                                              now, sh, sc, sl, end)
            w_sb += pl.waited(before, now, site_start)
            now, frac, seq = pl.issue_v(now, frac, seq, 1, upc)
            if functional:   # the store is in page page_ok: its frame, looked up once
                if fr_ok < 0:
                    fr_ok = mm.frame_of(S, pt, page_ok << 12)
                hd.store_data_in(frames, fr_ok, ops, data, i, addr, size)
        if b < 0 and functional and S[MS.PQ_COUNT]:   # a miss wrote a dirty victim back
            persist.persist_queue(S, pt, frames, -1, -1)
        i += 1
    if i == start:
        return i
    S[SC.NOW], S[SC.UOP_FRAC], S[SC.UOP_SEQ] = now, frac, seq
    S[SC.ROB_HEAD], S[SC.ROB_COUNT], S[SC.DONE_MAX], S[SC.DEP_READY] = rh, rc, dmax, dep
    S[SC.LSEQ] = lseq
    S[SC.SB_HEAD], S[SC.SB_COUNT], S[SC.SB_LAST], S[SC.END] = sh, sc, sl, end
    S[cm.LV_AT + cm.LV.STAMP] = stamp
    S[SC.OPS] += i - start
    cm.count(S, 0, cm.CC.LOAD_HITS, lhits)
    cm.count(S, 0, cm.CC.STORE_HITS, shits)
    cm.remember_l1(S, ml0, ms0, mb0)
    pl.site_stalls(S, w_window, w_sb, w_lfb)
    return i
