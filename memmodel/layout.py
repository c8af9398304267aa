"""Machine state as one int64 struct-of-arrays buffer.

Every int64 field array (cache tags, replacement state, queues, counters, parameters) is a
section of one flat buffer `S`; S[H_x] holds section x's offset. Compiled functions take
(S, pt, frames) instead of dozens of arrays: numba copies every array struct passed to a
call that it does not inline, and with ~50 arrays that copy cost more than the work.
Python code reads sections as named, shaped numpy views (`Layout.view`).
"""
import numpy as np

# Header: one slot per section; each holds the section's offset in S.
_SECTIONS = (
    # fixed size, first (FIXED_SIZES), so that their offsets are compile-time constants
    "tp", "sc", "l1_memo",
    # memmodel.cache's level table: the first section of variable size, at a fixed offset too
    "lv",
    # emu core
    "rob_seq", "rob_done", "sb", "lfb", "wc", "stream", "site_ctr", "region_ctr",
    # memmodel.cache
    "tags", "repl", "ready", "flags", "ccnt",
    # memmodel.media
    "mp", "mcnt", "chan", "mglob",
    # memmodel.memory
    "reg", "chunk_dir", "alloc",
    # emu core: the way to the persistence domain
    "pq", "pend",
)
(H_TP, H_SC, H_L1_MEMO, H_LV, H_ROB_SEQ, H_ROB_DONE, H_SB, H_LFB, H_WC, H_STREAM, H_SITE_CTR,
 H_REGION_CTR, H_TAGS, H_REPL, H_READY, H_FLAGS, H_CCNT, H_MP, H_MCNT, H_CHAN, H_MGLOB, H_REG,
 H_CHUNK_DIR, H_ALLOC, H_PQ, H_PEND) = range(len(_SECTIONS))
N_HEADER = len(_SECTIONS)

# Sizes of the first sections (emu.state's tp and sc fields, memmodel.cache's L1 memo);
# Layout.add refuses another size for them. Compiled code reads S[L1_MEMO_AT + ...] and
# S[LV_AT + ...] directly instead of first loading the section's offset from the header.
FIXED_SIZES = {"tp": 33, "sc": 34, "l1_memo": 3}
L1_MEMO_AT = N_HEADER + FIXED_SIZES["tp"] + FIXED_SIZES["sc"]
LV_AT = L1_MEMO_AT + FIXED_SIZES["l1_memo"]


class Layout:
    """Named sections of S; `build()` allocates S and writes the header."""

    def __init__(self):
        self.shapes = {}

    def add(self, name, shape):
        if name not in _SECTIONS:
            raise KeyError(f"unknown state section {name!r}")
        if name in FIXED_SIZES and np.prod(shape) != FIXED_SIZES[name]:
            raise ValueError(f"state section {name!r} must have {FIXED_SIZES[name]} fields")
        self.shapes[name] = tuple(int(x) for x in np.atleast_1d(shape))

    def build(self):
        offsets, pos = {}, N_HEADER
        for name in _SECTIONS:
            shape = self.shapes.get(name, (0,))
            offsets[name] = pos
            pos += int(np.prod(shape))
        if offsets["lv"] != LV_AT:
            raise ValueError(f"sections {sorted(FIXED_SIZES)} must all be declared")
        S = np.zeros(pos, dtype=np.int64)
        for i, name in enumerate(_SECTIONS):
            S[i] = offsets[name]
        self.offsets = offsets
        return S

    def view(self, S, name):
        off = int(S[_SECTIONS.index(name)])
        shape = self.shapes.get(name, (0,))
        return S[off:off + int(np.prod(shape))].reshape(shape)

    def resized(self, S, name, shape):
        """A new S in which section `name` has `shape` (rows kept, new rows zero)."""
        old = {n: self.view(S, n).copy() for n in self.shapes}
        self.add(name, shape)
        S2 = self.build()
        for n, arr in old.items():
            dst = self.view(S2, n)
            if n == name:
                dst[:len(arr)] = arr[:len(dst)]
            else:
                dst[...] = arr
        return S2
