"""The cache hierarchy: the walk down, installs up, the victim cascade, back-invalidation,
prefetch fills and another core's accesses (memmodel.cache is one level).

A demand access enters at `demand` (L1) and returns the cycle its data is ready; a miss takes a
line fill buffer (`demand_miss` returns when one is free, the caller stalls issue until then),
walks the levels below and fills every level above the hit, or reads the media. A miss of the
L2, demand or prefetch, also holds one of the L2's miss entries (Intel's superqueue) until its
data is back: a demand miss waits for one, a prefetch is dropped. The events that sites count
(L1 and LLC misses, media reads and writes, the cycles a miss was outstanding) are running
totals in ms; the core attributes them to sites.
"""
from numba import boolean, int64

from memmodel import _coherence as coh
from memmodel import _hotlines as hot
from memmodel import _l1 as l1
from memmodel import _memside as mside
from memmodel import _snoopfilter as sf
from memmodel import cache as cm
from memmodel import memory as mm
from memmodel._memside import FULL_MASK
from memmodel._persist import PK_NOW
from memmodel.jit import STATE, apart, compiled, inlined, ix
from memmodel.layout import MH, MS, MT, SF_DIRECTORY
from memmodel.prefetch import PF_NONE, PREFETCHER_IDS, bit
from memmodel.prefetch import _dispatch as prefetchers

K_LOAD, K_STORE, K_PREFETCH = 0, 1, 2   # access kinds, for counters
IP_STRIDE = bit(PREFETCHER_IDS.index("ip_stride"))   # the IP-stride prefetcher's mask bit


@compiled
def _evicted(S, lvl, vline, vdirty, t):
    """Handle the victim of a fill at `lvl`: back-invalidation (an inclusive LLC's; a
    non-inclusive one's victim tracked by the snoop filter, memmodel._snoopfilter), then a
    dirty victim is written into the level below (installed there if absent, cascading) or
    to memory."""
    nlev = S[MT.LEVELS]
    while vline != cm.INVALID:
        if lvl == nlev - 1 and S[MT.INCLUSIVE]:
            if S[MT.INCLUSIVE] == SF_DIRECTORY:   # the cores' copies stay: tracked in the
                sf.track(S, vline, t)            # snoop filter's extended directory
            else:
                vdirty |= coh.back_invalidate(S, vline)
        if not vdirty:
            return
        lvl += 1
        if lvl >= nlev:
            mside.mem_write(S, -1, vline, FULL_MASK, t, PK_NOW)
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
def install(S, lvl, i0, line, ready, flg):
    b, vline, vdirty = cm.fill(S, lvl, i0, line, ready, flg)
    # a clean victim has nothing to do below, unless an inclusive LLC (or one whose snoop
    # filter is modelled: MT.INCLUSIVE SF_DIRECTORY) evicted it
    if vline != cm.INVALID and (vdirty or (lvl == S[MT.LEVELS] - 1 and S[MT.INCLUSIVE])):
        _evicted(S, lvl, vline, vdirty, ready)
    return b


@inlined
def spec_flag(S, from_memory):
    """F_TRANSIENT for a fill from memory by a transient load (a flush+reload attacker sees
    the line become cached), else 0."""
    return cm.F_TRANSIENT if from_memory and S[MS.SPEC] else 0


@compiled
def _clear_flag(S, line, flag):
    """Clear `flag` on every level's copy of `line`."""
    for lvl in range(S[MT.LEVELS]):
        b = cm.lookup(S, lvl, line)
        if b >= 0:
            cm.set_flags(S, b, cm.flags(S, b) & ~flag)


@compiled
def first_use(S, lvl, line, f):
    """A demand access hits a block with flags `f` at `lvl`: a prefetched line proved
    useful; a line a transient load brought in is now used architecturally (not a leak).
    Returns the block's new flags."""
    if f & cm.F_PREFETCHED:
        f &= ~cm.F_PREFETCHED
        cm.count(S, lvl, cm.CC.PREFETCH_USEFUL, 1)
    if f & cm.F_TRANSIENT and not S[MS.SPEC]:
        _clear_flag(S, line, cm.F_TRANSIENT)   # used architecturally now: not a leak
        f &= ~cm.F_TRANSIENT
    return f


