"""Physical memory map and lazily allocated functional memory.

Regions map physical ranges to a media backend and a NUMA node. Bytes live in 4 KiB
frames allocated on first touch through a two-level table: each region has one directory
entry (section chunk_dir of S) per 2 MiB chunk; each allocated chunk is one row of the page
table `pt`, holding a frame index per 4 KiB page and, beside it, the page's poison mask
(a bit per 64-byte line). A 64 GiB region costs 32 K directory entries until it is touched.

Compiled code never allocates: when a program needs more chunks or frames than are free,
the core stops before the op that needs them, the facade grows `pt`/`frames` and resumes.
"""
import numpy as np

from memmodel.jit import compiled, inlined
from memmodel.layout import H_ALLOC, H_CHUNK_DIR, H_REG

PAGE_BYTES = 4096
PAGE_SHIFT = 12
CHUNK_PAGES = 512
CHUNK_SHIFT = 21
POISON0 = CHUNK_PAGES      # pt[chunk, POISON0 + page]: poisoned-line mask of that page
NOT_MAPPED = -1

# reg[region, field], regions sorted by base
RG_BASE, RG_END, RG_MEDIA, RG_NODE, RG_USER, RG_DIR = range(6)
N_RG = 6
# alloc[]
A_CHUNKS, A_FRAMES = 0, 1


def _dir_entries(r):
    return (r["size_bytes"] + (1 << CHUNK_SHIFT) - 1) >> CHUNK_SHIFT


def add_sections(layout, regions):
    layout.add("reg", (len(regions), N_RG))
    layout.add("chunk_dir", sum(_dir_entries(r) for r in regions))
    layout.add("alloc", 2)


def init_sections(layout, S, regions, media_ids):
    """`regions` sorted by base; returns the initial (pt, frames)."""
    reg = layout.view(S, "reg")
    d = 0
    for i, r in enumerate(regions):
        reg[i] = (r["base"], r["base"] + r["size_bytes"], media_ids[r["media"]], r["node"],
                  r.get("privilege") == "user", d)
        d += _dir_entries(r)
    layout.view(S, "chunk_dir")[:] = NOT_MAPPED
    return np.full((4, 2 * CHUNK_PAGES), NOT_MAPPED, dtype=np.int64), \
        np.zeros((64, PAGE_BYTES), dtype=np.uint8)


def grow(S, pt, frames, chunks_needed, frames_needed):
    """(pt, frames) with room for that many more chunks and frames (amortised doubling)."""
    used_c, used_f = int(S[S[H_ALLOC] + A_CHUNKS]), int(S[S[H_ALLOC] + A_FRAMES])
    if used_c + chunks_needed > len(pt):
        new = np.full((max(used_c + chunks_needed, 2 * len(pt)), 2 * CHUNK_PAGES), NOT_MAPPED,
                      dtype=np.int64)
        new[:len(pt)] = pt
        pt = new
    if used_f + frames_needed > len(frames):
        new = np.zeros((max(used_f + frames_needed, 2 * len(frames)), PAGE_BYTES), dtype=np.uint8)
        new[:len(frames)] = frames
        frames = new
    return pt, frames


@inlined
def reg(S, r, field):
    return S[S[H_REG] + r * N_RG + field]


@inlined
def allocated(S, field):
    """Chunks (A_CHUNKS) or frames (A_FRAMES) handed out so far."""
    return S[S[H_ALLOC] + field]


@inlined
def n_regions(S):
    return (S[H_CHUNK_DIR] - S[H_REG]) // N_RG


@inlined
def find_region(S, addr):
    """Index of the region holding `addr`, or -1 (binary search over sorted bases)."""
    o = S[H_REG]
    lo, hi = 0, n_regions(S)
    while lo < hi:
        mid = (lo + hi) >> 1
        if S[o + mid * N_RG + RG_BASE] <= addr:
            lo = mid + 1
        else:
            hi = mid
    r = lo - 1
    if r >= 0 and addr < S[o + r * N_RG + RG_END]:
        return r
    return -1


@compiled
def _chunk_slot(S, addr):
    """Offset in S of the directory entry for `addr`'s 2 MiB chunk (addr must be mapped)."""
    r = find_region(S, addr)
    o = S[H_REG] + r * N_RG
    return S[H_CHUNK_DIR] + S[o + RG_DIR] + ((addr - S[o + RG_BASE]) >> CHUNK_SHIFT)


