"""The compiled run loop: executes a whole Program over the machine state in one call.

Phases are small functions over the state buffer S (memmodel.layout): issue and ROB
gating, demand access (L1 fast path, LFB, hierarchy walk, fills and victims), posted
writes, write-combining buffers, flushes, fences and the bulk ops that expand per line.
Timing is the resource-occupancy model of DESIGN.md: SC.NOW is the issue cycle; loads,
stores and flushes complete later and hold LFBs, ROB and store-buffer slots, media
channels and write-pending queues until they do.
"""
from emu.state import (
    EH,
    N_PE,
    N_PQ,
    N_RCOUNT,
    N_SCOUNT,
    N_WC,
    PE,
    PK_FENCED,
    PK_NOW,
    PQ,
    PQ_ENTRIES,
    RCTR,
    SC,
    SCTR,
    ST_FAULT_MCE,
    ST_FAULT_PRIVILEGE,
    ST_FAULT_SMAP,
    ST_FAULT_UNMAPPED,
    ST_NEED_PAGES,
    ST_OK,
    TP,
    WC,
)
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
    Op,
)
from memmodel import cache as cm
from memmodel import media as md
from memmodel import memory as mm
from memmodel.jit import compiled, inlined, ix
from memmodel.layout import MH
from memmodel.prefetch import PF_NEXT_LINE, PF_NONE, next_line, stream

LOAD, STORE, MOVNT = int(Op.LOAD), int(Op.STORE), int(Op.MOVNT)
CLFLUSH, CLFLUSHOPT, CLWB = int(Op.CLFLUSH), int(Op.CLFLUSHOPT), int(Op.CLWB)
SFENCE, LFENCE, MFENCE = int(Op.SFENCE), int(Op.LFENCE), int(Op.MFENCE)
STAC, CLAC = int(Op.STAC), int(Op.CLAC)
REP_MOVSB, NT_COPY, CAREFUL_COPY = int(Op.REP_MOVSB), int(Op.NT_COPY), int(Op.CAREFUL_COPY)
FLUSH_RANGE, WORK, SITE = int(Op.FLUSH_RANGE), int(Op.WORK), int(Op.SITE)
BRANCH, INDEX_MASK = int(Op.BRANCH), int(Op.INDEX_MASK)
PEER_WRITE, PEER_READ = int(Op.PEER_WRITE), int(Op.PEER_READ)

K_LOAD, K_STORE, K_PREFETCH = 0, 1, 2   # access kinds, for counters
FULL_MASK = -1                          # all 64 bytes of a WC buffer written


# ---------------------------------------------------------------- issue and windows
@inlined
def _issue_v(now, frac, seq, uops, upc):
    """Spend issue bandwidth: `uops` at `upc` uops per cycle. Returns (now, frac, seq)."""
    f = frac + uops
    if f < upc:  # the common case, without an integer division
        return now, f, seq + uops
    return now + f // upc, f % upc, seq + uops


@inlined
def _issue(S, uops):
    S[SC.NOW], S[SC.UOP_FRAC], S[SC.UOP_SEQ] = _issue_v(S[SC.NOW], S[SC.UOP_FRAC], S[SC.UOP_SEQ],
                                                     uops, S[TP.UPC])


@inlined
def _stall_until(S, t):
    if t > S[SC.NOW]:
        S[SC.NOW] = t


@inlined
def _site_count(S, counter, n):
    S[ix(S[EH.SITE_CTR] + S[SC.SITE] * N_SCOUNT + counter)] += n


# The ROB and store-buffer rings take and return their scalars (now, head, count, ...), and
# take their sizes and section offsets, so that a hot loop can keep all of them in registers
# (_plain_run: a store to S makes the compiler reload anything read from S); the S forms
# load and store them.
@inlined
def _rob_gate_v(S, rob, seqs, done, now, seq, head, count):
    """Retire completed loads; stall while the oldest incomplete one is a ROB behind.
    `rob`: the ROB's size, `seqs` and `done` its sections' offsets. Returns (now, head,
    count)."""
    while count > 0:
        d = S[ix(done + head)]
        if d > now:
            if seq - S[ix(seqs + head)] < rob and count < rob:
                break
            now = d
        head = head + 1 if head + 1 < rob else 0   # (head + 1) % rob, head < rob
        count -= 1
    return now, head, count


@inlined
def _rob_gate(S):
    S[SC.NOW], S[SC.ROB_HEAD], S[SC.ROB_COUNT] = _rob_gate_v(
        S, S[TP.ROB], S[EH.ROB_SEQ], S[EH.ROB_DONE], S[SC.NOW], S[SC.UOP_SEQ], S[SC.ROB_HEAD],
        S[SC.ROB_COUNT])


@inlined
def _rob_push_v(S, rob, seqs, dones, done, now, seq, head, count, loads_max):
    """An incomplete load occupies the window until `done`. Returns
    (now, head, count, loads_max)."""
    if done <= now:
        return now, head, count, loads_max
    if count == rob:
        now, head, count = _rob_gate_v(S, rob, seqs, dones, now, seq, head, count)
    i = head + count   # (head + count) % rob, both < rob
    if i >= rob:
        i -= rob
    S[ix(seqs + i)] = seq
    S[ix(dones + i)] = done
    return now, head, count + 1, max(loads_max, done)


@inlined
def _rob_push(S, done):
    S[SC.NOW], S[SC.ROB_HEAD], S[SC.ROB_COUNT], S[SC.LOADS_MAX] = _rob_push_v(
        S, S[TP.ROB], S[EH.ROB_SEQ], S[EH.ROB_DONE], done, S[SC.NOW], S[SC.UOP_SEQ], S[SC.ROB_HEAD],
        S[SC.ROB_COUNT], S[SC.LOADS_MAX])


@inlined
def _sb_push_v(S, n, sb, drain, now, head, count, last, end):
    """A store (or flush) enters the store buffer, draining in order; full stalls issue.
    `n`: its size, `sb`: its section's offset. Returns (now, head, count, last, end)."""
    # ring indices wrap by compare, not %: head < n and count <= n
    while count > 0 and S[ix(sb + head)] <= now:
        head = head + 1 if head + 1 < n else 0
        count -= 1
    if count == n:
        now = max(now, S[ix(sb + head)])
        head = head + 1 if head + 1 < n else 0
        count -= 1
    drain = max(drain, last)
    tail = head + count
    S[ix(sb + (tail - n if tail >= n else tail))] = drain
    return now, head, count + 1, drain, max(end, drain)


@inlined
def _sb_push(S, drain):
    S[SC.NOW], S[SC.SB_HEAD], S[SC.SB_COUNT], S[SC.SB_LAST], S[SC.END] = _sb_push_v(
        S, S[TP.SB], S[EH.SB], drain, S[SC.NOW], S[SC.SB_HEAD], S[SC.SB_COUNT], S[SC.SB_LAST],
        S[SC.END])


# ---------------------------------------------------------------- memory side
@inlined
def _popcount(x):
    """Set bits of the 64-bit x: the sign bit, then SWAR over the other 63. No step may
    overflow: LLVM assumes signed arithmetic does not, and folds comparisons of the result
    accordingly (a multiply-and-shift sum of the bytes made popcount < 64 false)."""
    n = 1 if x < 0 else 0
    x &= 0x7FFFFFFFFFFFFFFF
    x -= (x >> 1) & 0x5555555555555555
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    x += x >> 8
    x += x >> 16
    x += x >> 32
    return n + (x & 0x7F)


