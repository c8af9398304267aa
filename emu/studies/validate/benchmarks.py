"""The microbenchmark programs of `emu validate` (docs/validation.md "Method"), each
mirroring the published method of its rows. Each takes a fresh Machine (timing only) and
returns the emulated value in its row's unit; rows.py binds them to their rows."""
import numpy as np

from isa.ops import (
    COL_ADDR,
    COL_DATA,
    COL_FLAGS,
    COL_OP,
    COL_SIZE,
    FLAG_DEPENDENT,
    N_COLS,
    Op,
)
from isa.program import Program

LINE = 64
PAGE = 4096
LOADS = 1 << 15     # timed loads of a latency row
MEMORY_BUFFER = 512 << 20   # [ILX] NewMemLat's DRAM region; LMBench 384-512 MB (§2)


def _rows(op, addrs, size=0, flags=0):
    """An op array of one `op` per address (Program.from_array validates it)."""
    a = np.zeros((len(addrs), N_COLS), dtype=np.int64)
    a[:, COL_OP] = op
    a[:, COL_ADDR] = addrs
    a[:, COL_SIZE] = size
    a[:, COL_DATA] = -1
    a[:, COL_FLAGS] = flags
    return a


def _interleave(*arrays):
    """Op arrays of equal length merged row by row (a[0], b[0], a[1], b[1], ...)."""
    return np.stack(arrays, axis=1).reshape(-1, N_COLS)


def _cycle(nbytes, steps=None):
    """Byte offsets of the lines of a buffer of `nbytes` in the order of a random cyclic
    permutation: all of them, or its first `steps`."""
    rng = np.random.default_rng(1)
    lines = nbytes // LINE
    order = rng.permutation(lines) if steps is None else rng.choice(lines, steps, replace=False)
    return order.astype(np.int64) * LINE


def _base(m, region):
    return m.regions[region]["base"]