@inlined
def _walk(S, line, t0, first, kind, addr):
    """Look `line` up from level `first` down (for the access of byte `addr`); fill the
    levels above the hit (or all, from memory or another core). Returns the cycle its data
    is available at level `first` (-1: a prefetch dropped, every L2 miss entry busy), and
    F_SHARED if the line is shared with another core (for the caller's fill above `first`),
    else 0. Then the level that held the line (MT.LEVELS: memory or another core), what
    the other cores held (memmodel._coherence: NONE when the walk did not leave this core's
    private levels, or there is one core) and 1 if it came from (or was invalidated on) the
    other socket.
    Inlined into its two callers, demand_miss (whose every call makes one walk: no call's
    entry and exit a miss) and _prefetch."""
    nlev = S[MT.LEVELS]
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
    # a miss of the L2 holds one of its miss entries until its data is back (MT.SQ is 0
    # without an L2); a prefetch finding none free is dropped, a demand miss waits for one
    l2_miss = hit > 1 and S[MT.SQ] > 0
    if l2_miss and first_free(S, S[MH.SQ]) > t0:
        if kind == K_PREFETCH:
            return -1, 0, hit, coh.NONE, 0
        t0 = first_free(S, S[MH.SQ])
    # past this core's private levels: the other cores' copies are snooped (and the other
    # sockets' last levels)
    found, busy, remote = coh.NONE, 0, 0
    if hit >= nlev - 1 and S[MT.CORES] > 1:
        found, busy, remote = coh.snoop(S, line, kind == K_STORE)
        if found != coh.NONE:
            cm.count(S, nlev - 1, cm.CC.PEER_TRANSFERS if found == coh.MODIFIED
                     else cm.CC.PEER_HITS, 1)
            if remote:
                coh.count_remote(S, found)
            if kind != K_STORE:
                shared = cm.F_SHARED
    if hit < nlev:
        if kind == K_LOAD:
            cm.count(S, hit, cm.CC.LOAD_HITS, 1)
        elif kind == K_STORE:
            cm.count(S, hit, cm.CC.STORE_HITS, 1)
        f = cm.flags(S, b)
        lat = cm.hit_cycles(S, hit)
        if f & cm.F_PEER:   # modified in another core: it sends the line (HITM) and keeps a
            lat = max(lat, S[MT.PEER])   # shared copy, unless this is a read-for-ownership
            f = (f & ~(cm.F_PEER | cm.F_SHARED)) | cm.F_DIRTY | (
                cm.F_SHARED if kind != K_STORE else 0)
            cm.set_flags(S, b, f)
            cm.count(S, hit, cm.CC.PEER_TRANSFERS, 1)
            found = coh.MODIFIED   # for the profiler: a HITM (its costs are paid above)
        elif found != coh.NONE:   # sent once the copy has arrived, if still on its way
            lat = max(lat, coh.transfer_cycles(S, found, kind == K_STORE, True, remote)
                      + max(0, busy - t0))
        if f & cm.F_SHARED:
            if kind == K_STORE:   # another core's copy is invalidated first
                lat = max(lat, upgrade(S, hit, line, addr))
                f &= ~cm.F_SHARED
            else:                 # still shared: the copies above say so too
                shared = cm.F_SHARED
        if f & (cm.F_PREFETCHED | cm.F_TRANSIENT) and kind != K_PREFETCH:
            cm.set_flags(S, b, first_use(S, hit, line, f))
        cm.touch(S, hit, i0, b)
        done = max(t0 + lat, cm.ready(S, b))
        i0 = i0_above
    elif found != coh.NONE:   # another core sends it (a non-inclusive last level)
        done = max(t0, busy) + coh.transfer_cycles(S, found, kind == K_STORE, False, remote)
    else:
        if kind != K_PREFETCH:
            S[MS.LLC_MISSES] += 1
        done = mside.mem_read(S, line, t0)
    flg = cm.F_PREFETCHED if kind == K_PREFETCH else spec_flag(
        S, hit == nlev and found == coh.NONE)
    for lvl in range(hit - 1, first - 1, -1):   # i0: line's set at level hit - 1
        install(S, lvl, i0 if lvl == hit - 1 else cm.set_start(S, lvl, line), line, done,
                 flg | shared)
        if flg:
            cm.count(S, lvl, cm.CC.PREFETCH_FILLS, 1)
    if found == coh.MODIFIED and kind != K_STORE:   # the modified data written back
        b = cm.lookup(S, nlev - 1, line)
        cm.set_flags(S, b, cm.flags(S, b) | cm.F_DIRTY)
    if l2_miss:
        take(S, S[MH.SQ], S[MT.SQ], done)
    return done, shared, hit, found, remote