@compiled
def _mem_write(S, r, line, mask, t, pkind):
    """Posted write of the bytes of `line` selected by `mask`; returns the WPQ accept cycle.
    `r`: the line's region, if the caller knows it (a bulk op looks it up once a page),
    else -1. With functional memory, a write to a persistent region is queued for the
    persistence domain: durable at once (PK_NOW) or at the next fence (PK_FENCED)."""
    addr = line << 6
    if r < 0:
        r = mm.find_region(S, addr)
    nbytes = 64 if mask == FULL_MASK else _popcount(mask)
    S[SC.MEM_STAMP] += 1
    acc = md.write(S, mm.reg(S, r, mm.RG.MEDIA), addr, nbytes, t,
                   mm.reg(S, r, mm.RG.NODE) != S[TP.NODE], S[SC.MEM_STAMP])
    S[ix(S[EH.REGION_CTR] + r * N_RCOUNT + RCTR.LINE_WRITES)] += 1
    _site_count(S, SCTR.MEDIA_WRITES, 1)
    if acc > S[SC.END]:
        S[SC.END] = acc
    if S[TP.FUNCTIONAL] and mm.reg(S, r, mm.RG.PERSIST) != mm.P_NONE:
        _pq_push(S, line, mask, pkind)
    return acc


@inlined
def _pq_push(S, line, mask, pkind):
    """Queue a write for the persistence domain; the run loop empties the queue after
    every op (or line of a bulk op). A count above PQ_ENTRIES reports an internal error."""
    n = S[SC.PQ_COUNT]
    if n < PQ_ENTRIES:
        o = S[EH.PQ] + N_PQ * n
        S[ix(o + PQ.LINE)] = line
        S[ix(o + PQ.MASK)] = mask
        S[ix(o + PQ.KIND)] = pkind
    S[SC.PQ_COUNT] = n + 1


@inlined
def _snapshot_at(j):
    """(frame, offset) of pending snapshot j in the reserved frames."""
    return (j * 64) // mm.PAGE_BYTES, (j * 64) % mm.PAGE_BYTES


@compiled
def _apply_oldest_pending(S, pt, frames):
    h = S[SC.PEND_HEAD]
    o = S[EH.PEND] + N_PE * h
    f, off = _snapshot_at(h)
    mm.persist_bytes(S, pt, frames, S[ix(o + PE.LINE)], S[ix(o + PE.MASK)], f, off)
    S[SC.PEND_HEAD] = h + 1 if h + 1 < mm.SNAPSHOTS else 0
    S[SC.PEND_COUNT] -= 1


@compiled
def _persist_queue(S, pt, frames, page, row):
    """Move this op's queued writes on: durable now, or snapshot until the next fence (a
    full snapshot ring makes its oldest write durable: it has long been accepted).
    (page, row): a page and its mm.page_row, if the caller knows them (else page -1)."""
    n = min(S[SC.PQ_COUNT], PQ_ENTRIES)
    for k in range(n):   # pages keep their frames during a run
        o = S[EH.PQ] + N_PQ * k
        line, mask = S[ix(o + PQ.LINE)], S[ix(o + PQ.MASK)]
        addr = line << 6
        if addr >> mm.PAGE_SHIFT != page:
            page = addr >> mm.PAGE_SHIFT
            row = mm.page_row(S, addr)
        src_f = mm.frame_in(pt, row, addr)
        src_off = addr & (mm.PAGE_BYTES - 1)
        if S[ix(o + PQ.KIND)] == PK_NOW:
            mm.durable_move(frames, mm.durable_frame_in(pt, row, addr), src_off, mask,
                            src_f, src_off)
            if S[SC.PEND_COUNT]:
                _supersede_pending(S, line, mask)
            continue
        if S[SC.PEND_COUNT] == mm.SNAPSHOTS:
            _apply_oldest_pending(S, pt, frames)
        j = S[SC.PEND_HEAD] + S[SC.PEND_COUNT]
        if j >= mm.SNAPSHOTS:
            j -= mm.SNAPSHOTS
        f, off = _snapshot_at(j)
        mm.move(frames, f, off, src_f, src_off, 64)
        S[ix(S[EH.PEND] + N_PE * j + PE.LINE)] = line
        S[ix(S[EH.PEND] + N_PE * j + PE.MASK)] = mask
        S[SC.PEND_COUNT] += 1
    if S[SC.PQ_COUNT] <= PQ_ENTRIES:
        S[SC.PQ_COUNT] = 0


@compiled
def _supersede_pending(S, line, mask):
    """The bytes `mask` of `line` became durable with newer data: older copies of them still
    waiting for a fence must not be applied over it (a fence never makes the durable image
    older; stores to a line become durable in program order)."""
    j = S[SC.PEND_HEAD]
    for _ in range(S[SC.PEND_COUNT]):
        o = S[EH.PEND] + N_PE * j
        if S[ix(o + PE.LINE)] == line:
            S[ix(o + PE.MASK)] &= ~mask
        j = j + 1 if j + 1 < mm.SNAPSHOTS else 0


@compiled
def supersede_range(S, start, end):
    """_supersede_pending for the bytes [start, end) (the facade placed them durably)."""
    if S[SC.PEND_COUNT] == 0:
        return
    for line in range(start >> 6, ((end - 1) >> 6) + 1):
        lo = max(start, line << 6) - (line << 6)
        hi = min(end, (line + 1) << 6) - (line << 6)
        _supersede_pending(S, line, (-1 << lo) if hi == 64 else (-1 << lo) & ((1 << hi) - 1))


@compiled
def _apply_pending(S, pt, frames):
    """A fence: every write queued for it becomes durable."""
    page, f = -1, -1    # the last page's durable frame
    while S[SC.PEND_COUNT] > 0:
        h = S[SC.PEND_HEAD]
        o = S[EH.PEND] + N_PE * h
        addr = S[ix(o + PE.LINE)] << 6
        if addr >> mm.PAGE_SHIFT != page:
            page = addr >> mm.PAGE_SHIFT
            f = mm.durable_frame_of(S, pt, addr)
        sf, soff = _snapshot_at(h)
        mm.durable_move(frames, f, addr & (mm.PAGE_BYTES - 1), S[ix(o + PE.MASK)], sf, soff)
        S[SC.PEND_HEAD] = h + 1 if h + 1 < mm.SNAPSHOTS else 0
        S[SC.PEND_COUNT] -= 1


@inlined
def _eadr_store(S, dst, n):
    """Under eADR the caches are in the persistence domain: a cached store is durable."""
    if mm.persistence(S, dst) == mm.P_EADR:
        for line in range(dst >> 6, ((dst + n - 1) >> 6) + 1):
            _pq_push(S, line, FULL_MASK, PK_NOW)


@inlined
def _mem_read(S, line, t):
    addr = line << 6
    r = mm.find_region(S, addr)
    S[SC.MEM_STAMP] += 1
    done = md.read(S, mm.reg(S, r, mm.RG.MEDIA), addr, t,
                   mm.reg(S, r, mm.RG.NODE) != S[TP.NODE], S[SC.MEM_STAMP])
    S[ix(S[EH.REGION_CTR] + r * N_RCOUNT + RCTR.LINE_READS)] += 1
    _site_count(S, SCTR.MEDIA_READS, 1)
    return done


# ---------------------------------------------------------------- hierarchy
@compiled
def _back_invalidate(S, line):
    """An inclusive LLC evicted `line`: drop it above; returns whether a copy was dirty."""
    dirty = 0
    for lvl in range(S[TP.LEVELS] - 1):
        b = cm.lookup(S, lvl, line)
        if b >= 0:
            dirty |= cm.invalidate(S, lvl, b)
    return dirty


