"""The core's pipeline: issue bandwidth, the reorder buffer, the store buffer and sites.

Timing is the resource-occupancy model of docs/design.md: SC.NOW is the issue cycle; loads,
stores and flushes complete later and hold ROB and store-buffer slots until they do.
"""
from emu.state import EH, N_SCOUNT, SC, SCTR, TP
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
def stall_until(S, t):
    if t > S[SC.NOW]:
        S[SC.NOW] = t


@inlined
def _site_count(S, counter, n):
    S[ix(S[EH.SITE_CTR] + S[SC.SITE] * N_SCOUNT + counter)] += n


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


@inlined
def rob_gate_v(S, rob, seqs, done, now, seq, head, count):
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
def rob_gate(S):
    S[SC.NOW], S[SC.ROB_HEAD], S[SC.ROB_COUNT] = rob_gate_v(
        S, S[TP.ROB], S[EH.ROB_SEQ], S[EH.ROB_DONE], S[SC.NOW], S[SC.UOP_SEQ], S[SC.ROB_HEAD],
        S[SC.ROB_COUNT])


@inlined
def rob_push_v(S, rob, seqs, dones, done, now, seq, head, count, loads_max):
    """An incomplete load occupies the window until `done`. Returns
    (now, head, count, loads_max)."""
    if done <= now:
        return now, head, count, loads_max
    if count == rob:
        now, head, count = rob_gate_v(S, rob, seqs, dones, now, seq, head, count)
    i = head + count   # (head + count) % rob, both < rob
    if i >= rob:
        i -= rob
    S[ix(seqs + i)] = seq
    S[ix(dones + i)] = done
    return now, head, count + 1, max(loads_max, done)


@inlined
def rob_push(S, done):
    S[SC.NOW], S[SC.ROB_HEAD], S[SC.ROB_COUNT], S[SC.LOADS_MAX] = rob_push_v(
        S, S[TP.ROB], S[EH.ROB_SEQ], S[EH.ROB_DONE], done, S[SC.NOW], S[SC.UOP_SEQ], S[SC.ROB_HEAD],
        S[SC.ROB_COUNT], S[SC.LOADS_MAX])


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
def sb_push(S, drain):
    S[SC.NOW], S[SC.SB_HEAD], S[SC.SB_COUNT], S[SC.SB_LAST], S[SC.END] = sb_push_v(
        S, S[TP.SB], S[EH.SB], drain, S[SC.NOW], S[SC.SB_HEAD], S[SC.SB_COUNT], S[SC.SB_LAST],
        S[SC.END])


@compiled
def site_close(S, t):
    """Charge the cycles and ops since the current site began to it."""
    _site_count(S, SCTR.CYCLES, t - S[SC.SITE_START])
    _site_count(S, SCTR.OPS, S[SC.OPS] - S[SC.SITE_OPS])
    _site_events(S, SCTR.L1D_MISSES, MS.L1D_MISSES, SC.SITE_L1D_MISSES)
    _site_events(S, SCTR.LLC_MISSES, MS.LLC_MISSES, SC.SITE_LLC_MISSES)
    _site_events(S, SCTR.MEDIA_READS, MS.MEDIA_READS, SC.SITE_MEDIA_READS)
    _site_events(S, SCTR.MEDIA_WRITES, MS.MEDIA_WRITES, SC.SITE_MEDIA_WRITES)
    S[SC.SITE_START] = t
    S[SC.SITE_OPS] = S[SC.OPS]


@compiled
def finish(S):
    """Cycle at which everything issued so far has completed; charges the wait to the site."""
    end = max(S[SC.NOW], S[SC.LOADS_MAX], S[SC.SB_LAST], S[SC.END], S[MS.MEM_END],
              S[SC.CLFLUSH_CHAIN])
    site_close(S, end)
    S[SC.NOW] = end
    return end