def chase_cycles(m, nbytes, region="dram0"):
    """Pointer chasing inside a cache level: dependent loads around a random cycle through a
    buffer of `nbytes`, a warm-up pass, then passes until at least LOADS loads are timed.
    Cycles per load."""
    addrs = _base(m, region) + _cycle(nbytes)
    m.run(Program().loads(addrs, dependent=True))
    passes = -(-LOADS // len(addrs))
    r = m.run(Program().loads(np.tile(addrs, passes), dependent=True))
    return r.cycles / (passes * len(addrs))


def chase_ns(m, region, pattern):
    """Idle memory latency: dependent loads through a MEMORY_BUFFER buffer, LOADS of them,
    in a random cyclic order (its first LOADS steps: a warm-up pass over a buffer this much
    larger than the LLC would leave none of them cached) or line by line in address order
    (`sequential`). ns per load."""
    offsets = _cycle(MEMORY_BUFFER, LOADS) if pattern == "random" else np.arange(LOADS) * LINE
    r = m.run(Program().loads(_base(m, region) + offsets, dependent=True))
    return r.seconds * 1e9 / len(offsets)


def c2c_ns(m, modified=True, lines=512, region="dram0"):
    """Cache-to-cache transfer (MLC's c2c latency) between the two cores of `m` (on two
    sockets if `m` has them), over lines of `region`'s memory: core 1
    writes (`modified`: each a HITM after) or reads (a clean HIT after) a line in each of
    `lines` pages, then core 0's dependent loads read them in a random order; a warm-up
    round, then a timed one, each on lines of its own, the cores handing over by a flag
    (Program.wait). A round's lines one a page, so that no prefetcher finds a stream, and
    never next to or paired with the other round's, so that no prefetcher takes a timed line
    ahead of its load: MLC's readings, near its prefetchers-off ones, say they did not. ns per load of core 0's timed loads."""
    rng = np.random.default_rng(1)
    base = _base(m, region)
    pages = base + rng.permutation(lines).astype(np.int64) * PAGE
    half = PAGE // LINE // 2   # a round's line in its half of the page, the first's not
    slots = np.stack([rng.integers(0, half - 1, lines),   # next to the second's
                      rng.integers(half, 2 * half, lines)], axis=1) * LINE
    flag = int(base + lines * PAGE)
    reader, writer = Program(), Program()
    for rnd in (1, 2):
        addrs = pages + slots[:, rnd - 1]
        if modified:
            writer.stores(addrs, size=8).mfence()
        else:
            writer.loads(addrs).lfence()
        writer.store(flag, value=2 * rnd - 1, size=8)
        reader.wait(flag, 2 * rnd - 1)
        with reader.function(f"round{rnd}"):
            reader.loads(addrs, dependent=True)
        reader.store(flag, value=2 * rnd, size=8)
        writer.wait(flag, 2 * rnd)
    m.run([reader, writer])
    return m.stats()["cores"][0]["sites"]["round2"]["cycles"] / m.freq_ghz / lines


def _stream(m, region, dimms):
    """Byte addresses of a stream of lines through a buffer of 4 x the LLC, all of the
    region's media interleave stripes (dimms=None) or those of one DIMM only (dimms=1:
    every `channels`-th stripe, as a non-interleaved DIMM sees a stream)."""
    nbytes = 4 * m.profile.values["cache"]["llc"]["size_bytes"]
    base = _base(m, region)
    if dimms is None:
        return base + np.arange(0, nbytes, LINE, dtype=np.int64)
    media = m.profile.values["media"][m.regions[region]["media"]]
    stripe, step = media["interleave_bytes"], media["interleave_bytes"] * media["channels"]
    starts = base + np.arange(nbytes // stripe, dtype=np.int64) * step
    return (starts[:, None] + np.arange(0, stripe, LINE)[None, :]).reshape(-1)


def bandwidth(m, region, kind, dimms=None):
    """Single-thread bandwidth: 64-byte loads ("read") or non-temporal 64-byte stores and an
    SFENCE ("ntstore") streaming once through a buffer of 4 x the LLC (never touched
    before, so every line comes from or goes to memory). GB/s."""
    addrs = _stream(m, region, dimms)
    if kind == "read":
        p = Program.from_array(_rows(Op.LOAD, addrs, LINE))
    else:
        p = Program.from_array(np.concatenate([_rows(Op.MOVNT, addrs, LINE),
                                               _rows(Op.SFENCE, [0])]))
    return len(addrs) * LINE / m.run(p).seconds / 1e9


# likwid-bench's streaming kernels (double precision, one element a stream per iteration):
# the arrays each reads, the array it writes (None: none), as [KERNCRAFT]'s files list
# their streams: load A, copy B = A, update A = s * A, triad A = B + C * D (three read
# streams: likwid's triad, not STREAM's). Its GB/s counts these streams, 8 B each per
# element, not the write-allocate reads of the stores.
STREAM_KERNELS = {"load": ((0,), None), "copy": ((0,), 1), "update": ((0,), 0),
                  "triad": ((1, 2, 3), 0)}


def stream_kernel(m, kernel):
    """Single-core likwid-bench kernel from memory: per 64-byte line, a 64-byte load of
    each array read, then a 64-byte (write-allocating) store to the array written, over
    arrays of the LLC's size each in dram0, never touched before (0.5x to 2x agree within
    1 %); bytes of the kernel's streams / emulated seconds: GB/s."""
    reads, write = STREAM_KERNELS[kernel]
    nbytes = m.profile.values["cache"]["llc"]["size_bytes"] // LINE * LINE
    lines = _base(m, "dram0") + np.arange(0, nbytes, LINE, dtype=np.int64)
    ops = [_rows(Op.LOAD, lines + a * nbytes, LINE) for a in reads]
    if write is not None:
        ops.append(_rows(Op.STORE, lines + write * nbytes, LINE))
    streams = len(reads) + (write is not None)
    return streams * nbytes / m.run(Program.from_array(_interleave(*ops))).seconds / 1e9


PERSIST_BYTES = 4 << 20   # written per row: 40 x the XPBuffers of the 6 DIMMs (6 x 16 KiB)
PAGE_BYTES = 4096


def persist_ns(m, region, path, nbytes, cached=False):
    """Persist latency: write `nbytes` and SFENCE, back to back until PERSIST_BYTES are
    written, each time to fresh lines; ns per repetition. So long a loop runs in the steady
    state of a latency benchmark's loop: in a short one the DIMMs' XPBuffers would still be
    absorbing the writes. "ntstore": non-temporal 64-byte stores; "clwb": 64-byte stores, a
    CLWB after each. As LATTester measured the persist curve (its kernel module's loops): one
    byte a page touched first, the stored lines not cached beforehand. cached=True reads the
    lines first instead: the published 57-62 ns of [YA20] Fig.2's 64-byte store + clwb +
    fence are below any media read, so its stored lines were cached."""
    reps = PERSIST_BYTES // nbytes
    lines = _base(m, region) + np.arange(0, PERSIST_BYTES, LINE, dtype=np.int64)
    m.run(Program().loads(lines if cached else lines[::PAGE_BYTES // LINE]))
    if path == "ntstore":
        writes = _rows(Op.MOVNT, lines, LINE)
    else:
        writes = _interleave(_rows(Op.STORE, lines, LINE), _rows(Op.CLWB, lines))
    fence = np.broadcast_to(_rows(Op.SFENCE, [0]), (reps, 1, N_COLS))
    p = Program.from_array(np.concatenate([writes.reshape(reps, -1, N_COLS), fence], axis=1)
                           .reshape(-1, N_COLS))
    # drain=False: the time to the last SFENCE's completion, not to the media's last write
    return m.run(p, drain=False).seconds * 1e9 / reps


def ewr(m, nbytes, writes=50000):
    """Effective write ratio: `writes` random non-temporal writes of `nbytes` (whole lines,
    aligned to nbytes) over 1 GiB of the 6 interleaved DIMMs of pmem0, then SFENCE; bytes
    the memory controller took / bytes written to the media (whole XPLines)."""
    rng = np.random.default_rng(1)
    blocks = rng.choice((1 << 30) // nbytes, writes, replace=False).astype(np.int64) * nbytes
    addrs = (_base(m, "pmem0") + blocks[:, None] + np.arange(0, nbytes, LINE)[None, :])
    m.run(Program.from_array(np.concatenate([_rows(Op.MOVNT, addrs.reshape(-1), LINE),
                                             _rows(Op.SFENCE, [0])])))
    s = m.stats()["media"]["optane"]
    xpline = m.profile.values["media"]["optane"]["xpline_bytes"]
    return s["line_writes"] * LINE / (s["xpline_writes"] * xpline)


def fence_cycles(m, op, n=1000):
    """Reciprocal throughput of back-to-back fences (`op`), nothing outstanding: cycles."""
    return m.run(Program.from_array(_rows(op, np.zeros(n, dtype=np.int64)))).cycles / n


def flush_cycles(m, op, n=1000):
    """Reciprocal throughput of back-to-back cache-line flushes (`op`) of n clean cached lines
    (read beforehand): cycles per flush, to the last one done."""
    addrs = _base(m, "dram0") + np.arange(n, dtype=np.int64) * LINE
    m.run(Program().loads(addrs))
    return m.run(Program.from_array(_rows(op, addrs))).cycles / n


def lfence_extra_cycles(m, nbytes=16 << 10):
    """LFENCE in a dependency chain: pointer chasing in L1 (a random cycle through
    `nbytes`, warmed up) with and without an LFENCE after every load; the extra cycles per
    LFENCE."""
    addrs = _base(m, "dram0") + _cycle(nbytes)
    chase = _rows(Op.LOAD, np.tile(addrs, -(-LOADS // len(addrs))), 8, FLAG_DEPENDENT)
    m.run(Program.from_array(chase))
    plain = m.run(Program.from_array(chase)).cycles
    fences = _rows(Op.LFENCE, np.zeros(len(chase), dtype=np.int64))
    fenced = m.run(Program.from_array(_interleave(chase, fences))).cycles
    return (fenced - plain) / len(chase)


def rep_movsb_bytes_per_cycle(m, nbytes=8192, reps=100):
    """REP MOVSB inside L1D: `nbytes` from one buffer to the next (both together half the
    L1D, so they stay resident), a warm-up copy, then `reps` copies: bytes read plus bytes
    written per cycle, as [ILX] (AIDA64) counts a string op's two operands (docs/validation.md
    "Method"), i.e. twice the bytes copied."""
    src = _base(m, "dram0")
    dst = src + nbytes
    m.run(Program().rep_movsb(dst, src, nbytes))
    p = Program()
    for _ in range(reps):
        p.rep_movsb(dst, src, nbytes)
    return 2 * nbytes * reps / m.run(p).cycles


def locked_rmw_cycles(m, reps=200):
    """LOCK ADD latency: `reps` locked RMWs of one L1-resident line back to back (each a full
    barrier, so each waits for the one before): cycles per op."""
    line = _base(m, "dram0")
    m.run(Program().load(line))
    p = Program()
    for _ in range(reps):
        p.lock_rmw(line, size=8, value=1)
    return m.run(p).cycles / reps
