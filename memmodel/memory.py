"""Physical memory map and lazily allocated functional memory.

Regions map physical ranges to a media backend and a NUMA node. Bytes live in 4 KiB
frames allocated on first touch through a two-level table: each region has one directory
entry (section chunk_dir of S) per 2 MiB chunk; each allocated chunk is one row of the page
table `pt`, holding a frame index per 4 KiB page and, beside it, the page's poison mask
(a bit per 64-byte line). A 64 GiB region costs 32 K directory entries until it is touched.

Compiled code never allocates: when a program needs more chunks or frames than are free,
the core stops before the op that needs them, the facade grows `pt`/`frames` and resumes
(memmodel.sections.memory, with the sections' set-up).
"""
import numpy as np

from memmodel.jit import compiled, inlined, ix
from memmodel.layout import MEMO, MEMO_AT, MH, fields
from memmodel.media import PERSISTENCE

PAGE_BYTES = 4096
PAGE_SHIFT = 12
CHUNK_PAGES = 512
CHUNK_SHIFT = 21
POISON0 = CHUNK_PAGES      # pt[chunk, POISON0 + page]: poisoned-line mask of that page
DURABLE0 = 2 * CHUNK_PAGES  # pt[chunk, DURABLE0 + page]: frame of the page's durable image
PT_COLS = 3 * CHUNK_PAGES
NOT_MAPPED = -1
# Frames 0 .. cores x RESERVED_FRAMES - 1 are not pages: they hold the snapshots of
# write-backs that are on their way to the persistence domain (64 bytes each, see
# memmodel._persist), RESERVED_FRAMES a core from its mt SNAPSHOT_FRAME.
SNAPSHOTS = 1024
RESERVED_FRAMES = SNAPSHOTS * 64 // PAGE_BYTES
# reg[r, RG.PERSIST]: the index in PERSISTENCE; compiled code tests these two
P_NONE, P_EADR = PERSISTENCE.index("none"), PERSISTENCE.index("eadr")

# reg[region, field], regions sorted by base
RG = fields("RG", "BASE END MEDIA NODE USER DIR PERSIST")
N_RG = len(RG)
# alloc[]: chunks and frames handed out so far
ALLOC = fields("ALLOC", "CHUNKS FRAMES")
# region_ctr[region, counter]; stats() names them in lower case
RCTR = fields("RCTR", "LINE_READS LINE_WRITES")
REGION_COUNTER_NAMES = tuple(c.name.lower() for c in RCTR)
N_RCOUNT = len(RCTR)


@inlined
def reg(S, r, field):
    return S[ix(S[MH.REG] + r * N_RG + field)]


@inlined
def allocated(S, field):
    """Chunks (ALLOC.CHUNKS) or frames (ALLOC.FRAMES) handed out so far."""
    return S[ix(S[MH.ALLOC] + field)]


@inlined
def n_regions(S):
    return (S[MH.CHUNK_DIR] - S[MH.REG]) // N_RG


@inlined
def find_region(S, addr):
    """Index of the region holding `addr`, or -1 (binary search over sorted bases). The
    region found last is tried first (MEMO.REGION, a derived cache: a row that holds `addr`
    is the region that does, whatever was mapped since, so nothing has to update it)."""
    o = S[MH.REG]
    r = S[MEMO_AT + MEMO.REGION]
    row = o + r * N_RG   # a row of the table (which chunk_dir follows): no division for n
    if row < S[MH.CHUNK_DIR] and S[ix(row + RG.BASE)] <= addr < S[ix(row + RG.END)]:
        return r
    lo, hi = 0, n_regions(S)
    while lo < hi:
        mid = (lo + hi) >> 1
        if S[ix(o + mid * N_RG + RG.BASE)] <= addr:
            lo = mid + 1
        else:
            hi = mid
    r = lo - 1
    if r >= 0 and addr < S[ix(o + r * N_RG + RG.END)]:
        S[MEMO_AT + MEMO.REGION] = r
        return r
    return -1


@inlined
def _chunk_slot(S, addr):
    """Offset in S of the directory entry for `addr`'s 2 MiB chunk, or -1 if `addr` is
    unmapped: numba does not bounds-check, so a failed lookup must not become an index."""
    r = find_region(S, addr)
    if r < 0:
        return -1
    o = S[MH.REG] + r * N_RG
    return S[MH.CHUNK_DIR] + S[ix(o + RG.DIR)] + ((addr - S[ix(o + RG.BASE)]) >> CHUNK_SHIFT)


@inlined
def page_row(S, addr):
    """Row of `pt` for `addr`'s chunk, or -1 if no page of it was ever touched (or `addr` is
    unmapped): a bulk op looks it up once a page and then finds the frames with frame_in."""
    slot = _chunk_slot(S, addr)
    return S[ix(slot)] if slot >= 0 else -1