@inlined
def first_free(S, sec):
    """The cycle the entry of the ordered buffers at S[sec] (line fill buffers or L2 miss
    entries) that frees first is free: they are kept in order of their times (take), so it
    is the first."""
    return S[ix(sec)]


@inlined
def take(S, sec, n, done):
    """The entry of the `n` ordered buffers at S[sec] that frees first holds a miss until
    `done`: its time leaves the ordered buffers and `done` goes in at its place. Which
    entry holds which miss plays no part in the model (only the first time is read), so
    kept in order the entries are one state for one set of times, whatever order the
    misses came in: a repeated body's entries then repeat word for word
    (emu.fastforward), not turned round."""
    if done >= S[ix(sec + n - 1)]:   # the latest fill yet (a stream's misses): all move up,
        for j in range(1, n):        # a copy with no compare (equal times: the same words)
            S[ix(sec + j - 1)] = S[ix(sec + j)]
        S[ix(sec + n - 1)] = done
        return
    j = 1
    while j < n and S[ix(sec + j)] < done:
        S[ix(sec + j - 1)] = S[ix(sec + j)]
        j += 1
    S[ix(sec + j - 1)] = done


@apart(STATE, int64, int64, int64, int64, int64, int64, boolean)
def _prefetch(S, lvl, pfs, line, t0, ip, addr, l2_missed):
    """Ask each prefetcher in the mask `pfs` of level `lvl` what to fetch after a demand
    miss on `line` (by the load at `ip` of address `addr`, ip 0: none; `l2_missed`: the
    miss missed the L2 too), then fill those lines from level `lvl` down. At L1 each fill
    needs a free line fill buffer, and each that misses the L2 a free L2 miss entry (_walk
    drops it otherwise)."""
    for pf in range(1, prefetchers.N_IDS):
        if not pfs & (1 << (pf - 1)):   # memmodel.prefetch.bit
            continue
        first, count, step = prefetchers.train(S, pf, line, S[MT.STREAM_DIST],
                                               S[MT.STREAM_DEG], ip, addr, l2_missed)
        for k in range(count):
            nxt = first + k * step
            if cm.lookup(S, lvl, nxt) >= 0 or mm.find_region(S, nxt << 6) < 0:
                continue
            if lvl == 0 and first_free(S, S[MH.LFB]) > t0:
                return
            done = _walk(S, nxt, t0, lvl, K_PREFETCH, 0)[0]
            if done < 0:   # dropped: no free L2 miss entry
                continue
            if lvl == 0:
                take(S, S[MH.LFB], S[MT.LFB], done)


@compiled
def _l1_first_use(S, line, f, t0, ip, addr):
    """first_use() at L1 by the load at `ip` (0: none) of address `addr`: a prefetch turned
    its miss into a hit, so it trains the IP-stride prefetcher as the miss would have. Apart
    from demand(), which is inlined into every access's handler: one call there."""
    if f & cm.F_PREFETCHED and ip != 0 and S[MT.PF_L1] & IP_STRIDE:
        _prefetch(S, 0, IP_STRIDE, line, t0, ip, addr, False)
    return first_use(S, 0, line, f)


