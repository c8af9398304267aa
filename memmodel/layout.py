"""Machine state as one int64 buffer S, in named sections declared by the modules that own them.

Every int64 field array (cache tags, replacement state, queues, counters, parameters) is a
section of one flat buffer S: compiled functions take (S, pt, frames) instead of dozens of
arrays, because numba copies every array struct passed to a call it does not inline, and
with ~50 arrays that copy cost more than the work. Python reads sections as named, shaped
numpy views (Layout.view).

A package's sections form a Block: one header slot per section of variable size (S[slot]
holds the section's offset), then its fixed-size sections at fixed offsets; both are
compile-time constants in compiled code. memmodel's block (MM below) comes first, emu's
starts at MM.end and is declared by emu: neither package names the other's sections. The
variable sections follow the last block, in the order of the blocks' slots.

The fields of a row are an IntEnum (`fields`): its len() is the row's width, so no count or
stride is typed twice; numba folds the members to constant offsets.
"""
from enum import IntEnum

import numpy as np


def fields(name, names, start=0):
    """The IntEnum of the fields `names` (space-separated) of a row, numbered from `start`."""
    return IntEnum(name, names, start=start)


class Block:
    """`header`: an IntEnum whose members name the block's variable sections (lower case) and
    are their header slots; `fixed`: (name, words) of its fixed sections, placed after it."""

    def __init__(self, header, fixed):
        self.slots = {m.name.lower(): int(m) for m in header}
        pos = int(max(header)) + 1
        self.fixed = {}
        for name, words in fixed:
            self.fixed[name] = (pos, words)
            pos += words
        self.end = pos

    def at(self, name):
        return self.fixed[name][0]


# memmodel's fixed sections, read on every access at constant offsets (memmodel.cache):
# the level table, a row per cache level, and the L1 block and the region found last (a
# derived cache).
LV = fields("LV", "SETS MASK WAYS BASE HIT POLICY RNG STAMP EMPTY INV")
MEMO = fields("MEMO", "LINE SET BLOCK REGION")
LV_ROWS = 3   # at most three cache levels (memmodel.profile.CACHE_LEVELS)

# memmodel's sections of variable size: cache blocks and counters (memmodel.cache), media
# parameters, counters, channels and globals (memmodel.media), regions, the chunk directory and
# the allocation counts (memmodel.memory; chunk_dir must follow reg), the stream prefetcher's
# table (memmodel.prefetch.stream) and the IP-stride prefetcher's (.ip_stride), the L1's line
# fill buffers and the L2's miss entries (memmodel._hierarchy), write-combining buffers
# (memmodel._wc), per-region counters (memmodel._memside) and the way to the persistence
# domain (memmodel._persist).
MH = fields("MH", "TAGS REPL READY FLAGS CCNT MP MCNT CHAN MGLOB REG CHUNK_DIR ALLOC STREAM "
            "IP_STRIDE LFB SQ WC REGION_CTR PQ PEND HOT HOT_REGION")
# mt: the memory side's machine switches, set once from the profile (memmodel.tables):
# cache levels, whether the last is inclusive, a cache-to-cache transfer in cycles, the
# core's NUMA node, functional memory, the L1's and the L2's prefetchers (a mask each,
# memmodel.prefetch) and the stream
# prefetcher's reach, the numbers of line fill buffers, L2 miss entries (0: no L2) and
# write-combining buffers, the entries of the hot-line table (0: none kept).
_MT = "LEVELS INCLUSIVE PEER NODE FUNCTIONAL PF_L1 PF_L2 STREAM_DIST STREAM_DEG LFB SQ WC HOT_CAP"
# ms: the memory side's scalars: the stamp of media and WC use, whether accesses are
# transient, the persistence queue's count and the pending ring's head and count, when the
# last write-back or NT store is accepted (WB_PENDING, for fences), when the last posted
# write is accepted (MEM_END), running totals of the events sites count (with the end of
# the demand misses outstanding, *_MISS_END), the caller's tag of the accesses (its site,
# for the hot-line table of memmodel._hotlines), its rows used and the misses it had no room for.
_MS = ("MEM_STAMP SPEC PQ_COUNT PEND_HEAD PEND_COUNT WB_PENDING MEM_END L1D_MISSES LLC_MISSES "
       "MEDIA_READS MEDIA_WRITES L1D_STORE_MISSES LLC_STORE_MISSES L1D_PENDING LLC_PENDING "
       "L1D_MISS_END LLC_MISS_END TAG HOT_USED HOT_DROPPED")
MM = Block(MH, (("memo", len(MEMO)), ("lv", LV_ROWS * len(LV)), ("mt", len(_MT.split())),
                ("ms", len(_MS.split()))))
MEMO_AT = MM.at("memo")
LV_AT = MM.at("lv")
MT = fields("MT", _MT, start=MM.at("mt"))
MS = fields("MS", _MS, start=MM.at("ms"))


LINE_WORDS = 8   # int64 words in a host cache line


def _zeros_on_line(n):
    """n int64 zeros, the first at the start of a host cache line (numpy aligns to 16
    bytes): only the host's speed depends on it, so a copy of S that is not aligned runs
    the same."""
    buf = np.zeros(n + LINE_WORDS, dtype=np.int64)
    k = (-buf.ctypes.data // 8) % LINE_WORDS
    return buf[k:k + n]


class Layout:
    """Named sections of S over `blocks` (memmodel's, then emu's); `build()` allocates S and
    writes the header."""

    def __init__(self, *blocks):
        self.blocks = blocks
        self.shapes = {}
        self.on_line = set()

    def _block_of(self, name):
        for b in self.blocks:
            if name in b.slots or name in b.fixed:
                return b
        raise KeyError(f"unknown state section {name!r}")

    def add(self, name, shape, on_line=False):
        """Declare section `name` of `shape`; `on_line`: it starts a host cache line (its
        rows of 8 words then lie one to a line: memmodel.cache's sets)."""
        b = self._block_of(name)
        shape = tuple(int(x) for x in np.atleast_1d(shape))
        if name in b.fixed and int(np.prod(shape)) > b.fixed[name][1]:
            raise ValueError(f"state section {name!r} holds at most {b.fixed[name][1]} fields")
        self.shapes[name] = shape
        if on_line:
            self.on_line.add(name)

    def build(self):
        offsets = {}
        pos = self.blocks[-1].end
        for b in self.blocks:
            for name, (at, _) in b.fixed.items():
                offsets[name] = at
            for name in b.slots:
                if name in self.on_line:
                    pos += -pos % LINE_WORDS
                offsets[name] = pos
                pos += int(np.prod(self.shapes.get(name, (0,))))
        S = _zeros_on_line(pos)
        for b in self.blocks:
            for name, slot in b.slots.items():
                S[slot] = offsets[name]
        self.offsets = offsets
        return S

    def view(self, S, name):
        off = self.offsets[name]
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
