"""The hot-line table: per cacheline, the demand misses it took (for emu.profiler).

An open-addressed table of MT.HOT_CAP rows (a power of two, 0 when the machine keeps
none), filled on the L1D miss path only, so hits cost nothing. A row holds the line, its
L1D misses, of which stores, its LLC misses, the cycles its misses were outstanding and the
first N_TAGS distinct tags (sites, from MS.TAG) that missed on it, with MORE set if others
did too. The table takes new lines until three quarters full (probes stay short); later
misses on lines it does not hold are counted in MS.HOT_DROPPED, so a report can say what it
left out. Per region, the same misses are counted exactly in hot_region (no table limit).
"""
from memmodel import memory as mm
from memmodel.jit import compiled, inlined, ix
from memmodel.layout import MH, MS, MT, fields

N_TAGS = 4
HL = fields("HL", "LINE L1D_MISSES STORE_MISSES LLC_MISSES MISS_CYCLES MORE " +
            " ".join(f"TAG{k}" for k in range(N_TAGS)))
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


@compiled
def record(S, line, store, llc, cycles):
    """A demand L1D miss on `line` (a store's if `store`; it missed the LLC too if `llc`),
    outstanding for `cycles`."""
    r = mm.find_region(S, line << 6)
    if r >= 0:
        _count(S, S[MH.HOT_REGION] + r * N_HR + HR.L1D_MISSES, store, llc)
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
                return
            S[MS.HOT_USED] += 1
            S[ix(row + HL.LINE)] = line
            break
        h = (h + 1) & mask
    _count(S, row + HL.L1D_MISSES, store, llc)
    S[ix(row + HL.MISS_CYCLES)] += cycles
    tag = S[MS.TAG]
    for k in range(N_TAGS):
        t = S[ix(row + HL.TAG0 + k)]
        if t == tag:
            return
        if t < 0:
            S[ix(row + HL.TAG0 + k)] = tag
            return
    S[ix(row + HL.MORE)] = 1