@inlined
def demand(S, line, t0, kind, ip, addr):
    """A demand load or store (RFO) of one line issued at t0, by the load instruction at
    `ip` of byte address `addr` (ip 0: none, or not a load); marks the L1 copy dirty for
    stores. Returns (the data-ready cycle, the cycle issue waits until: when a miss found
    every line fill buffer busy, the first to free; else 0)."""
    i0, b = l1.lookup(S, line)
    if b >= 0:
        f = cm.flags(S, b)
        if kind == K_LOAD:
            cm.count(S, 0, cm.CC.LOAD_HITS, 1)
        else:
            cm.count(S, 0, cm.CC.STORE_HITS, 1)
        lat = cm.hit_cycles(S, 0)
        if f & (cm.F_PREFETCHED | cm.F_TRANSIENT | cm.F_SHARED):   # one test for the rare
            if f & cm.F_SHARED and kind != K_LOAD:
                lat = max(lat, upgrade(S, 0, line, addr))
                f &= ~cm.F_SHARED
            if f & (cm.F_PREFETCHED | cm.F_TRANSIENT):
                f = _l1_first_use(S, line, f, t0, ip, addr)
            cm.set_flags(S, b, f)
        stamp, done = l1.hit(S, cm.policy(S, 0), S[MH.REPL], cm.ways(S, 0), i0, b,
                             S[l1.STAMP_AT], t0, lat, S[MH.FLAGS], S[MH.READY], kind != K_LOAD)
        S[l1.STAMP_AT] = stamp
        return done, 0
    return demand_miss(S, line, t0, kind, ip, addr)


@inlined
def _pending(S, cycles, end, t0, done):
    """Add the part of [t0, done) not yet covered to the cycles a miss was outstanding (the
    union of the misses' intervals, as they are issued in order)."""
    if done > max(t0, S[end]):
        S[cycles] += done - max(t0, S[end])
        S[end] = done


@inlined
def _miss_events(S, line, t0, done, store, llc, addr, found, remote):
    """The profiler's events of a demand L1D miss of byte `addr` outstanding over [t0,
    done) that also missed the LLC if `llc`, whose snoop found `found` in other cores (on
    the other socket if `remote`)."""
    if store:
        S[MS.L1D_STORE_MISSES] += 1
    _pending(S, MS.L1D_PENDING, MS.L1D_MISS_END, t0, done)
    if llc:
        if store:
            S[MS.LLC_STORE_MISSES] += 1
        _pending(S, MS.LLC_PENDING, MS.LLC_MISS_END, t0, done)
    if S[MT.HOT_CAP]:
        hot.record(S, line, store, llc, done - t0, addr, found, remote)


@apart(STATE, int64, int64, int64, int64, int64)
def demand_miss(S, line, t0, kind, ip, addr):
    """demand() of a line that is not in L1."""
    cm.count(S, 0, cm.CC.LOAD_MISSES if kind == K_LOAD else cm.CC.STORE_MISSES, 1)
    S[MS.L1D_MISSES] += 1
    wait = 0
    if first_free(S, S[MH.LFB]) > t0:
        t0 = wait = first_free(S, S[MH.LFB])
    llc_before = S[MS.LLC_MISSES]
    if S[MT.LEVELS] > 1:
        done, shared, hit, found, remote = _walk(S, line, t0, 1, kind, addr)
        # the walk marks what it fills; a transient fill from memory is marked at L2 too
        spec = cm.F_TRANSIENT if S[MS.SPEC] != 0 and (
            cm.flags(S, cm.lookup(S, 1, line)) & cm.F_TRANSIENT) != 0 else 0
        if S[MT.PF_L2] != PF_NONE:
            _prefetch(S, 1, S[MT.PF_L2], line, t0, ip, addr, hit > 1)
    else:
        S[MS.LLC_MISSES] += 1
        done = mside.mem_read(S, line, t0)
        spec = spec_flag(S, True)
        shared, found, remote = 0, coh.NONE, 0
    take(S, S[MH.LFB], S[MT.LFB], done)
    _miss_events(S, line, t0, done, kind == K_STORE, S[MS.LLC_MISSES] != llc_before, addr,
                 found, remote)
    i0 = cm.set_start(S, 0, line)
    l1.remember(S, line, i0, install(S, 0, i0, line, done,
                                     (cm.F_DIRTY if kind == K_STORE else 0) | spec | shared))
    if S[MT.PF_L1] != PF_NONE:
        _prefetch(S, 0, S[MT.PF_L1], line, t0, ip, addr, False)
    return done, wait


