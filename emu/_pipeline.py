"""The core's pipeline: issue bandwidth, the instruction window, the store buffer and sites.

Timing is the resource-occupancy model of docs/design.md. SC.NOW is the dispatch cycle. An
op completes later; it retires in program order, once it and every older op completed, so
its window entries (ROB, load buffer) are held until the oldest incomplete op before it is
done. Only ops that complete after their dispatch are kept in the ring (loads that miss,
WORK chains, locked ops): they are what retirement waits for, in runs (rob_push_v).
SC.DONE_MAX, the latest completion of any op dispatched so far, is when the next op could
retire: a store, NT store or flush commits (leaves the store buffer) no earlier than that
(docs/hardware.md §8.1), and LFENCE waits for it (§7.1).
"""
from emu.state import EH, N_SCOUNT, SC, SCTR, TP
from memmodel import cache as cm
from memmodel.jit import compiled, inlined, ix
from memmodel.layout import MS


@inlined
def issue_v(now, frac, seq, uops, upc):
    """Spend issue bandwidth: `uops` at `upc` uops per cycle. Returns (now, frac, seq)."""
    f = frac + uops
    if f < upc:  # the common case, without an integer division
        return now, f, seq + uops
    return now + f // upc, f % upc, seq + uops


@inlined
def issue(S, uops):
    S[SC.NOW], S[SC.UOP_FRAC], S[SC.UOP_SEQ] = issue_v(S[SC.NOW], S[SC.UOP_FRAC], S[SC.UOP_SEQ],
                                                     uops, S[TP.UPC])


@inlined
def _site_count(S, counter, n):
    S[ix(S[EH.SITE_CTR] + S[SC.SITE] * N_SCOUNT + counter)] += n


@inlined
def charge(S, cause, before):
    """Charge dispatch's wait since cycle `before` (up to SC.NOW) to the stall `cause` (an
    SCTR column) of the current site: the part after the site began, which the previous
    site's wait for its own ops may have covered (site_close)."""
    d = waited(before, S[SC.NOW], S[SC.SITE_START])
    if d > 0:
        _site_count(S, cause, d)


@inlined
def waited(before, now, site_start):
    """charge()'s cycles in registers: dispatch's wait from `before` to `now`, within the site."""
    return max(now - max(before, site_start), 0)


@inlined
def site_stalls(S, window, store_buffer, fill_buffer):
    """Charge the waits _plain_run counted in registers to the current site."""
    _site_count(S, SCTR.WINDOW, window)
    _site_count(S, SCTR.STORE_BUFFER, store_buffer)
    _site_count(S, SCTR.FILL_BUFFER, fill_buffer)


@inlined
def stall_until(S, t, cause):
    if t > S[SC.NOW]:
        before = S[SC.NOW]
        S[SC.NOW] = t
        charge(S, cause, before)


@inlined
def _site_events(S, counter, total, since):
    """Charge the memory side's running `total` of an event, less its value at the site's
    start (S[since]), to the current site."""
    _site_count(S, counter, S[total] - S[since])
    S[since] = S[total]


# The ROB and store-buffer rings take and return their scalars (now, head, count, ...), and
# take their sizes and section offsets, so that a hot loop can keep all of them in registers
# (_plain_run: a store to S makes the compiler reload anything read from S); the S forms
# load and store them.
#
# The ROB ring's count (SC.ROB_COUNT) is of ops; its slots (SC.ROB_SLOTS) hold them in runs.
# An op completing no later than the latest completion so far (SC.DONE_MAX, an op still in the
# ring whenever it is later than dispatch) never is the oldest incomplete op the gate waits
# for: by the time the op that completes last before it retires, it has completed too. It
# joins the youngest slot (rob_ops counts a slot's ops), and leaves the window with it, in
# the same gate: a run of hits to one line, and the hits behind a miss, take one slot.


