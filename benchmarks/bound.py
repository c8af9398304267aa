"""How fast can any simulator of this kind run here? A bare cache simulator as a yardstick.

    python benchmarks/bound.py [--scale F] [--json]

The throughput targets of benchmarks/throughput.py (the emulator, timing model on, at 3x / 2x
/ 3x pycachesim) and of benchmarks/dax_memcpy.py (the four-run study faster than pycachesim
replays the line trace of one run) are checked here against `bare`: a numba LRU hierarchy
that does strictly less per access than the emulator, and no more than pycachesim, written
for speed with what the emulator's core learned (docs/performance.md):
- per set, (tag, last-use stamp) pairs side by side, so a set is 2-5 host cache lines;
- the two L1 blocks used last are remembered: sequential 8-byte loads skip 7 lookups of 8,
  a copy's alternating loads and stores 7 of 8 on each side;
- the sets of the access 16 ahead are host-prefetched at L2 and L3;
- no timing at all, no dirty bits or write-backs, no counters but hits and misses per level,
  no regions, no page table, no data (except in the dax-memcpy bound, which copies the
  bytes, as the study runs with functional data on).
If `bare` cannot reach a target, a simulator that also runs the timing model cannot either,
short of a different kind of algorithm (one that skips accesses instead of simulating them).

Traces: (a), (b), (c) of benchmarks/throughput.py at --scale, same geometry as there
(L1 32 KiB 8-way, L2 1 MiB 16-way, L3 8 MiB 16-way); `bare`'s per-level hits and misses
are checked equal to pycachesim's for the load traces (a) and (b), so it is a real
simulator of the same caches. (d) the dax-memcpy study's line trace with the haswell-nvdimm-n
geometry (L1 32 KiB 8-way, L2 256 KiB 8-way, LLC 45 MiB 20-way): per 16 KiB copy, each
line's source read and destination write; `bare` runs the four variants (clflush: write
allocate, then a pass of invalidations at every level after each 4 MiB; movnt: a presence
probe at every level instead of the write, as a MOVNT must evict a cached line) with the
bytes copied; pycachesim replays the line trace of one run (loads and stores, no flushes,
no data), the yardstick the dax-memcpy goal is set against.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
from numba import njit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from benchmarks import throughput as tb  # noqa: E402
from memmodel.jit import host_prefetch  # noqa: E402

ACCESS, INVALIDATE, PROBE = 0, 1, 2   # bare's op kinds
AHEAD = 16                            # accesses of lookahead for host prefetch
TARGETS = {"seq_read_64MiB": 3.0, "random_10M_256MiB": 2.0, "copy_16KiB_ring_4MiB": 3.0}
HASWELL = [(32 * 1024, 8), (256 * 1024, 8), (45 * 1024 * 1024, 20)]


@njit(cache=True, _nrt=False)
def _set_at(geo, inv, lvl, line):
    """First slot of `line`'s set at `lvl`: a mask for a power-of-two set count, else the
    remainder by a float reciprocal, corrected (exact for lines below 2**52), which is
    cheaper than a 64-bit division."""
    sets, ways, base = geo[lvl, 0], geo[lvl, 1], geo[lvl, 2]
    if sets & (sets - 1) == 0:
        s = line & (sets - 1)
    else:
        s = line - np.int64(line * inv[lvl]) * sets
        if s < 0:
            s += sets
        elif s >= sets:
            s -= sets
    return base + 2 * s * ways


@njit(cache=True, _nrt=False)
def bare(lines, kinds, st, geo, inv, cnt, mem, src, copy_words):
    """Replay `lines` (op kinds `kinds`) over the sets in `st` (tag, stamp pairs; geometry
    rows (sets, ways, base) in geo). cnt[lvl] = (hits, misses). With copy_words > 0 each
    ACCESS or PROBE at an odd index (a copy's destination line) also copies 8 words from
    src to mem, as a copy with functional data does."""
    stamp = 0
    memo_line, memo_b, memo2_line, memo2_b = -1, 0, -1, 0   # the two L1 blocks used last
    n = lines.shape[0]
    nlev = geo.shape[0]
    for k in range(n):
        line, kind = lines[k], kinds[k]
        if copy_words and k & 1 and kind != INVALIDATE:
            d = (line * 8) % mem.shape[0]
            s = (line * 8) % copy_words
            for w in range(8):
                mem[d + w] = src[s + w]
        if kind == ACCESS:
            if line == memo2_line:   # a copy alternates between two lines
                memo_line, memo_b, memo2_line, memo2_b = memo2_line, memo2_b, memo_line, memo_b
            if line == memo_line and st[memo_b] == line:
                stamp += 1
                st[memo_b + 1] = stamp
                cnt[0, 0] += 1
                continue
        if k + AHEAD < n:
            ahead = lines[k + AHEAD]
            for lvl in range(1, nlev):
                i0 = _set_at(geo, inv, lvl, ahead)
                for w in range(0, 2 * geo[lvl, 1], 8):
                    host_prefetch(st, i0 + w)
        for lvl in range(nlev):
            ways = geo[lvl, 1]
            i0 = _set_at(geo, inv, lvl, line)
            hit = -1
            for w in range(ways):
                if st[i0 + 2 * w] == line:
                    hit = w
                    break
            if kind != ACCESS:
                if hit >= 0 and kind == INVALIDATE:
                    st[i0 + 2 * hit] = -1
                    st[i0 + 2 * hit + 1] = 0
                continue
            stamp += 1
            if hit >= 0:
                b = i0 + 2 * hit
                st[b + 1] = stamp
                cnt[lvl, 0] += 1
                if lvl == 0:
                    memo_line, memo_b, memo2_line, memo2_b = line, b, memo_line, memo_b
                break
            cnt[lvl, 1] += 1
            best, oldest = 0, st[i0 + 1]
            for w in range(1, ways):
                if st[i0 + 2 * w + 1] < oldest:
                    best, oldest = w, st[i0 + 2 * w + 1]
            b = i0 + 2 * best
            st[b] = line
            st[b + 1] = stamp
            if lvl == 0:
                memo_line, memo_b, memo2_line, memo2_b = line, b, memo_line, memo_b
    return stamp


def _machine(geometry):
    rows, base = [], 0
    for size, ways in geometry:
        sets = size // (64 * ways)
        rows.append((sets, ways, base))
        base += 2 * sets * ways
    st = np.zeros(base, dtype=np.int64)
    st[0::2] = -1
    geo = np.array(rows, dtype=np.int64)
    return st, geo, 1.0 / geo[:, 0], np.zeros((len(geometry), 2), dtype=np.int64)


def run_bare(geometry, lines, kinds, mem=None, src=None):
    st, geo, inv, cnt = _machine(geometry)
    if mem is None:
        mem = src = np.zeros(8, dtype=np.int64)
        words = 0
    else:
        words = len(src)
    t = time.perf_counter()
    bare(lines, kinds, st, geo, inv, cnt, mem, src, words)
    return time.perf_counter() - t, cnt


def warm_up():
    z = np.arange(64, dtype=np.int64)
    t = time.perf_counter()
    run_bare(HASWELL, z, z % 3, np.zeros(64, dtype=np.int64), np.ones(16, dtype=np.int64))
    run_bare([tb.L1, tb.L2, tb.L3], z, z % 3)
    return time.perf_counter() - t


def throughput_traces(scale):
    out = {}
    geometry = [tb.L1, tb.L2, tb.L3]
    for name in tb.TRACES:
        if name == "copy_16KiB_ring_4MiB":
            src, dst, _ = tb.copy_trace(scale)
            addrs = np.empty(2 * len(src), dtype=np.int64)
            addrs[0::2], addrs[1::2] = src, dst
            pcs, = tb.measure(tb.pcs_copy(src, dst))
        else:
            addrs = tb.seq_trace(scale) if name == "seq_read_64MiB" else tb.random_trace(scale)
            pcs, = tb.measure(tb.pcs_loads(addrs))
        sim_s, cnt = run_bare(geometry, addrs >> 6, np.zeros(len(addrs), dtype=np.int64))
        if name != "copy_16KiB_ring_4MiB":
            theirs = [(lv["hit"], lv["miss"]) for lv in pcs["levels"]]
            if [tuple(c) for c in cnt.tolist()] != theirs:
                raise RuntimeError(f"{name}: bare counts {cnt.tolist()} != pycachesim {theirs}")
        n = len(addrs)
        out[name] = {"bare_per_s": n / sim_s, "pycachesim_per_s": n / pcs["sim_s"],
                     "ratio": pcs["sim_s"] / sim_s, "target": TARGETS[name]}
    return out


def dax_memcpy(scale):
    from emu.studies.scenarios.dax_memcpy import FULL_ROUNDS
    from kernels.memcpy_study import BUFFER_BYTES, COPY_BYTES
    rounds = max(1, int(round(FULL_ROUNDS * scale)))
    per_pass = BUFFER_BYTES // 64
    src_lines = (1 << 24) + np.arange(COPY_BYTES // 64, dtype=np.int64)
    dst = (1 << 26) + np.arange(per_pass, dtype=np.int64)
    copy_lines = np.empty(2 * per_pass, dtype=np.int64)
    copy_lines[0::2] = np.resize(src_lines, per_pass)
    copy_lines[1::2] = dst
    one_run = np.tile(copy_lines, rounds)
    kinds = {}
    for variant in ("clflush", "movnt"):
        k = np.zeros(2 * per_pass, dtype=np.int64)
        if variant == "movnt":
            k[1::2] = PROBE
        kinds[variant] = k
    flush = (dst, np.full(per_pass, INVALIDATE, dtype=np.int64))
    clflush_pass = (np.concatenate([copy_lines, flush[0]]),
                    np.concatenate([kinds["clflush"], flush[1]]))
    programs = {"clflush": (np.tile(clflush_pass[0], rounds), np.tile(clflush_pass[1], rounds)),
                "movnt": (one_run, np.tile(kinds["movnt"], rounds))}
    mem = np.zeros(BUFFER_BYTES // 8, dtype=np.int64)
    src = np.arange(COPY_BYTES // 8, dtype=np.int64)
    bare_s = 0.0
    for variant in ("clflush", "movnt"):
        for _placement in ("local", "remote"):
            sim_s, _ = run_bare(HASWELL, *programs[variant], mem, src)
            bare_s += sim_s
    addrs = one_run << 6
    pcs, = tb.measure(tb._pcs_side(lambda: list(zip(((a,) for a in addrs[0::2].tolist()),
                                                     ((b,) for b in addrs[1::2].tolist()))),
                                   lambda cs, t: cs.loadstore(t, length=8), HASWELL))
    return {"scale": rounds / FULL_ROUNDS, "bare_four_runs_s": bare_s,
            "pycachesim_one_run_s": pcs["sim_s"], "ratio": bare_s / pcs["sim_s"],
            "target": "ratio < 1"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=0.25)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.scale <= 0:
        ap.error("--scale must be positive")
    out = {"compile_s": warm_up(), "traces": throughput_traces(args.scale),
           "dax_memcpy": dax_memcpy(args.scale / 16)}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"bare LRU simulator vs pycachesim (scale {args.scale:g}; "
          f"compile {out['compile_s']:.1f} s)")
    for name, r in out["traces"].items():
        print(f"  {name:22s} bare {r['bare_per_s'] / 1e6:7.1f} M/s  pycachesim "
              f"{r['pycachesim_per_s'] / 1e6:6.1f} M/s  ratio {r['ratio']:5.2f}  "
              f"(emulator target {r['target']:g}x)")
    d = out["dax_memcpy"]
    print(f"  dax-memcpy (scale {d['scale']:g}): bare, four runs {d['bare_four_runs_s']:.2f} s; "
          f"pycachesim, one run's line trace {d['pycachesim_one_run_s']:.2f} s; "
          f"ratio {d['ratio']:.2f} (goal: below 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
