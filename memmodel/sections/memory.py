"""The memory map's sections (memmodel.memory) set from the regions, and the growth of the
lazily allocated page table and frames, which the facade asks for when the core stops for
more."""
import numpy as np

from memmodel.layout import EXACT, MH, SHARED
from memmodel.media import PERSISTENCE
from memmodel.memory import (ALLOC, CHUNK_PAGES, CHUNK_SHIFT, N_RG, NOT_MAPPED, PAGE_BYTES,
                             POISON0, PT_COLS, RESERVED_FRAMES)


def _dir_entries(r):
    return (r["size_bytes"] + (1 << CHUNK_SHIFT) - 1) >> CHUNK_SHIFT


def add_sections(layout, regions):
    # one memory the cores share
    layout.add("reg", (len(regions), N_RG), EXACT, share=SHARED)
    layout.add("chunk_dir", sum(_dir_entries(r) for r in regions), EXACT, share=SHARED)
    layout.add("alloc", len(ALLOC), EXACT, share=SHARED)


def init_sections(layout, S, regions, media_ids, persistence):
    """`regions` sorted by base, `persistence`: media name -> "none"/"adr"/"eadr".
    Returns the initial (pt, frames)."""
    reg = layout.view(S, "reg")
    d = 0
    for i, r in enumerate(regions):
        reg[i] = (r["base"], r["base"] + r["size_bytes"], media_ids[r["media"]], r["node"],
                  r.get("privilege") == "user", d,
                  PERSISTENCE.index(persistence[r["media"]]))
        d += _dir_entries(r)
    layout.view(S, "chunk_dir")[:] = NOT_MAPPED
    reserved = RESERVED_FRAMES * layout.cores   # each core's pending snapshots
    layout.view(S, "alloc")[ALLOC.FRAMES] = reserved
    return _pt_rows(4), np.zeros((reserved + 64, PAGE_BYTES), dtype=np.uint8)


def _pt_rows(n):
    """n empty page-table rows: no frames, no poison."""
    rows = np.full((n, PT_COLS), NOT_MAPPED, dtype=np.int64)
    rows[:, POISON0:POISON0 + CHUNK_PAGES] = 0
    return rows


class MemoryLimit(ValueError):
    """More functional memory than the machine's limit would be needed."""


def grow(S, pt, frames, chunks_needed, frames_needed, limit_bytes):
    """(pt, frames) with room for that many more chunks and frames (amortised doubling, up to
    `limit_bytes` of frames); MemoryLimit, with nothing allocated, beyond it."""
    used_c, used_f = int(S[S[MH.ALLOC] + ALLOC.CHUNKS]), int(S[S[MH.ALLOC] + ALLOC.FRAMES])
    limit = limit_bytes // PAGE_BYTES
    if used_f + frames_needed > limit:
        raise MemoryLimit(f"{frames_needed} more 4 KiB frames ({frames_needed * PAGE_BYTES} "
                          f"bytes) are needed, {used_f} are held; the limit is "
                          f"{limit_bytes} bytes of functional memory")
    if used_c + chunks_needed > len(pt):
        new = _pt_rows(max(used_c + chunks_needed, 2 * len(pt)))
        new[:len(pt)] = pt
        pt = new
    if used_f + frames_needed > len(frames):
        rows = max(used_f + frames_needed, min(2 * len(frames), limit))
        new = np.zeros((rows, PAGE_BYTES), dtype=np.uint8)
        new[:len(frames)] = frames
        frames = new
    return pt, frames