@inlined
def rob_gate_v(S, rob, lb, seqs, lseqs, done, nops, now, seq, lseq, head, count, slots):
    """Retire completed ops; stall while the oldest incomplete one is a ROB (in uops) or a
    load buffer (in loads, `lseq` counting the op about to dispatch) behind. `rob`/`lb`:
    the sizes, `seqs`/`lseqs`/`done`/`nops` the ring's sections' offsets. Behind the oldest
    incomplete op, completed uops retire in order at the retire width once it is done: a
    ROB entry `over` uops beyond a full window frees over / width cycles later. Returns
    (now, head, count, slots)."""
    while slots > 0:
        d = S[ix(done + head)]
        if d > now:
            over = seq - S[ix(seqs + head)] - rob
            if over < 0 and lseq - S[ix(lseqs + head)] <= lb and count < rob:
                break
            # the ROB not over-full (a stall for the load buffer): nothing to retire beyond d
            now = d + over // S[TP.RETIRE] if over > 0 else d
        count -= S[ix(nops + head)]
        head = head + 1 if head + 1 < rob else 0   # (head + 1) % rob, head < rob
        slots -= 1
    return now, head, count, slots


@inlined
def rob_gate(S, loads):
    """The gate before an op that takes `loads` load-buffer entries."""
    before = S[SC.NOW]
    S[SC.NOW], S[SC.ROB_HEAD], S[SC.ROB_COUNT], S[SC.ROB_SLOTS] = rob_gate_v(
        S, S[TP.ROB], S[TP.LB], S[EH.ROB_SEQ], S[EH.ROB_LSEQ], S[EH.ROB_DONE], S[EH.ROB_OPS],
        S[SC.NOW], S[SC.UOP_SEQ], S[SC.LSEQ] + loads, S[SC.ROB_HEAD], S[SC.ROB_COUNT],
        S[SC.ROB_SLOTS])
    charge(S, SCTR.WINDOW, before)


@inlined
def rob_push_v(S, rob, lb, seqs, lseqs, dones, nops, done, now, seq, lseq, head, count, slots,
               done_max):
    """An op that completes at `done` holds the window until then; `lseq`: the loads
    dispatched before it. Returns (now, head, count, slots, done_max)."""
    if done <= now:
        return now, head, count, slots, done_max
    if count == rob:
        now, head, count, slots = rob_gate_v(S, rob, lb, seqs, lseqs, dones, nops, now, seq,
                                             lseq, head, count, slots)
    i = head + slots   # (head + slots) % rob, both < rob
    if i >= rob:
        i -= rob
    if done <= done_max and slots > 0:   # it joins the youngest slot
        i = i - 1 if i > 0 else rob - 1
        S[ix(nops + i)] += 1
        return now, head, count + 1, slots, done_max
    S[ix(seqs + i)] = seq
    S[ix(lseqs + i)] = lseq
    S[ix(dones + i)] = done
    S[ix(nops + i)] = 1
    return now, head, count + 1, slots + 1, max(done_max, done)


@inlined
def rob_push(S, done):
    rob_push_at(S, done, S[SC.UOP_SEQ])


@inlined
def rob_push_at(S, done, seq):
    """rob_push of the uop numbered `seq` (a part of a WORK chain dispatched earlier)."""
    before = S[SC.NOW]
    S[SC.NOW], S[SC.ROB_HEAD], S[SC.ROB_COUNT], S[SC.ROB_SLOTS], S[SC.DONE_MAX] = rob_push_v(
        S, S[TP.ROB], S[TP.LB], S[EH.ROB_SEQ], S[EH.ROB_LSEQ], S[EH.ROB_DONE], S[EH.ROB_OPS],
        done, S[SC.NOW], seq, S[SC.LSEQ], S[SC.ROB_HEAD], S[SC.ROB_COUNT], S[SC.ROB_SLOTS],
        S[SC.DONE_MAX])
    charge(S, SCTR.WINDOW, before)


@inlined
def retired(S):
    """Every op dispatched so far has retired (dispatch waited for SC.DONE_MAX)."""
    S[SC.ROB_COUNT] = 0
    S[SC.ROB_SLOTS] = 0


@inlined
def drain_window(S, cause):
    """Everything older has completed and retired (a fence, a locked op)."""
    stall_until(S, S[SC.DONE_MAX], cause)
    retired(S)


# WORK chains are held in the ring as this many entries (the last of them completing
# last): a gate on the oldest sees the chain retire part by part, not all at once.
WORK_PARTS = 4


@compiled
def work(S, cycles, start):
    """`cycles` dependent 1-cycle uops starting at `start` (WORK): they take issue slots and
    window entries and complete one a cycle, so a younger op dispatches once the window
    has room, and fences and stores wait for the chain's end."""
    # all of them take issue slots; the last `rob` dispatch once the ones before them
    # have completed (at start + early), and are held in the window as WORK_PARTS entries
    before = S[SC.NOW]
    issue(S, cycles)
    charge(S, SCTR.WORK, before)
    early = max(cycles - S[TP.ROB], 0)
    stall_until(S, start + early, SCTR.WORK)
    rest = cycles - early
    first = S[SC.UOP_SEQ] - rest   # the sequence number of the first of them
    for k in range(WORK_PARTS):
        upto = rest * (k + 1) // WORK_PARTS
        if upto > rest * k // WORK_PARTS:
            rob_gate(S, 0)
            rob_push_at(S, start + early + upto, first + upto)


