"""The hot-line table: per cacheline, the demand misses it took and what they found in the
other cores (for emu.profiler and its c2c report).

An open-addressed table of MT.HOT_CAP rows (a power of two, 0 when the machine keeps
none), filled on the L1D miss path only, so hits cost nothing. A row holds the line, its
L1D misses, of which stores, its LLC misses, the cycles its misses were outstanding and the
first N_TAGS distinct tags (sites, from MS.TAG) that missed on it, with MORE set if others
did too; of its misses, those that found it modified in another core (HITM) or that another
core's clean copy served (PEER_HITS); its stores that had to invalidate other cores' shared
copies (UPGRADES, L1 hits); and OFFSETS, bit k set when one of those accesses began at byte
k of the line (what perf c2c's offsets show: two cores' accesses to different bytes of one
line are false sharing); with several sockets, of its HITMs those from the other socket
(a count per row after the rows: remote_hitm_at). Each core keeps its own table. The table takes new lines until three quarters full (probes stay short); later
misses on lines it does not hold are counted in MS.HOT_DROPPED, so a report can say what it
left out. Per region, the same misses are counted exactly in hot_region (no table limit).
"""
from memmodel import memory as mm
from memmodel._coherence import MODIFIED, NONE
from memmodel.jit import compiled, inlined, ix
from memmodel.layout import MH, MS, MT, fields

N_TAGS = 4
HL = fields("HL", "LINE L1D_MISSES STORE_MISSES LLC_MISSES MISS_CYCLES MORE HITM PEER_HITS "
            "UPGRADES OFFSETS " + " ".join(f"TAG{k}" for k in range(N_TAGS)))
N_HL = len(HL)
HR = fields("HR", "L1D_MISSES STORE_MISSES LLC_MISSES")   # hot_region[region, counter]
assert HL.STORE_MISSES == HL.L1D_MISSES + 1 and HL.LLC_MISSES == HL.L1D_MISSES + 2   # _count
N_HR = len(HR)


@inlined
def _count(S, at, store, llc):
    """A miss into the counters L1D_MISSES STORE_MISSES LLC_MISSES at S[at:at + 3] (a row of
    hot or of hot_region)."""
    S[ix(at)] += 1
    if store:
        S[ix(at + 1)] += 1
    if llc:
        S[ix(at + 2)] += 1


@inlined
def _row(S, line):
    """The offset in S of `line`'s row, taken if new; -1 when the table has no room."""
    cap = S[MT.HOT_CAP]
    mask = cap - 1
    base = S[MH.HOT]
    h = ((line ^ (line >> 17)) * 0x2545F491) & mask
    row = base
    for _ in range(cap):
        row = base + h * N_HL
        held = S[ix(row + HL.LINE)]
        if held == line:
            break
        if held < 0:
            if 4 * S[MS.HOT_USED] >= 3 * cap:
                S[MS.HOT_DROPPED] += 1
                return -1
            S[MS.HOT_USED] += 1
            S[ix(row + HL.LINE)] = line
            break
        h = (h + 1) & mask
    return row


@inlined
def remote_hitm_at(S, row):
    """The offset in S of the remote HITM count of the row at offset `row` (after the
    table's MT.HOT_CAP rows; there with several sockets only)."""
    base = S[MH.HOT]
    return base + S[MT.HOT_CAP] * N_HL + (row - base) // N_HL


@compiled
def record(S, line, store, llc, cycles, addr, found, remote):
    """A demand L1D miss on `line` by an access beginning at byte `addr` (a store's if
    `store`; it missed the LLC too if `llc`), outstanding for `cycles`, whose snoop found
    `found` in the other cores (memmodel._coherence; on the other socket if `remote`)."""
    r = mm.find_region(S, line << 6)
    if r >= 0:
        _count(S, S[MH.HOT_REGION] + r * N_HR + HR.L1D_MISSES, store, llc)
    row = _row(S, line)
    if row < 0:
        return
    _count(S, row + HL.L1D_MISSES, store, llc)
    if found == MODIFIED:
        S[ix(row + HL.HITM)] += 1
        if remote:
            S[ix(remote_hitm_at(S, row))] += 1
    elif found != NONE:
        S[ix(row + HL.PEER_HITS)] += 1
    S[ix(row + HL.OFFSETS)] |= 1 << (addr & 63)
    S[ix(row + HL.MISS_CYCLES)] += cycles
    _tag(S, row)


@inlined
def _tag(S, row):
    """The caller's tag (MS.TAG) among the row's, or MORE set when they are all taken."""
    tag = S[MS.TAG]
    for k in range(N_TAGS):
        t = S[ix(row + HL.TAG0 + k)]
        if t == tag:
            return
        if t < 0:
            S[ix(row + HL.TAG0 + k)] = tag
            return
    S[ix(row + HL.MORE)] = 1


@compiled
def upgraded(S, line, addr):
    """A store beginning at byte `addr` invalidated other cores' copies of `line`."""
    row = _row(S, line)
    if row >= 0:
        S[ix(row + HL.UPGRADES)] += 1
        S[ix(row + HL.OFFSETS)] |= 1 << (addr & 63)
        _tag(S, row)