@inlined
def own_line(S, line, t):
    """Gain a whole line for writing without reading it (fast-string no-RFO store)."""
    i0 = cm.set_start(S, 0, line)
    b = cm.find(S, 0, i0, line)
    if b >= 0:
        cm.count(S, 0, cm.CC.STORE_HITS, 1)
        if cm.flags(S, b) & cm.F_SHARED:   # the other core's copy is invalidated (no wait:
            upgrade(S, 0, line, line << 6)   # the line is not read)
        cm.set_flags(S, b, (cm.flags(S, b) | cm.F_DIRTY) & ~(cm.F_TRANSIENT | cm.F_SHARED))
        cm.touch(S, 0, i0, b)
        return
    cm.count(S, 0, cm.CC.STORE_MISSES, 1)
    S[MS.L1D_MISSES] += 1
    # a miss that reads nothing: no time pending; the other cores' copies are dropped (the
    # whole line is written)
    found, remote = coh.NONE, 0
    cores = S[MT.CORES] > 1
    if cores:
        found, _, remote = coh.snoop(S, line, True)
        if remote and found != coh.NONE:
            coh.count_remote(S, found)
    _miss_events(S, line, t, t, True, False, line << 6, found, remote)
    for lvl in range(1, S[MT.LEVELS]):
        j = cm.lookup(S, lvl, line)
        if j >= 0:
            cm.invalidate(S, lvl, j)
    install(S, 0, i0, line, t, cm.F_DIRTY)
    if cores and S[MT.INCLUSIVE] == SF_DIRECTORY:   # held here and not in the LLC
        sf.track(S, line, t)


@compiled
def peer_write(S, line, now):
    """Another core writes `line`: its read-for-ownership takes this core's copies (dirty
    bytes included: no write-back to memory) and leaves the line modified in its own cache,
    tracked at the last level (an inclusive LLC holds it; for a non-inclusive one the block
    stands for the snoop filter's entry) with F_PEER."""
    llc = S[MT.LEVELS] - 1
    for lvl in range(llc):
        b = cm.lookup(S, lvl, line)
        if b >= 0:
            cm.invalidate(S, lvl, b)
    i0 = cm.set_start(S, llc, line)
    b = cm.find(S, llc, i0, line)
    if b < 0:
        install(S, llc, i0, line, now, cm.F_PEER)
    else:
        cm.set_flags(S, b, (cm.flags(S, b) & ~(cm.F_PREFETCHED | cm.F_TRANSIENT | cm.F_SHARED))
                     | cm.F_PEER)
        cm.touch(S, llc, i0, b)


@compiled
def upgrade(S, lvl, line, addr):
    """A store of byte `addr` finds `line` shared with another core (at level `lvl`): the
    other cores' copies are invalidated first, and this core's copies stop being shared.
    Returns the wait, taken as one cache-to-cache round trip (peer_hitm_ns; remote_hitm_ns
    when copies on the other socket are invalidated)."""
    _clear_flag(S, line, cm.F_SHARED)
    cm.count(S, lvl, cm.CC.PEER_UPGRADES, 1)
    remote = 0
    if S[MT.CORES] > 1:
        remote = coh.snoop(S, line, True)[2]
    if S[MT.HOT_CAP]:
        hot.upgraded(S, line, addr)
    return coh.upgrade_cycles(S, remote)


@compiled
def peer_read(S, line, now):
    """Another core reads `line`: a copy this core modified is forwarded (the last level
    takes the modified data; it is installed there if absent) and every copy here becomes
    shared. A line this core does not hold is not its business."""
    llc = S[MT.LEVELS] - 1
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
        install(S, llc, i0, line, now, cm.F_SHARED | dirty)


@inlined
def evict_everywhere(S, line, keep):
    """Remove (or, with keep, clean) `line` at every level, in every core; returns 1 if a
    copy was dirty."""
    dirty = coh.drop_others(S, line, keep, True) if S[MT.CORES] > 1 else 0
    for lvl in range(S[MT.LEVELS]):
        b = cm.lookup(S, lvl, line)
        if b >= 0:
            if keep:
                dirty |= cm.flags(S, b) & cm.F_DIRTY
                cm.set_flags(S, b, cm.flags(S, b) & ~cm.F_DIRTY)
            else:
                dirty |= cm.invalidate(S, lvl, b)
    return dirty
