"""x86-TSO in functional memory, with several cores: each core's stores not yet visible.

x86-TSO (Sewell et al., CACM 53(7) 2010, §3) is a shared memory and, per core, a FIFO store
buffer: a store enters its core's buffer and reaches memory when it leaves it; a load reads
the newest store to its bytes in its own buffer, else memory; a full barrier or locked op
finds its buffer empty. The timing model already says when each store leaves the buffer
(emu._pipeline.sb_push's drain cycle, SC.SB_LAST after the push); here a core's stores wait
in its `tso` section (emu.state TS, PS: a ring, oldest first) until the scheduler
(emu._core.run_cores) reaches that cycle, and they land in memory in drain order. Every
step the scheduler takes is a step of that abstract machine (a buffer may drain at any
time), so whatever the timing, a run's outcome is one x86-TSO allows (tests/reference_tso.py).
With one core the section is empty and stores write memory at once (emu._handlers).
"""
import numpy as np

from emu.state import EH, N_PS, N_TS, PS, TS
from memmodel import _persist as persist
from memmodel import memory as mm
from memmodel.jit import compiled, inlined, ix
from memmodel.layout import MS

NONE = 1 << 62   # head_drain() of an empty ring: later than any clock (CLOCK_LIMIT is lower)


@inlined
def _slot(S, j):
    """The offset in S of the ring's j-th oldest entry."""
    t = S[EH.TSO]
    k = S[ix(t + TS.HEAD)] + j
    if k >= S[ix(t + TS.SLOTS)]:
        k -= S[ix(t + TS.SLOTS)]
    return t + N_TS + k * N_PS


@inlined
def count(S):
    return S[ix(S[EH.TSO] + TS.COUNT)]


@inlined
def pause_cycles(S):
    return S[ix(S[EH.TSO] + TS.PAUSE)]


@inlined
def head_drain(S):
    """The drain cycle of the core's oldest pending store, NONE if it has none."""
    if count(S) == 0:
        return NONE
    return S[ix(_slot(S, 0) + PS.DRAIN)]


@compiled
def apply_oldest(S, pt, frames, data):
    """The core's oldest pending store leaves its buffer: its bytes land in functional memory
    (and under eADR head for the persistence domain, as a store at once would: write_memory);
    `data`: its program's data blob."""
    e = _slot(S, 0)
    addr, size, off = S[ix(e + PS.ADDR)], S[ix(e + PS.SIZE)], S[ix(e + PS.DATA)]
    if off >= 0:
        mm.write_bytes(S, pt, frames, addr, data, off, size)
    else:
        mm.write_imm(S, pt, frames, addr, S[ix(e + PS.IMM)], size)
    persist.eadr_store(S, addr, size)
    if S[MS.PQ_COUNT]:
        persist.persist_queue(S, pt, frames, -1, -1)
    S[ix(e + PS.DRAIN)] = -1   # an empty slot holds no state: equal rings hash equal
    S[ix(e + PS.ADDR)] = S[ix(e + PS.SIZE)] = S[ix(e + PS.DATA)] = S[ix(e + PS.IMM)] = 0
    t = S[EH.TSO]
    h = S[ix(t + TS.HEAD)] + 1
    S[ix(t + TS.HEAD)] = 0 if h == S[ix(t + TS.SLOTS)] else h
    S[ix(t + TS.COUNT)] -= 1


@compiled
def flush(S, pt, frames, data):
    """Every pending store of the core lands in memory, oldest first (its buffer drains)."""
    while count(S):
        apply_oldest(S, pt, frames, data)


@compiled
def push(S, pt, frames, data, drain, addr, size, off, imm):
    """A store of `size` bytes at `addr` (data[off:] or, off < 0, imm's bytes) that leaves the
    store buffer at cycle `drain`. A full ring first drains its oldest (the timing ring holds
    at most as many entries, so only a store buffer of flushes and stores mixed gets here)."""
    if count(S) == S[ix(S[EH.TSO] + TS.SLOTS)]:
        apply_oldest(S, pt, frames, data)
    e = _slot(S, count(S))
    S[ix(e + PS.DRAIN)], S[ix(e + PS.ADDR)], S[ix(e + PS.SIZE)] = drain, addr, size
    S[ix(e + PS.DATA)], S[ix(e + PS.IMM)] = off, imm
    S[ix(S[EH.TSO] + TS.COUNT)] += 1


@compiled
def read_value(S, pt, frames, data, addr, n):
    """The n (<= 8) bytes at `addr` as the core's load sees them, little-endian: each byte
    from the newest of the core's pending stores that writes it (store forwarding), else
    from memory (mm.read_value)."""
    v = mm.read_value(S, pt, frames, addr, n)
    c = count(S)
    for k in range(n):
        p = addr + k
        for j in range(c - 1, -1, -1):   # newest first
            e = _slot(S, j)
            a = S[ix(e + PS.ADDR)]
            if a <= p < a + S[ix(e + PS.SIZE)]:
                off = S[ix(e + PS.DATA)]
                b = np.int64(0)
                if off >= 0:
                    b = np.int64(data[ix(off + p - a)])
                elif p - a < 8:
                    b = (S[ix(e + PS.IMM)] >> (8 * (p - a))) & 0xFF
                v = (v & ~(np.int64(0xFF) << (8 * k))) | (b << (8 * k))
                break
    return v


@compiled
def apply_until(B, fixed_words, pt, frames, data, begin, t):
    """Every core's pending stores that drain at cycle <= t land in memory, in drain order
    (a tie: the lowest core first). Core k's view is B[k * fixed_words:], its data blob
    data[begin[k, 1]:]. Returns how many landed."""
    cores = begin.shape[0] - 1
    n = 0
    while True:
        k, best = -1, t + 1
        for c in range(cores):
            d = head_drain(B[c * fixed_words:])
            if d < best:
                k, best = c, d
        if k < 0:
            return n
        apply_oldest(B[k * fixed_words:], pt, frames, data[begin[k, 1]:])
        n += 1