@compiled
def _evicted(S, lvl, vline, vdirty, t):
    """Handle the victim of a fill at `lvl`: back-invalidation, then a dirty victim is
    written into the level below (installed there if absent, cascading) or to memory."""
    nlev = S[TP.LEVELS]
    while vline != cm.INVALID:
        if lvl == nlev - 1 and S[TP.INCLUSIVE]:
            vdirty |= _back_invalidate(S, vline)
        if not vdirty:
            return
        lvl += 1
        if lvl >= nlev:
            _mem_write(S, -1, vline, FULL_MASK, t, PK_NOW)
            return
        i0 = cm.set_start(S, lvl, vline)
        if lvl == nlev - 1:   # the LLC's state is not host-cached: its misses overlap
            cm.prefetch_blocks(S, lvl, i0)
        b = cm.find(S, lvl, i0, vline)
        if b >= 0:
            cm.count(S, lvl, cm.CC.WRITEBACK_IN_HITS, 1)
            cm.set_flags(S, b, cm.flags(S, b) | cm.F_DIRTY)
            cm.touch(S, lvl, i0, b)
            return
        cm.count(S, lvl, cm.CC.WRITEBACK_IN_MISSES, 1)
        b, vline, vdirty = cm.fill(S, lvl, i0, vline, t, cm.F_DIRTY)


@inlined
def _install(S, lvl, i0, line, ready, flg):
    b, vline, vdirty = cm.fill(S, lvl, i0, line, ready, flg)
    # a clean victim has nothing to do below, unless an inclusive LLC evicted it
    if vline != cm.INVALID and (vdirty or (lvl == S[TP.LEVELS] - 1 and S[TP.INCLUSIVE])):
        _evicted(S, lvl, vline, vdirty, ready)
    return b


@inlined
def _spec_flag(S, from_memory):
    """F_TRANSIENT for a fill from memory by a transient load (a flush+reload attacker sees
    the line become cached), else 0."""
    return cm.F_TRANSIENT if from_memory and S[SC.SPEC] else 0


@compiled
def _clear_flag(S, line, flag):
    """Clear `flag` on every level's copy of `line`."""
    for lvl in range(S[TP.LEVELS]):
        b = cm.lookup(S, lvl, line)
        if b >= 0:
            cm.set_flags(S, b, cm.flags(S, b) & ~flag)


@compiled
def _first_use(S, lvl, line, f):
    """A demand access hits a block with flags `f` at `lvl`: a prefetched line proved
    useful; a line a transient load brought in is now used architecturally (not a leak).
    Returns the block's new flags."""
    if f & cm.F_PREFETCHED:
        f &= ~cm.F_PREFETCHED
        cm.count(S, lvl, cm.CC.PREFETCH_USEFUL, 1)
    if f & cm.F_TRANSIENT and not S[SC.SPEC]:
        _clear_flag(S, line, cm.F_TRANSIENT)   # used architecturally now: not a leak
        f &= ~cm.F_TRANSIENT
    return f


@compiled
def _walk(S, line, t0, first, kind):
    """Look `line` up from level `first` down; fill the levels above the hit (or all, from
    memory). Returns the cycle its data is available at level `first`, and F_SHARED if the
    line is shared with another core (for the caller's fill above `first`), else 0."""
    nlev = S[TP.LEVELS]
    hit = nlev
    b = -1
    shared = 0
    i0, i0_above = -1, -1   # line's set at the level looked up last and at the one before
    for lvl in range(first, nlev):
        i0_above = i0
        i0 = cm.set_start(S, lvl, line)
        b = cm.find(S, lvl, i0, line)
        if b >= 0:
            hit = lvl
            break
        if kind == K_LOAD:
            cm.count(S, lvl, cm.CC.LOAD_MISSES, 1)
        elif kind == K_STORE:
            cm.count(S, lvl, cm.CC.STORE_MISSES, 1)
    if hit < nlev:
        if kind == K_LOAD:
            cm.count(S, hit, cm.CC.LOAD_HITS, 1)
        elif kind == K_STORE:
            cm.count(S, hit, cm.CC.STORE_HITS, 1)
        f = cm.flags(S, b)
        lat = cm.hit_cycles(S, hit)
        if f & cm.F_PEER:   # modified in another core: it sends the line (HITM) and keeps a
            lat = max(lat, S[TP.PEER])   # shared copy, unless this is a read-for-ownership
            f = (f & ~(cm.F_PEER | cm.F_SHARED)) | cm.F_DIRTY | (
                cm.F_SHARED if kind != K_STORE else 0)
            cm.set_flags(S, b, f)
            cm.count(S, hit, cm.CC.PEER_TRANSFERS, 1)
        if f & cm.F_SHARED:
            if kind == K_STORE:   # another core's copy is invalidated first
                lat = max(lat, _upgrade(S, hit, line))
                f &= ~cm.F_SHARED
            else:                 # still shared: the copies above say so too
                shared = cm.F_SHARED
        if f & (cm.F_PREFETCHED | cm.F_TRANSIENT) and kind != K_PREFETCH:
            cm.set_flags(S, b, _first_use(S, hit, line, f))
        cm.touch(S, hit, i0, b)
        done = max(t0 + lat, cm.ready(S, b))
        i0 = i0_above
    else:
        if kind != K_PREFETCH:
            _site_count(S, SCTR.LLC_MISSES, 1)
        done = _mem_read(S, line, t0)
    flg = cm.F_PREFETCHED if kind == K_PREFETCH else _spec_flag(S, hit == nlev)
    for lvl in range(hit - 1, first - 1, -1):   # i0: line's set at level hit - 1
        _install(S, lvl, i0 if lvl == hit - 1 else cm.set_start(S, lvl, line), line, done,
                 flg | shared)
        if flg:
            cm.count(S, lvl, cm.CC.PREFETCH_FILLS, 1)
    return done, shared


@inlined
def _free_lfb(S):
    """Index of the line fill buffer that frees first."""
    lfb = S[EH.LFB]
    best, first = 0, S[ix(lfb)]
    for i in range(1, S[TP.LFB]):   # the minimum in a register: no reload through `best`
        if S[ix(lfb + i)] < first:
            best, first = i, S[ix(lfb + i)]
    return best


@compiled
def _prefetch(S, lvl, pf, line, t0):
    """Ask prefetcher `pf` of level `lvl` what to fetch after a demand miss on `line`, then
    fill those lines from level `lvl` down. At L1 each fill needs a free line fill buffer."""
    if pf == PF_NEXT_LINE:
        first, count = next_line.train(S, line, S[TP.STREAM_DIST], S[TP.STREAM_DEG])
    else:
        first, count = stream.train(S, line, S[TP.STREAM_DIST], S[TP.STREAM_DEG])
    for nxt in range(first, first + count):
        if cm.lookup(S, lvl, nxt) >= 0 or mm.find_region(S, nxt << 6) < 0:
            continue
        if lvl == 0:
            i = _free_lfb(S)
            if S[ix(S[EH.LFB] + i)] > t0:
                return
            S[ix(S[EH.LFB] + i)] = _walk(S, nxt, t0, 0, K_PREFETCH)[0]
        else:
            _walk(S, nxt, t0, lvl, K_PREFETCH)