@inlined
def sb_push_v(S, n, sb, drain, now, head, count, last, end):
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
def commit_at(S):
    """The earliest cycle a store dispatched now can commit: after it retires (every older
    op completed) and after the store before it (in order, one per STORE_COMMIT cycles)."""
    return max(S[SC.NOW] + 1, S[SC.DONE_MAX], S[SC.SB_LAST] + S[TP.STORE_COMMIT])


@inlined
def sb_push(S, drain, cause):
    """sb_push_v in S; a full store buffer's stall is charged to `cause`: STORE_BUFFER, or
    FLUSH when the entry is a flush."""
    before = S[SC.NOW]
    S[SC.NOW], S[SC.SB_HEAD], S[SC.SB_COUNT], S[SC.SB_LAST], S[SC.END] = sb_push_v(
        S, S[TP.SB], S[EH.SB], drain, S[SC.NOW], S[SC.SB_HEAD], S[SC.SB_COUNT], S[SC.SB_LAST],
        S[SC.END])
    charge(S, cause, before)


@compiled
def site_close(S, t):
    """Charge the cycles and ops since the current site began to it. Its cycles run until
    its ops would retire (every op so far completed, at least dispatch time `t`): a
    site's misses and WORK chains are its own time, as a profiler sampling the oldest
    unretired instruction sees them, not the next site's."""
    t = max(t, S[SC.DONE_MAX], S[SC.SITE_START])
    _site_count(S, SCTR.CYCLES, t - S[SC.SITE_START])
    _site_count(S, SCTR.RETIRE_WAIT, t - max(S[SC.NOW], S[SC.SITE_START]))
    _site_count(S, SCTR.OPS, S[SC.OPS] - S[SC.SITE_OPS])
    _site_events(S, SCTR.L1D_MISSES, MS.L1D_MISSES, SC.SITE_L1D_MISSES)
    _site_events(S, SCTR.LLC_MISSES, MS.LLC_MISSES, SC.SITE_LLC_MISSES)
    _site_events(S, SCTR.MEDIA_READS, MS.MEDIA_READS, SC.SITE_MEDIA_READS)
    _site_events(S, SCTR.MEDIA_WRITES, MS.MEDIA_WRITES, SC.SITE_MEDIA_WRITES)
    _site_events(S, SCTR.L1D_STORE_MISSES, MS.L1D_STORE_MISSES, SC.SITE_L1D_STORE_MISSES)
    _site_events(S, SCTR.LLC_STORE_MISSES, MS.LLC_STORE_MISSES, SC.SITE_LLC_STORE_MISSES)
    _site_events(S, SCTR.L1D_PENDING, MS.L1D_PENDING, SC.SITE_L1D_PENDING)
    _site_events(S, SCTR.LLC_PENDING, MS.LLC_PENDING, SC.SITE_LLC_PENDING)
    # the L1D's accesses: its counters, which reset_stats zeroes with the SITE_ marks
    loads = cm.counter(S, 0, cm.CC.LOAD_HITS) + cm.counter(S, 0, cm.CC.LOAD_MISSES)
    stores = cm.counter(S, 0, cm.CC.STORE_HITS) + cm.counter(S, 0, cm.CC.STORE_MISSES)
    _site_count(S, SCTR.LOADS, loads - S[SC.SITE_LOADS])
    _site_count(S, SCTR.STORES, stores - S[SC.SITE_STORES])
    S[SC.SITE_LOADS], S[SC.SITE_STORES] = loads, stores
    S[SC.SITE_START] = t
    S[SC.SITE_OPS] = S[SC.OPS]


@compiled
def finish(S):
    """Cycle at which everything issued so far has completed; charges the wait to the site."""
    end = max(S[SC.NOW], S[SC.DONE_MAX], S[SC.SB_LAST], S[SC.END], S[MS.MEM_END],
              S[SC.CLFLUSH_CHAIN])
    site_close(S, end)
    S[SC.NOW] = end
    return end
