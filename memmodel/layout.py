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
    # emu core
    "tp", "sc", "rob_seq", "rob_done", "sb", "lfb", "wc", "stream", "site_ctr", "region_ctr",
    # memmodel.cache
    "lv", "tags", "repl", "ready", "flags", "ccnt",
    # memmodel.media
    "mp", "mcnt", "chan", "mglob",
    # memmodel.memory
    "reg", "chunk_dir", "alloc",
    # emu core: the way to the persistence domain
    "pq", "pend",
)
H_TP = 0
H_SC = 1
H_ROB_SEQ = 2
H_ROB_DONE = 3
H_SB = 4
H_LFB = 5
H_WC = 6
H_STREAM = 7
H_SITE_CTR = 8
H_REGION_CTR = 9
H_LV = 10
H_TAGS = 11
H_REPL = 12
H_READY = 13
H_FLAGS = 14
H_CCNT = 15
H_MP = 16
H_MCNT = 17
H_CHAN = 18
H_MGLOB = 19
H_REG = 20
H_CHUNK_DIR = 21
H_ALLOC = 22
H_PQ = 23
H_PEND = 24
N_HEADER = len(_SECTIONS)


class Layout:
    """Named sections of S; `build()` allocates S and writes the header."""

    def __init__(self):
        self.shapes = {}

    def add(self, name, shape):
        if name not in _SECTIONS:
            raise KeyError(f"unknown state section {name!r}")
        self.shapes[name] = tuple(int(x) for x in np.atleast_1d(shape))

    def build(self):
        offsets, pos = {}, N_HEADER
        for name in _SECTIONS:
            shape = self.shapes.get(name, (0,))
            offsets[name] = pos
            pos += int(np.prod(shape))
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