@inlined
def _demand(S, line, t0, kind):
    """A demand load or store (RFO) of one line issued at t0. Returns the data-ready cycle;
    marks the L1 copy dirty for stores."""
    i0, b = cm.l1_find(S, line)
    if b >= 0:
        f = cm.flags(S, b)
        if kind == K_LOAD:
            cm.count(S, 0, cm.CC.LOAD_HITS, 1)
        else:
            cm.count(S, 0, cm.CC.STORE_HITS, 1)
            f |= cm.F_DIRTY
        lat = cm.hit_cycles(S, 0)
        if f & (cm.F_PREFETCHED | cm.F_TRANSIENT | cm.F_SHARED):   # one test for the rare
            if f & cm.F_SHARED and kind != K_LOAD:
                lat = max(lat, _upgrade(S, 0, line))
                f &= ~cm.F_SHARED
            if f & (cm.F_PREFETCHED | cm.F_TRANSIENT):
                f = _first_use(S, 0, line, f)
        cm.set_flags(S, b, f)
        cm.touch(S, 0, i0, b)
        return max(t0 + lat, cm.ready(S, b))
    return _demand_miss(S, line, t0, kind)


@compiled
def _demand_miss(S, line, t0, kind):
    cm.count(S, 0, cm.CC.LOAD_MISSES if kind == K_LOAD else cm.CC.STORE_MISSES, 1)
    _site_count(S, SCTR.L1D_MISSES, 1)
    i = _free_lfb(S)
    if S[ix(S[EH.LFB] + i)] > t0:
        t0 = S[ix(S[EH.LFB] + i)]
        _stall_until(S, t0)
    if S[TP.LEVELS] > 1:
        done, shared = _walk(S, line, t0, 1, kind)
        # the walk marks what it fills; a transient fill from memory is marked at L2 too
        spec = cm.F_TRANSIENT if S[SC.SPEC] != 0 and (
            cm.flags(S, cm.lookup(S, 1, line)) & cm.F_TRANSIENT) != 0 else 0
        if S[TP.PF_L2] != PF_NONE:
            _prefetch(S, 1, S[TP.PF_L2], line, t0)
    else:
        _site_count(S, SCTR.LLC_MISSES, 1)
        done = _mem_read(S, line, t0)
        spec = _spec_flag(S, True)
        shared = 0
    S[ix(S[EH.LFB] + i)] = done
    i0 = cm.set_start(S, 0, line)
    cm.remember_l1(S, line, i0, _install(S, 0, i0, line, done,
                                         (cm.F_DIRTY if kind == K_STORE else 0) | spec
                                         | shared))
    if S[TP.PF_L1] != PF_NONE:
        _prefetch(S, 0, S[TP.PF_L1], line, t0)
    return done


@inlined
def _own_line(S, line, t):
    """Gain a whole line for writing without reading it (fast-string no-RFO store)."""
    i0 = cm.set_start(S, 0, line)
    b = cm.find(S, 0, i0, line)
    if b >= 0:
        cm.count(S, 0, cm.CC.STORE_HITS, 1)
        if cm.flags(S, b) & cm.F_SHARED:   # the other core's copy is invalidated (no wait:
            _upgrade(S, 0, line)           # the line is not read)
        cm.set_flags(S, b, (cm.flags(S, b) | cm.F_DIRTY) & ~(cm.F_TRANSIENT | cm.F_SHARED))
        cm.touch(S, 0, i0, b)
        return
    cm.count(S, 0, cm.CC.STORE_MISSES, 1)
    for lvl in range(1, S[TP.LEVELS]):
        j = cm.lookup(S, lvl, line)
        if j >= 0:
            cm.invalidate(S, lvl, j)
    _install(S, 0, i0, line, t, cm.F_DIRTY)


@compiled
def _peer_write(S, line):
    """Another core writes `line`: its read-for-ownership takes this core's copies (dirty
    bytes included: no write-back to memory) and leaves the line modified in its own cache,
    tracked at the last level (an inclusive LLC holds it; for a non-inclusive one the block
    stands for the snoop filter's entry) with F_PEER."""
    llc = S[TP.LEVELS] - 1
    for lvl in range(llc):
        b = cm.lookup(S, lvl, line)
        if b >= 0:
            cm.invalidate(S, lvl, b)
    i0 = cm.set_start(S, llc, line)
    b = cm.find(S, llc, i0, line)
    if b < 0:
        _install(S, llc, i0, line, S[SC.NOW], cm.F_PEER)
    else:
        cm.set_flags(S, b, (cm.flags(S, b) & ~(cm.F_PREFETCHED | cm.F_TRANSIENT | cm.F_SHARED))
                     | cm.F_PEER)
        cm.touch(S, llc, i0, b)


@compiled
def _upgrade(S, lvl, line):
    """A store finds `line` shared with another core (at level `lvl`): that copy is
    invalidated first, and this core's copies stop being shared. Returns the wait, taken as
    one cache-to-cache round trip (peer_hitm_ns)."""
    _clear_flag(S, line, cm.F_SHARED)
    cm.count(S, lvl, cm.CC.PEER_UPGRADES, 1)
    return S[TP.PEER]


@compiled
def _peer_read(S, line):
    """Another core reads `line`: a copy this core modified is forwarded (the last level
    takes the modified data; it is installed there if absent) and every copy here becomes
    shared. A line this core does not hold is not its business."""
    llc = S[TP.LEVELS] - 1
    dirty, held = 0, False
    for lvl in range(llc):
        b = cm.lookup(S, lvl, line)
        if b >= 0:
            held = True
            dirty |= cm.flags(S, b) & cm.F_DIRTY
            cm.set_flags(S, b, (cm.flags(S, b) & ~cm.F_DIRTY) | cm.F_SHARED)
    i0 = cm.set_start(S, llc, line)
    b = cm.find(S, llc, i0, line)
    if b >= 0:
        if not cm.flags(S, b) & cm.F_PEER:
            cm.set_flags(S, b, cm.flags(S, b) | cm.F_SHARED | dirty)
    elif held:
        _install(S, llc, i0, line, S[SC.NOW], cm.F_SHARED | dirty)


# ---------------------------------------------------------------- op handlers
@inlined
def _load(S, addr, size, dependent):
    t0 = S[SC.NOW]
    if dependent and S[SC.DEP_READY] > t0:
        t0 = S[SC.DEP_READY]
    first = addr >> 6
    last = (addr + size - 1) >> 6
    done = _demand(S, first, t0, K_LOAD)
    if last != first:
        done = max(done, _demand(S, last, t0, K_LOAD))
    _issue(S, 1)
    S[SC.DEP_READY] = done
    _rob_push(S, done)


@inlined
def _store_line(S, line):
    now = S[SC.NOW]
    ready = _demand(S, line, now, K_STORE)
    _sb_push(S, max(ready, now + 1, S[SC.SB_LAST] + S[TP.STORE_COMMIT]))


@inlined
def _store(S, addr, size):
    first = addr >> 6
    last = (addr + size - 1) >> 6
    _store_line(S, first)
    if last != first:
        _store_line(S, last)
    _issue(S, 1)


@inlined
def _evict_everywhere(S, line, keep):
    """Remove (or, with keep, clean) `line` at every level; returns 1 if a copy was dirty."""
    dirty = 0
    for lvl in range(S[TP.LEVELS]):
        b = cm.lookup(S, lvl, line)
        if b >= 0:
            if keep:
                dirty |= cm.flags(S, b) & cm.F_DIRTY
                cm.set_flags(S, b, cm.flags(S, b) & ~cm.F_DIRTY)
            else:
                dirty |= cm.invalidate(S, lvl, b)
    return dirty


@inlined
def _wc_send(S, i, line, mask, t, r):
    """Send WC buffer i's bytes (it holds `mask` of `line`) to memory as one (possibly
    partial) posted write (r: the region of the line, or -1)."""
    o = S[EH.WC] + N_WC * i
    acc = _mem_write(S, r, line, mask, t, PK_FENCED)
    S[ix(o + WC.BUSY)] = acc
    S[ix(o + WC.LINE)] = -1
    S[ix(o + WC.MASK)] = 0
    if acc > S[SC.WB_PENDING]:
        S[SC.WB_PENDING] = acc
    return acc