@compiled
def frame_of(S, pt, addr):
    """Frame index of the page holding mapped `addr`, or -1 if never touched."""
    d = S[_chunk_slot(S, addr)]
    if d < 0:
        return -1
    return pt[d, (addr >> PAGE_SHIFT) & (CHUNK_PAGES - 1)]


@inlined
def unmapped_in(S, start, end):
    """First address of [start, end) outside every region, or -1."""
    pos = start
    while pos < end:
        r = find_region(S, pos)
        if r < 0:
            return pos
        pos = S[S[H_REG] + r * N_RG + RG_END]
    return -1


@compiled
def missing_pages(S, pt, start, end, need):
    """Add to need[0] the chunks and to need[1] the frames that [start, end) still lacks."""
    if end <= start:
        return
    prev = -1
    for page in range(start >> PAGE_SHIFT, ((end - 1) >> PAGE_SHIFT) + 1):
        slot = _chunk_slot(S, page << PAGE_SHIFT)
        d = S[slot]
        if d < 0:
            if slot != prev:
                need[0] += 1
                prev = slot
            need[1] += 1
        elif pt[d, page & (CHUNK_PAGES - 1)] < 0:
            need[1] += 1


@compiled
def map_pages(S, pt, start, end):
    """Give every page of [start, end) a zeroed frame; `pt` and frames must have room."""
    if end <= start:
        return
    a = S[H_ALLOC]
    for page in range(start >> PAGE_SHIFT, ((end - 1) >> PAGE_SHIFT) + 1):
        slot = _chunk_slot(S, page << PAGE_SHIFT)
        if S[slot] < 0:
            S[slot] = S[a + A_CHUNKS]
            S[a + A_CHUNKS] += 1
        d = S[slot]
        if pt[d, page & (CHUNK_PAGES - 1)] < 0:
            pt[d, page & (CHUNK_PAGES - 1)] = S[a + A_FRAMES]
            S[a + A_FRAMES] += 1


@compiled
def copy_bytes(S, pt, frames, dst, src, n):
    """Forward byte copy (overlap behaves as rep movsb) between mapped, present pages."""
    done = 0
    while done < n:
        d = dst + done
        s = src + done
        fd = frame_of(S, pt, d)
        fs = frame_of(S, pt, s)
        od = d & (PAGE_BYTES - 1)
        os_ = s & (PAGE_BYTES - 1)
        k = min(n - done, PAGE_BYTES - od, PAGE_BYTES - os_)
        for i in range(k):
            frames[fd, od + i] = frames[fs, os_ + i]
        done += k


@compiled
def write_bytes(S, pt, frames, dst, data, off, n):
    """Store n bytes from data[off:off+n] at dst."""
    done = 0
    while done < n:
        d = dst + done
        fd = frame_of(S, pt, d)
        od = d & (PAGE_BYTES - 1)
        k = min(n - done, PAGE_BYTES - od)
        for i in range(k):
            frames[fd, od + i] = data[off + done + i]
        done += k


@compiled
def write_imm(S, pt, frames, dst, imm, n):
    """Store the n (<= 64) little-endian bytes of imm (zero beyond 8 bytes) at dst."""
    done = 0
    while done < n:  # one page-table walk per page touched, not per byte
        d = dst + done
        fd = frame_of(S, pt, d)
        od = d & (PAGE_BYTES - 1)
        k = min(n - done, PAGE_BYTES - od)
        for j in range(k):
            i = done + j
            frames[fd, od + j] = (imm >> (8 * i)) & 0xFF if i < 8 else 0
        done += k


def read_bytes(S, pt, frames, addr, n):
    """Python-side read for the facade: bytes at mapped [addr, addr+n); untouched pages are 0."""
    out = np.zeros(n, dtype=np.uint8)
    done = 0
    while done < n:
        a = addr + done
        off = a & (PAGE_BYTES - 1)
        k = min(n - done, PAGE_BYTES - off)
        f = frame_of(S, pt, a)
        if f >= 0:
            out[done:done + k] = frames[f, off:off + k]
        done += k
    return out