@inlined
def frame_in(pt, row, addr):
    """frame_of(addr), given row = page_row(addr)."""
    if row < 0:
        return -1
    return pt[row, (addr >> PAGE_SHIFT) & (CHUNK_PAGES - 1)]


@inlined
def durable_frame_in(pt, row, addr):
    """durable_frame_of(addr), given row = page_row(addr)."""
    if row < 0:
        return -1
    return pt[row, DURABLE0 + ((addr >> PAGE_SHIFT) & (CHUNK_PAGES - 1))]


@inlined
def frame_of(S, pt, addr):
    """Frame index of the page holding mapped `addr`, or -1 if never touched."""
    return frame_in(pt, page_row(S, addr), addr)


@inlined
def unmapped_in(S, start, end):
    """First address of [start, end) outside every region, or -1."""
    pos = start
    while pos < end:
        r = find_region(S, pos)
        if r < 0:
            return pos
        pos = S[ix(S[MH.REG] + r * N_RG + RG.END)]
    return -1


@inlined
def durable_frame_of(S, pt, addr):
    """Frame of the durable image of `addr`'s page (persistent regions), or -1."""
    return durable_frame_in(pt, page_row(S, addr), addr)


@inlined
def persistence(S, addr):
    """The persistence domain (its index in memmodel.media.PERSISTENCE) of the region
    holding `addr` (P_NONE if unmapped)."""
    r = find_region(S, addr)
    return S[ix(S[MH.REG] + r * N_RG + RG.PERSIST)] if r >= 0 else P_NONE


@compiled
def missing_pages(S, pt, start, end, need):
    """Add to need[0] the chunks and to need[1] the frames that [start, end) still lacks
    (two per page of a persistent region: the page and its durable image)."""
    if end <= start:
        return
    prev = -1
    for page in range(start >> PAGE_SHIFT, ((end - 1) >> PAGE_SHIFT) + 1):
        slot = _chunk_slot(S, page << PAGE_SHIFT)
        if slot < 0:   # unmapped: faults before it needs a frame
            continue
        d = S[ix(slot)]
        per_page = 2 if persistence(S, page << PAGE_SHIFT) != P_NONE else 1
        if d < 0:
            if slot != prev:
                need[0] += 1
                prev = slot
            need[1] += per_page
        elif pt[d, page & (CHUNK_PAGES - 1)] < 0:
            need[1] += per_page


@compiled
def map_pages(S, pt, start, end):
    """Give every page of [start, end) a zeroed frame; `pt` and frames must have room."""
    if end <= start:
        return
    a = S[MH.ALLOC]
    for page in range(start >> PAGE_SHIFT, ((end - 1) >> PAGE_SHIFT) + 1):
        slot = _chunk_slot(S, page << PAGE_SHIFT)
        if slot < 0:
            continue
        if S[ix(slot)] < 0:
            S[ix(slot)] = S[ix(a + ALLOC.CHUNKS)]
            S[ix(a + ALLOC.CHUNKS)] += 1
        d = S[ix(slot)]
        pi = page & (CHUNK_PAGES - 1)
        if pt[d, pi] < 0:
            pt[d, pi] = S[ix(a + ALLOC.FRAMES)]
            S[ix(a + ALLOC.FRAMES)] += 1
            if persistence(S, page << PAGE_SHIFT) != P_NONE:
                pt[d, DURABLE0 + pi] = S[ix(a + ALLOC.FRAMES)]
                S[ix(a + ALLOC.FRAMES)] += 1


@compiled
def first_poisoned(S, pt, start, end):
    """Address of the first poisoned 64-byte line overlapping [start, end), or -1."""
    if end <= start:   # nothing to read (an op that faulted before its first byte)
        return -1
    line = start >> 6
    while line <= (end - 1) >> 6:
        d = page_row(S, line << 6)
        page_end = ((line >> 6) + 1) << 6     # first line of the next page
        if d >= 0:
            mask = pt[d, POISON0 + ((line >> 6) & (CHUNK_PAGES - 1))]
            if mask:
                for ln in range(line, min(page_end, ((end - 1) >> 6) + 1)):
                    if (mask >> (ln & 63)) & 1:
                        return ln << 6
        line = page_end
    return -1


@compiled
def set_poison(S, pt, addr, on):
    """Poison (or heal) the line holding `addr`, whose page must be present (else nothing
    changes). Returns 1 if its state changed."""
    d = page_row(S, addr)
    if d < 0:
        return 0
    col = POISON0 + ((addr >> PAGE_SHIFT) & (CHUNK_PAGES - 1))
    bit = np.int64(1) << ((addr >> 6) & 63)
    old = pt[d, col]
    pt[d, col] = old | bit if on else old & ~bit
    return 1 if (old & bit != 0) != on else 0