@inlined
def _wc_drain(S, i, t, r):
    o = S[EH.WC] + N_WC * i
    return _wc_send(S, i, S[ix(o + WC.LINE)], S[ix(o + WC.MASK)], t, r)


NEVER = (1 << 63) - 1   # a cycle later than any


@inlined
def _movnt_bytes(S, addr, size, r):
    """Non-temporal store of `size` bytes within one line through a WC buffer (r: the
    region of addr, or -1)."""
    line = addr >> 6
    if _evict_everywhere(S, line, False):
        _mem_write(S, r, line, FULL_MASK, S[SC.NOW], PK_NOW)
    n = S[TP.WC]
    wc = S[EH.WC]
    slot = -1
    # a free buffer, the one available first (wanted if none holds the line), chosen
    # without a branch: which one it is varies unpredictably
    best, best_busy = -1, NEVER
    for i in range(n):
        o = wc + N_WC * i
        li = S[ix(o + WC.LINE)]
        if li == line:
            slot = i
            break
        busy = S[ix(o + WC.BUSY)]
        take = (li == -1) & (busy < best_busy)
        best = i if take else best
        best_busy = busy if take else best_busy
    if slot < 0:
        if best < 0:  # all hold data: the oldest leaves partially filled
            best = 0
            for i in range(1, n):
                if S[ix(wc + N_WC * i + WC.STAMP)] < S[ix(wc + N_WC * best + WC.STAMP)]:
                    best = i
            _wc_drain(S, best, S[SC.NOW], -1)
        _stall_until(S, S[ix(wc + N_WC * best + WC.BUSY)])
        slot = best
        S[ix(wc + N_WC * slot + WC.LINE)] = line
        S[SC.MEM_STAMP] += 1
        S[ix(wc + N_WC * slot + WC.STAMP)] = S[SC.MEM_STAMP]
    mask = S[ix(wc + N_WC * slot + WC.MASK)] | (
        FULL_MASK if size == 64 else ((1 << size) - 1) << (addr & 63))
    S[ix(wc + N_WC * slot + WC.MASK)] = mask
    if mask == FULL_MASK:   # the line and mask just written: not read back from S
        _wc_send(S, slot, line, mask, S[SC.NOW], r)


@compiled
def _wc_drain_all(S):
    """Drain every WC buffer holding data; returns when the last drain is accepted."""
    t = S[SC.NOW]
    wc = S[EH.WC]
    latest = 0
    for i in range(S[TP.WC]):
        if S[ix(wc + N_WC * i + WC.LINE)] != -1:
            _wc_drain(S, i, t, -1)
        latest = max(latest, S[ix(wc + N_WC * i + WC.BUSY)])
    return latest


@inlined
def _flush(S, line, kind, r):
    """CLFLUSH (ordered among themselves), CLFLUSHOPT or CLWB (overlapping until a fence);
    r: the line's region, or -1."""
    now = S[SC.NOW]
    dirty = _evict_everywhere(S, line, kind == CLWB)
    if kind == CLFLUSH:
        start = max(now, S[SC.CLFLUSH_CHAIN])
        done = start + S[TP.CLFLUSH]
        if dirty:  # CLFLUSH is ordered with stores: durable once done (PMDK drains no fence)
            done = max(done, _mem_write(S, r, line, FULL_MASK, start, PK_NOW))
        S[SC.CLFLUSH_CHAIN] = done
        _sb_push(S, done)
    else:
        start = max(now, S[SC.FLUSH_UNIT])
        cost = S[TP.CLWB] if kind == CLWB else S[TP.CLFLUSHOPT]
        S[SC.FLUSH_UNIT] = start + cost
        done = start + cost
        if dirty:  # guaranteed durable only after the next fence
            done = max(done, _mem_write(S, r, line, FULL_MASK, start, PK_FENCED))
        if done > S[SC.WB_PENDING]:
            S[SC.WB_PENDING] = done
        _sb_push(S, start + cost)
    _issue(S, 1)


# Lines of lookahead for the host-cache hints of bulk ops: the LLC's state of each line is
# a host cache miss (its sets span megabytes), the other levels' are host-cached.
BULK_AHEAD = 4


@compiled
def _flush_range(S, pt, frames, addr, size, kind):
    """FLUSH_RANGE: a flush of every line of [addr, addr + size), each write-back moved on
    to the persistence domain at once; region and pt row looked up once a page."""
    page, r, row = -1, -1, -1
    for line in range(addr >> 6, ((addr + size - 1) >> 6) + 1):
        if (line << 6) >> mm.PAGE_SHIFT != page:
            page = (line << 6) >> mm.PAGE_SHIFT
            r = mm.find_region(S, line << 6)
            row = mm.page_row(S, line << 6)
        cm.prefetch_set(S, S[TP.LEVELS] - 1, line + BULK_AHEAD)   # found there: invalidated
        _rob_gate(S)
        _flush(S, line, kind, r)
        if S[SC.PQ_COUNT]:
            _persist_queue(S, pt, frames, page, row)


@compiled
def _sfence(S):
    _stall_until(S, max(_wc_drain_all(S), S[SC.WB_PENDING], S[SC.CLFLUSH_CHAIN]))
    S[SC.NOW] += S[TP.SFENCE]


@compiled
def _lfence(S):
    _stall_until(S, S[SC.LOADS_MAX])
    S[SC.ROB_COUNT] = 0
    S[SC.NOW] += S[TP.LFENCE]


@compiled
def _mfence(S):
    _stall_until(S, max(S[SC.LOADS_MAX], S[SC.SB_LAST]))
    _sfence(S)
    S[SC.ROB_COUNT] = 0
    S[SC.NOW] += S[TP.MFENCE] - S[TP.SFENCE]


@compiled
def _copy(S, pt, frames, op, dst, src, n):
    """Bulk copies, expanded per destination line (sources are read line by line)."""
    if n <= 0:
        return
    nrfo = op == REP_MOVSB and n >= S[TP.REP_NRFO]
    if op == REP_MOVSB:
        S[SC.NOW] += S[TP.REP_START]
    functional = S[TP.FUNCTIONAL]
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
        cm.prefetch_tags(S, S[TP.LEVELS] - 1, (d >> 6) + BULK_AHEAD)
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
        _rob_gate(S)
        t0 = S[SC.NOW]
        ready = t0
        words = (k + 7) // 8
        for sl in range(s >> 6, ((s + k - 1) >> 6) + 1):
            if sl != prev_src:
                ready = max(ready, _demand(S, sl, t0, K_LOAD))
                prev_src = sl
                if op != REP_MOVSB:  # the loop's other 8-byte loads of this line hit L1
                    cm.count(S, 0, cm.CC.LOAD_HITS, max(0, min(words, 8) - 1))
        _rob_push(S, ready)
        S[SC.DEP_READY] = max(S[SC.DEP_READY], ready) if pos else ready   # the data copied
        line = d >> 6
        if op == NT_COPY:
            _movnt_bytes(S, d, k, r)
            _issue(S, words * (1 + S[TP.MOVNT]))
        elif op == REP_MOVSB:
            if nrfo and k == 64:
                _own_line(S, line, t0)
                _sb_push(S, max(t0 + 1, S[SC.SB_LAST] + S[TP.STORE_COMMIT]))
            else:
                _store_line(S, line)
            f = S[SC.REP_FRAC] + S[TP.REP_LINE_FP] * k // 64
            S[SC.NOW] += f // md.FP
            S[SC.REP_FRAC] = f % md.FP
        else:
            _store_line(S, line)
            cm.count(S, 0, cm.CC.STORE_HITS, words - 1)
            _issue(S, 2 * words)
        if functional:
            if op != NT_COPY and eadr:  # _eadr_store(S, d, k): d..d+k is in one line
                _pq_push(S, d >> 6, FULL_MASK, PK_NOW)
            if S[SC.PQ_COUNT]:
                _persist_queue(S, pt, frames, dpage, drow)
        pos += k


# ---------------------------------------------------------------- precheck + loop
@inlined
def _op_ranges(ops, i):
    """The byte ranges op i touches: (dst start, dst end, src start, src end)."""
    op = ops[i, COL_OP]
    a = ops[i, COL_ADDR]
    n = ops[i, COL_SIZE]
    if op == LOAD or op == STORE or op == MOVNT or op == PEER_WRITE or op == PEER_READ:
        return a, a + n, 0, 0
    if op == CLFLUSH or op == CLFLUSHOPT or op == CLWB:
        return a & ~63, (a & ~63) + 64, 0, 0
    if op == FLUSH_RANGE and n > 0:
        return a & ~63, ((a + n + 63) >> 6) << 6, 0, 0
    if op == REP_MOVSB or op == NT_COPY or op == CAREFUL_COPY:
        return a, a + n, ops[i, COL_SRC], ops[i, COL_SRC] + n
    return 0, 0, 0, 0


@inlined
def _fast_ok(S, op, d0, d1, s0, s1):
    """The common case needs no check: ranges inside the region checked last, and a
    functional store into the page made present last."""
    lo, hi = S[SC.REG_LO], S[SC.REG_HI]
    if d1 > d0 and (d0 < lo or d1 > hi):
        return False
    if s1 > s0:
        return False
    if S[TP.FUNCTIONAL] and (op == STORE or op == MOVNT or op == PEER_WRITE):
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
def _first_fault(S, a0, a1, checked):
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


@inlined
def _is_copy(op):
    return op == REP_MOVSB or op == NT_COPY or op == CAREFUL_COPY


@compiled
def _zero_tail(S, ops, i, d0, d1):
    """Does op i's fixup zero the destination's uncopied tail (copy_from_user)? Only when
    the fault was in the source and the whole destination is accessible."""
    s0 = ops[i, COL_SRC]
    return (ops[i, COL_FLAGS] & FLAG_ZERO_TAIL) != 0 and S[SC.FAULT] != ST_OK and \
        s0 <= S[SC.FAULT_ADDR] < s0 + ops[i, COL_SIZE] and \
        _first_fault(S, d0, d1, True)[1] == ST_OK