@compiled
def read_value(S, pt, frames, addr, n):
    """The n (<= 8) bytes at mapped `addr` as a little-endian integer (untouched pages: 0)."""
    v = 0
    for k in range(n):
        f = frame_of(S, pt, addr + k)
        if f >= 0:
            v |= np.int64(frames[f, (addr + k) & (PAGE_BYTES - 1)]) << (8 * k)
    return v


@inlined
def move(frames, fd, od, fs, os_, k):
    """frames[fd, od:od+k] = frames[fs, os_:os_+k], forward (8-byte words when aligned:
    aligned overlapping copies are then at least a word apart, so forward word order gives
    the same bytes as forward byte order)."""
    if (od | os_ | k) & 7 == 0:
        d = frames[fd].view(np.uint64)
        s = frames[fs].view(np.uint64)
        for i in range(k >> 3):
            d[(od >> 3) + i] = s[(os_ >> 3) + i]
    else:
        for i in range(k):
            frames[fd, od + i] = frames[fs, os_ + i]


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
        move(frames, fd, od, fs, os_, k)
        done += k


@compiled
def write_bytes(S, pt, frames, dst, data, off, n):
    """Store n bytes from data[off:off+n] at dst."""
    done = 0
    while done < n:
        d = dst + done
        od = d & (PAGE_BYTES - 1)
        k = min(n - done, PAGE_BYTES - od)
        bytes_in(frames, frame_of(S, pt, d), od, data, off + done, k)
        done += k


@inlined
def bytes_in(frames, fd, od, data, off, k):
    """data[off:off+k] at byte od of frame fd (within the page)."""
    for i in range(k):
        frames[ix(fd), ix(od + i)] = data[ix(off + i)]


@inlined
def write_imm(S, pt, frames, dst, imm, n):
    """Store the n (<= 64) little-endian bytes of imm (zero beyond 8 bytes) at dst."""
    done = 0
    while done < n:  # one page-table walk per page touched, not per byte
        d = dst + done
        od = d & (PAGE_BYTES - 1)
        k = min(n - done, PAGE_BYTES - od)
        imm_in(frames, frame_of(S, pt, d), od, imm, done, k)
        done += k


@inlined
def imm_in(frames, fd, od, imm, first, k):
    """Bytes first.. first+k-1 of write_imm's bytes of imm at byte od of frame fd (within
    the page)."""
    if first == 0 and k == 8:   # a word: the compiler merges the 8 byte stores into one (a
        for j in range(8):      # view of the frame as words makes an array every store)
            frames[fd, od + j] = (imm >> (8 * j)) & 0xFF
        return
    for j in range(k):
        i = first + j
        frames[fd, od + j] = (imm >> (8 * i)) & 0xFF if i < 8 else 0


@inlined
def persist_bytes(S, pt, frames, line, mask, src_frame, src_off):
    """Make the bytes of `line` selected by `mask` (bit i = byte i) durable, taking them
    from frames[src_frame, src_off:src_off+64]."""
    addr = line << 6
    durable_move(frames, durable_frame_of(S, pt, addr), addr & (PAGE_BYTES - 1), mask,
                 src_frame, src_off)


@inlined
def durable_move(frames, f, o, mask, src_frame, src_off):
    """The bytes selected by `mask` of frames[src_frame, src_off:+64] to the durable frame
    `f` at offset `o` (persist_bytes once the durable frame is known)."""
    if mask == -1:
        move(frames, f, o, src_frame, src_off, 64)
        return
    for i in range(64):
        if (mask >> i) & 1:
            frames[f, o + i] = frames[src_frame, src_off + i]


@compiled
def persist_range(S, pt, frames, start, end):
    """The current bytes of [start, end) become durable where the region is persistent."""
    for line in range(start >> 6, ((end - 1) >> 6) + 1):
        if persistence(S, line << 6) != P_NONE:
            persist_bytes(S, pt, frames, line, -1, frame_of(S, pt, line << 6), (line << 6) & (PAGE_BYTES - 1))


def read_bytes(S, pt, frames, addr, n, durable=False):
    """Python-side read for the facade: bytes at mapped [addr, addr+n) (of the durable image
    with `durable`); untouched pages are 0."""
    out = np.zeros(n, dtype=np.uint8)
    done = 0
    while done < n:
        a = addr + done
        off = a & (PAGE_BYTES - 1)
        k = min(n - done, PAGE_BYTES - off)
        f = durable_frame_of(S, pt, a) if durable else frame_of(S, pt, a)
        if f >= 0:
            out[done:done + k] = frames[f, off:off + k]
        done += k
    return out