@compiled
def _precheck(S, pt, frames, ops, i, d0, d1, s0, s1, out):
    """Validate op i before any side effect: mapped, permitted (privilege, SMAP), no poison
    consumed, and pages present when functional. Returns how many of its bytes execute:
    all of them, fewer when an exception-table op faults part-way (S[SC.FAULT] then says
    why; for a load or store, none), or -1 if the run must stop here (out[] filled)."""
    op = ops[i, COL_OP]
    flags = ops[i, COL_FLAGS]
    ok = ops[i, COL_SIZE]
    why = ST_OK
    at = 0
    peer = op == PEER_WRITE or op == PEER_READ
    fd, wd = _first_fault(S, d0, d1, not peer)   # another core's access: mapped only
    if wd != ST_OK:
        ok, why, at = fd - d0, wd, fd
    fs, ws = _first_fault(S, s0, s1, True)
    if ws != ST_OK and fs - s0 < ok:
        ok, why, at = fs - s0, ws, fs
    if S[SC.POISON_N] and (op == LOAD or _is_copy(op)):
        r0 = d0 if op == LOAD else s0
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
        if not _is_copy(op):
            ok = 0
    elif d1 > d0 and not S[SC.POISON_N] and not peer:   # not checked as ours
        r = mm.find_region(S, d0)
        # remember the region for the fast path unless its permission depends on EFLAGS.AC
        if d1 <= mm.reg(S, r, mm.RG.END) and not (S[SC.KERNEL] and S[TP.SMAP]
                                                  and mm.reg(S, r, mm.RG.USER)):
            S[SC.REG_LO] = mm.reg(S, r, mm.RG.BASE)
            S[SC.REG_HI] = mm.reg(S, r, mm.RG.END)
    if S[TP.FUNCTIONAL] and (op == STORE or op == MOVNT or op == PEER_WRITE or _is_copy(op)):
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
        _rob_gate(S)
        _store_line(S, d >> 6)
        _issue(S, (k + 7) // 8)
        if S[TP.FUNCTIONAL]:
            mm.write_imm(S, pt, frames, d, 0, k)
            _eadr_store(S, d, k)
            if S[SC.PQ_COUNT]:
                _persist_queue(S, pt, frames, -1, -1)
        pos += k


@compiled
def _fixup(S, pt, frames, ops, i, ok, res):
    """Op i faulted after `ok` bytes and its exception-table entry catches it: pay for the
    exception, record the bytes not done, zero the tail where asked."""
    d0, d1, s0, s1 = _op_ranges(ops, i)
    res[i] = ops[i, COL_SIZE] - ok
    if S[SC.FAULT] == ST_FAULT_MCE:   # the consuming read reaches the media, then #MC
        _stall_until(S, _mem_read(S, S[SC.FAULT_ADDR] >> 6, S[SC.NOW]))
        S[SC.NOW] += S[TP.MCE]
    else:
        S[SC.NOW] += S[TP.FAULT_FIXUP]
    if _zero_tail(S, ops, i, d0, d1):
        _zero_fill(S, pt, frames, d0 + ok, d1 - d0 - ok)
    S[SC.FAULT] = ST_OK


@inlined
def _store_data(S, pt, frames, ops, data, i, addr, size):
    if ops[i, COL_DATA] >= 0:
        mm.write_bytes(S, pt, frames, addr, data, ops[i, COL_DATA], size)
    else:
        mm.write_imm(S, pt, frames, addr, ops[i, COL_IMM], size)


# ---------------------------------------------------------------- speculation
FAR = 1 << 62   # an indexed address beyond the physical address space: unmapped


@inlined
def _load_address(S, ops, i, val, mask):
    """Address of LOAD i: indexed by the previous load's value `val`, masked by the last
    INDEX_MASK's `mask`, or as written."""
    a = ops[i, COL_ADDR]
    flags = ops[i, COL_FLAGS]
    if flags & FLAG_INDEXED:
        if val < 0 or val > (1 << 40):
            return FAR
        return a + val * ops[i, COL_IMM]
    if flags & FLAG_MASKED:
        base = ops[i, COL_SRC]
        return base + ((a - base) & mask)
    return a


@inlined
def _index_mask(S, ops, j, t, dep):
    """INDEX_MASK op j issued at cycle t (`dep`: when the previous load's data is ready):
    (the mask, the cycle the masked index is ready)."""
    if ops[j, COL_FLAGS] & FLAG_DEPENDENT:
        t = max(t, dep)
    return (-1 if ops[j, COL_ADDR] < ops[j, COL_SIZE] else 0), t + S[TP.INDEX_MASK]


@compiled
def _transient(S, pt, frames, ops, j0, j1, resolve):
    """Run ops j0..j1-1 down a mispredicted path until the branch resolves at `resolve`:
    loads fill the caches (lines from memory marked F_TRANSIENT), stores are discarded,
    an LFENCE (or any fence, flush, STAC/CLAC, bulk op, branch) ends the window, as does a
    reorder buffer's worth of uops. A load that would fault or consume poison ends it too:
    no fill. Architectural state other than the caches is left as it was."""
    now = S[SC.NOW]
    S[SC.SPEC] = 1
    dep, val, mask = S[SC.DEP_READY], S[SC.VAL], S[SC.MASK]
    uops = 0
    work = 0
    for j in range(j0, j1):
        t = now + uops // S[TP.UPC] + work
        if t >= resolve or uops >= S[TP.ROB]:
            break
        op = ops[j, COL_OP]
        flags = ops[j, COL_FLAGS]
        if op == LOAD:
            a = _load_address(S, ops, j, val, mask)
            size = ops[j, COL_SIZE]
            if flags & (FLAG_DEPENDENT | FLAG_INDEXED | FLAG_MASKED):
                t = max(t, dep)
            if t >= resolve or _first_fault(S, a, a + size, True)[1] != ST_OK or \
                    (S[SC.POISON_N] != 0 and mm.first_poisoned(S, pt, a, a + size) >= 0):
                break
            dep = _demand(S, a >> 6, t, K_LOAD)
            if (a + size - 1) >> 6 != a >> 6:
                dep = max(dep, _demand(S, (a + size - 1) >> 6, t, K_LOAD))
            val = mm.read_value(S, pt, frames, a, min(size, 8)) if S[TP.FUNCTIONAL] else 0
        elif op == INDEX_MASK:
            mask, dep = _index_mask(S, ops, j, t, dep)
        elif op == WORK:
            work += ops[j, COL_IMM]
        elif op != STORE and op != MOVNT and op != SITE:
            break
        uops += 1
    S[SC.SPEC] = 0
    S[SC.NOW] = now   # a fill-buffer stall on the wrong path does not delay the right one


@compiled
def _branch(S, pt, frames, ops, i):
    """A bounds-check branch (macro-fused cmp + jcc). Returns how many ops to skip."""
    t = S[SC.NOW]
    if ops[i, COL_FLAGS] & FLAG_DEPENDENT:
        t = max(t, S[SC.DEP_READY])
    resolve = t + S[TP.BRANCH_RESOLVE]
    inside = ops[i, COL_ADDR] < ops[i, COL_SIZE]
    predicted = ops[i, COL_FLAGS] & FLAG_PREDICT_IN != 0
    body = ops[i, COL_IMM]
    _issue(S, 1)
    if predicted != inside:
        if predicted:
            _transient(S, pt, frames, ops, i + 1, i + 1 + body, resolve)
        S[SC.NOW] = max(S[SC.NOW], resolve) + S[TP.MISPREDICT]
    return 0 if inside else body


PF_AHEAD = 16   # ops of lookahead for host prefetch hints
PLAIN_RUN_BACKOFF = 8   # a guess; any value gives the same results


@inlined
def _host_prefetch_op(S, ops, j):
    """Host-cache hint for op j (a few ops ahead): if it is a load or store of a new line,
    start loading its sets' state below L1 (L1's is small and stays in the host cache)."""
    op = ops[ix(j), COL_OP]
    if op == LOAD or op == STORE:
        line = ops[ix(j), COL_ADDR] >> 6
        if line != ops[ix(j - 1), COL_ADDR] >> 6 and line != ops[ix(j - 2), COL_ADDR] >> 6:
            for lvl in range(1, S[TP.LEVELS]):
                cm.prefetch_set(S, lvl, line)


@compiled
def _plain_run(S, pt, frames, ops, data, i, n):
    """Execute ops i.. while they are plain loads and stores within one line that need no
    check (the common case of most traces), with the pipeline scalars, the L1 use stamp
    and hit counters in registers; returns the first op not executed. Each op has exactly
    the effects the general path gives it (same helpers, same order): only the loads and
    stores of S between ops are gone, whose store-to-load chains bound the general path.
    An L1 miss hands the scalars it uses (now, end, the stamp) to _demand_miss in S."""
    functional = S[TP.FUNCTIONAL]
    lo, hi, page_ok = S[SC.REG_LO], S[SC.REG_HI], S[SC.PAGE_OK]
    # stores into an eADR region queue their lines for the persistence domain: general path
    if functional and hi > lo and mm.persistence(S, lo) == mm.P_EADR:
        page_ok = -1
    hit = cm.hit_cycles(S, 0)
    upc, commit = S[TP.UPC], S[TP.STORE_COMMIT]
    tags, flg, rdy = S[MH.TAGS], S[MH.FLAGS], S[MH.READY]
    rob, rseq, rdone, sbn, sb = S[TP.ROB], S[EH.ROB_SEQ], S[EH.ROB_DONE], S[TP.SB], S[EH.SB]
    policy, ways, repl = cm.policy(S, 0), cm.ways(S, 0), S[MH.REPL]
    now, frac, seq = S[SC.NOW], S[SC.UOP_FRAC], S[SC.UOP_SEQ]
    rh, rc, lmax, dep = S[SC.ROB_HEAD], S[SC.ROB_COUNT], S[SC.LOADS_MAX], S[SC.DEP_READY]
    sh, sc, sl, end = S[SC.SB_HEAD], S[SC.SB_COUNT], S[SC.SB_LAST], S[SC.END]
    stamp = S[cm.LV_AT + cm.LV.STAMP]
    # the two L1 blocks used last (a copy alternates between a source and a destination
    # line), each valid while its block still holds its line
    ml0, ms0, mb0 = S[cm.L1_MEMO_AT + cm.MEMO.LINE], S[cm.L1_MEMO_AT + cm.MEMO.SET], \
        S[cm.L1_MEMO_AT + cm.MEMO.BLOCK]
    ml1, ms1, mb1 = -1, 0, 0
    start = i
    lhits, shits = 0, 0
    while i < n:
        op = ops[ix(i), COL_OP]
        flags = ops[ix(i), COL_FLAGS]
        addr = ops[ix(i), COL_ADDR]
        size = ops[ix(i), COL_SIZE]
        if op == LOAD:
            if flags & ~FLAG_DEPENDENT or (functional and i + 1 < n
                                           and ops[ix(i + 1), COL_FLAGS] & FLAG_INDEXED):
                break
        elif op != STORE or flags or (functional and addr >> 12 != page_ok):
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
        if i + PF_AHEAD < n:
            _host_prefetch_op(S, ops, i + PF_AHEAD)
        now, rh, rc = _rob_gate_v(S, rob, rseq, rdone, now, seq, rh, rc)
        t0 = now
        if op == LOAD and flags and dep > t0:
            t0 = dep
        if b >= 0:
            stamp += 1
            cm.policy_hit(S, policy, repl + i0, ways, b - i0, stamp)
            ready = max(t0 + hit, S[ix(rdy + b)])
            if op == LOAD:
                lhits += 1
            else:
                shits += 1
                S[ix(flg + b)] |= cm.F_DIRTY
        else:
            S[SC.NOW], S[SC.END], S[cm.LV_AT + cm.LV.STAMP] = now, end, stamp
            ready = _demand_miss(S, line, t0, K_LOAD if op == LOAD else K_STORE)
            now, end, stamp = S[SC.NOW], S[SC.END], S[cm.LV_AT + cm.LV.STAMP]
            ml1, ms1, mb1 = ml0, ms0, mb0
            ml0, ms0, mb0 = line, S[cm.L1_MEMO_AT + cm.MEMO.SET], \
                S[cm.L1_MEMO_AT + cm.MEMO.BLOCK]
        if op == LOAD:
            now, frac, seq = _issue_v(now, frac, seq, 1, upc)
            dep = ready
            now, rh, rc, lmax = _rob_push_v(S, rob, rseq, rdone, ready, now, seq, rh, rc, lmax)
        else:
            # t0: the cycle the store issued, before a miss's stall
            now, sh, sc, sl, end = _sb_push_v(S, sbn, sb, max(ready, t0 + 1, sl + commit),
                                              now, sh, sc, sl, end)
            now, frac, seq = _issue_v(now, frac, seq, 1, upc)
            if functional:
                _store_data(S, pt, frames, ops, data, i, addr, size)
        if b < 0 and functional and S[SC.PQ_COUNT]:   # a miss wrote a dirty victim back
            _persist_queue(S, pt, frames, -1, -1)
        i += 1
    if i == start:
        return i
    S[SC.NOW], S[SC.UOP_FRAC], S[SC.UOP_SEQ] = now, frac, seq
    S[SC.ROB_HEAD], S[SC.ROB_COUNT], S[SC.LOADS_MAX], S[SC.DEP_READY] = rh, rc, lmax, dep
    S[SC.SB_HEAD], S[SC.SB_COUNT], S[SC.SB_LAST], S[SC.END] = sh, sc, sl, end
    S[cm.LV_AT + cm.LV.STAMP] = stamp
    S[SC.OPS] += i - start
    cm.count(S, 0, cm.CC.LOAD_HITS, lhits)
    cm.count(S, 0, cm.CC.STORE_HITS, shits)
    cm.remember_l1(S, ml0, ms0, mb0)
    return i


@compiled
def run(S, pt, frames, ops, data, start, res, out, plain):
    """Execute ops[start:]. out[0] = status (ST_OK when all ran), out[1] = op index reached;
    on a stop out[2:4] say why. The op that stopped the run has had no effect. res[i] gets
    the bytes an exception-table op i left undone (res is as long as ops when any op has
    FLAG_EXTABLE or FLAG_MCSAFE). `plain`: whether plain loads and stores may take
    _plain_run (the results are the same either way; a test holds the two paths equal)."""
    out[0] = ST_OK
    functional = S[TP.FUNCTIONAL]
    n = ops.shape[0]
    i = start
    skip = 0 if plain else n   # after _plain_run took no op, the next few bypass it
    while i < n:
        op = ops[i, COL_OP]
        if (op == LOAD or op == STORE) and skip == 0:
            j = _plain_run(S, pt, frames, ops, data, i, n)
            if j == n:
                break
            if j == i:
                skip = PLAIN_RUN_BACKOFF
            i = j
        elif skip > 0:
            skip -= 1
        out[1] = i
        if i + PF_AHEAD < n:
            _host_prefetch_op(S, ops, i + PF_AHEAD)
        op = ops[i, COL_OP]
        flags = ops[i, COL_FLAGS]
        addr = ops[i, COL_ADDR]
        size = ops[i, COL_SIZE]
        if op == LOAD and flags & (FLAG_INDEXED | FLAG_MASKED):
            addr = _load_address(S, ops, i, S[SC.VAL], S[SC.MASK])
            d0, d1, s0, s1 = addr, addr + size, 0, 0
        else:
            d0, d1, s0, s1 = _op_ranges(ops, i)
        ok = size
        if not _fast_ok(S, op, d0, d1, s0, s1):
            ok = _precheck(S, pt, frames, ops, i, d0, d1, s0, s1, out)
            if ok < 0:
                return
        S[SC.OPS] += 1
        if op != SITE and op != WORK and op != PEER_WRITE and op != PEER_READ:
            _rob_gate(S)
        if op == LOAD:
            if ok == size:
                _load(S, addr, size, flags & (FLAG_DEPENDENT | FLAG_INDEXED | FLAG_MASKED))
                if functional and i + 1 < n and ops[i + 1, COL_FLAGS] & FLAG_INDEXED:
                    S[SC.VAL] = mm.read_value(S, pt, frames, addr, min(size, 8))
        elif op == STORE:
            if ok == size:
                _store(S, addr, size)
                if functional:
                    _store_data(S, pt, frames, ops, data, i, addr, size)
                    _eadr_store(S, addr, size)
        elif op == MOVNT:
            if ok == size:
                _movnt_bytes(S, addr, size, -1)
                _issue(S, S[TP.MOVNT])
                if functional:
                    _store_data(S, pt, frames, ops, data, i, addr, size)
        elif op == CLFLUSH or op == CLFLUSHOPT or op == CLWB:
            _flush(S, addr >> 6, op, -1)
        elif op == FLUSH_RANGE:
            if size > 0:
                _flush_range(S, pt, frames, addr, size, ops[i, COL_IMM])
        elif op == SFENCE:
            _sfence(S)
        elif op == LFENCE:
            _lfence(S)
        elif op == MFENCE:
            _mfence(S)
        elif op == STAC or op == CLAC:
            S[SC.AC] = 1 if op == STAC else 0
            if S[TP.SMAP]:
                S[SC.NOW] += S[TP.STAC] if op == STAC else S[TP.CLAC]
        elif op == REP_MOVSB or op == NT_COPY or op == CAREFUL_COPY:
            if flags & FLAG_DEPENDENT:   # its addresses came from the previous load's data
                _stall_until(S, S[SC.DEP_READY])
            _copy(S, pt, frames, op, addr, ops[i, COL_SRC], ok)
        elif op == WORK:
            if flags & FLAG_DEPENDENT:   # it computes on the previous load's data
                _stall_until(S, S[SC.DEP_READY])
            S[SC.NOW] += ops[i, COL_IMM]
        elif op == SITE:
            _site_close(S, S[SC.NOW])
            S[SC.SITE] = ops[i, COL_IMM]
        elif op == BRANCH:
            i += _branch(S, pt, frames, ops, i)
        elif op == PEER_WRITE:
            for line in range(addr >> 6, ((addr + size - 1) >> 6) + 1):
                _peer_write(S, line)
            if functional:
                _store_data(S, pt, frames, ops, data, i, addr, size)
                _eadr_store(S, addr, size)   # under eADR the peer's cache is durable too
        elif op == PEER_READ:
            for line in range(addr >> 6, ((addr + size - 1) >> 6) + 1):
                _peer_read(S, line)
        elif op == INDEX_MASK:
            S[SC.MASK], S[SC.DEP_READY] = _index_mask(S, ops, i, S[SC.NOW], S[SC.DEP_READY])
            _issue(S, 3)   # cmp, sbb, and
        if S[SC.FAULT] != ST_OK:
            _fixup(S, pt, frames, ops, i, ok, res)
        if functional:
            if S[SC.PQ_COUNT]:
                _persist_queue(S, pt, frames, -1, -1)
            if (op == SFENCE or op == MFENCE) and S[SC.PEND_COUNT]:
                _apply_pending(S, pt, frames)
        i += 1
    out[1] = n


@compiled
def _site_close(S, t):
    """Charge the cycles and ops since the current site began to it."""
    _site_count(S, SCTR.CYCLES, t - S[SC.SITE_START])
    _site_count(S, SCTR.OPS, S[SC.OPS] - S[SC.SITE_OPS])
    S[SC.SITE_START] = t
    S[SC.SITE_OPS] = S[SC.OPS]


@compiled
def finish(S):
    """Cycle at which everything issued so far has completed; charges the wait to the site."""
    end = max(S[SC.NOW], S[SC.LOADS_MAX], S[SC.SB_LAST], S[SC.END], S[SC.CLFLUSH_CHAIN])
    _site_close(S, end)
    S[SC.NOW] = end
    return end
