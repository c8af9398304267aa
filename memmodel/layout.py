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

Every word has a role, declared where the word is: a scalar's next to its enum (a dict of
field: role), a section's where it is added (Layout.add's `role`). emu.timeshift,
emu.fastforward, Machine.reset_stats, stats() and state_hash() read the roles:
- clock(c): a point on clock c (emu.timeshift names the clocks); clock(c, none=True): a
  negative value means "none" and is no point in time; clock(c, own=True): the clock's
  own value, its "now" (one word per clock, but "fp": cycles x media.FP);
- COUNTER: an event count stats() reports and reset_stats() zeroes;
- TOTAL: a running total of events (or a site's mark of one) that reset_stats() leaves;
- mark(section): a mark of counters of `section`, zeroed with them;
- ring(head, c): the slots of a ring whose head is word `head`, on clock c (None: none);
- HEAD: a ring's head;
- DERIVED: a cache of other state, left out of state hashes;
- EXACT: model state that must match word for word (tags, flags, parameters, queues).
A section of fields declares a dict {field: role} naming every field (a fixed section's
numbered in S, as its enum numbers them); a section whose
words' roles depend on the machine (a cache level's stamps, a channel's queue) declares a
function (layout, S) -> [(flat indices, role)] (the rest EXACT; a ring's indices shaped
(slots, words per slot)).

Cores: every section also declares its share, by what the hardware shares: PRIVATE (one
copy per core: its window, store buffer, WC and fill buffers, L1D and L2, prefetchers,
counters) or SHARED (one copy: the LLC's blocks, the media, the memory map, the words that
change as the LLC and the media are used: the socket section, SK). With N cores
S is one buffer B = [core 0's fixed words | core 1's | ... | the variable sections], a
private variable section as N copies one after another, and core k runs on its view
S_k = B[k * F:] (Layout.core; F = the fixed words, the blocks' end): its fixed sections lie at
the same constant offsets as core 0's, and its header slots hold the offsets, in its view,
of its own copies and of the shared sections. A private section may end in words that the
cores share (`shared_words`: the last cache level's part of the cache sections): its copies
are then followed by those words once, and a core reaches them at the same distance from
its copy in every such section (Layout.tail_at). One core's B is the layout of S before
there were cores.

Sockets: with S sockets (Machine(sockets=S)) the cores are socket-major, cores/S a socket
(core k on socket k // (cores/S)), and the shared words of a private section are one copy
per socket, after the cores' copies: [core 0 | ... | core N-1 | socket 0's | socket 1's];
core k reaches its socket's at the same distance from its copy in every such section
(Layout.tail_at). With one socket the layout is the one above.
"""
from collections import namedtuple
from enum import IntEnum

import numpy as np


Role = namedtuple("Role", "kind clock none head own", defaults=(None, False, None, False))


def clock(c, none=False, own=False):
    return Role("clock", c, none, None, own)


def ring(head, c):
    return Role("ring", c, head=head)


def mark(section):
    return Role("mark", head=section)


COUNTER = Role("counter")
TOTAL = Role("total")
DERIVED = Role("derived")
EXACT = Role("exact")
HEAD = Role("head")

PRIVATE = "private"   # a section's share: one copy per core
SHARED = "shared"     # one copy the cores share


def fields(name, names, start=0):
    """The IntEnum of the fields `names` (space-separated) of a row, numbered from `start`."""
    return IntEnum(name, names, start=start)


class Block:
    """`header`: an IntEnum whose members name the block's variable sections (lower case) and
    are their header slots; `fixed`: (name, words, share) of its fixed sections, placed after
    it: PRIVATE, as compiled code reads them at constant offsets in every core's view."""

    def __init__(self, header, fixed):
        self.slots = {m.name.lower(): int(m) for m in header}
        pos = int(max(header)) + 1
        self.fixed = {}
        for name, words, share in fixed:
            if share != PRIVATE:
                raise ValueError(f"fixed state section {name!r} is {share!r}: a fixed section "
                                 f"lies at one offset in every core's view, so {PRIVATE!r}")
            self.fixed[name] = (pos, words)
            pos += words
        self.end = pos

    def at(self, name):
        return self.fixed[name][0]


# memmodel's fixed sections, read on every access at constant offsets: the level table, a
# row per cache level (memmodel.cache), and the L1 block (memmodel._l1) and the region
# (memmodel.memory) found last (a derived cache).
# A level's changing words (RNG STAMP EMPTY) are read at lv[level, LV.USE]: its own row's, or
# for the level the cores share, the socket section's (SK), whose first words mirror them.
LV = fields("LV", "SETS MASK WAYS BASE HIT POLICY USE RNG STAMP EMPTY INV")
MEMO = fields("MEMO", "LINE SET BLOCK REGION")
LV_ROWS = 3   # at most three cache levels (memmodel.profile_schema.CACHE_LEVELS)

# memmodel's sections of variable size: cache blocks and counters (memmodel.cache), media
# parameters, counters, channels and globals (memmodel.media), regions, the chunk directory and
# the allocation counts (memmodel.memory; chunk_dir must follow reg), the stream prefetcher's
# table (memmodel.prefetch.stream) and the IP-stride prefetcher's (.ip_stride), the L1's line
# fill buffers and the L2's miss entries (memmodel._hierarchy), write-combining buffers
# (memmodel._wc), per-region counters (memmodel._memside) and the way to the persistence
# domain (memmodel._persist).
MH = fields("MH", "TAGS REPL READY FLAGS CCNT MP MCNT CHAN MGLOB REG CHUNK_DIR ALLOC STREAM "
            "IP_STRIDE LFB SQ WC REGION_CTR PQ PEND HOT HOT_REGION SOCKET")
# socket: the words the cores of a socket share that change as they run: the shared cache
# level's random state, use stamp and empty-way count (at LV.RNG, LV.STAMP, LV.EMPTY from
# its rows' LV.USE) and the memory side's stamp of media and WC use
SK = fields("SK", "RNG STAMP EMPTY MEM_STAMP")
# with several cores the socket section goes on (memmodel._coherence): the sockets, the
# cycles of a transfer from the other socket's caches (a modified line's, a clean one's),
# the snoop filter's extended directory's ways (0: none modelled) and where in the section
# its entries start (memmodel._snoopfilter), then for each socket after the first its
# shared level's RNG STAMP EMPTY (N_SKL words, as SK's first), then for each core its
# counts of misses served from the other socket (XC: modified there, clean there) and of
# its extended directory's evictions that back-invalidated private copies, then each
# socket's extended directory (the shared level's sets x SF_WAYS lines). Not there with
# one core: its state is as before sockets.
XS = fields("XS", "SOCKETS REMOTE_HITM REMOTE_HIT SF_WAYS SF_AT", start=len(SK))
N_SKL = 3
XC = fields("XC", "REMOTE_HITM REMOTE_HITS SF_BACK_INVALIDATIONS")
XS_END, N_XC = len(SK) + len(XS), len(XC)   # for compiled code, which has no len() of an enum
SF_DIRECTORY = 2   # mt's INCLUSIVE for a non-inclusive last level with a modelled directory
# mt: the memory side's machine switches, set once from the profile (memmodel.tables):
# cache levels, whether the last is inclusive (INCLUSIVE: 1; SF_DIRECTORY: non-inclusive, with
# the snoop filter's extended directory of memmodel._snoopfilter, several cores; 0: neither),
# a cache-to-cache transfer in cycles, the
# core's NUMA node, functional memory, the L1's and the L2's prefetchers (a mask each,
# memmodel.prefetch) and the stream
# prefetcher's reach, the numbers of line fill buffers, L2 miss entries (0: no L2) and
# write-combining buffers, the entries of the hot-line table (0: none kept), the first of
# the reserved frames that hold the core's pending snapshots (memmodel.memory); a clean
# line's transfer from another core in cycles (PEER: a modified one's), this core's index,
# the machine's cores and the words from one core's view to the next's (memmodel._coherence).
_MT = ("LEVELS INCLUSIVE PEER NODE FUNCTIONAL PF_L1 PF_L2 STREAM_DIST STREAM_DEG LFB SQ WC "
       "HOT_CAP SNAPSHOT_FRAME PEER_HIT CORE CORES CORE_WORDS")
# ms: the core's scalars of the memory side: whether accesses are transient, the
# persistence queue's count and the pending ring's head and count, when the last write-back or NT store is accepted (WB_PENDING, for fences), when the last posted
# write is accepted (MEM_END), running totals of the events sites count (with the end of
# the demand misses outstanding, *_MISS_END), the caller's tag of the accesses (its site,
# for the hot-line table of memmodel._hotlines), its rows used and the misses it had no room for.
_MS = ("SPEC PQ_COUNT PEND_HEAD PEND_COUNT WB_PENDING MEM_END L1D_MISSES LLC_MISSES "
       "MEDIA_READS MEDIA_WRITES L1D_STORE_MISSES LLC_STORE_MISSES L1D_PENDING LLC_PENDING "
       "L1D_MISS_END LLC_MISS_END TAG HOT_USED HOT_DROPPED")
MM = Block(MH, (("memo", len(MEMO), PRIVATE), ("lv", LV_ROWS * len(LV), PRIVATE),
                ("mt", len(_MT.split()), PRIVATE), ("ms", len(_MS.split()), PRIVATE)))
MEMO_AT = MM.at("memo")
LV_AT = MM.at("lv")
MT = fields("MT", _MT, start=MM.at("mt"))
MS = fields("MS", _MS, start=MM.at("ms"))
# the roles of ms's words (mt's are EXACT)
MS_ROLES = {
    **dict.fromkeys((MS.SPEC, MS.PQ_COUNT, MS.PEND_COUNT, MS.TAG), EXACT),
    MS.WB_PENDING: clock("cycles"), MS.MEM_END: clock("cycles"),
    MS.L1D_MISS_END: clock("cycles"), MS.LLC_MISS_END: clock("cycles"),
    MS.PEND_HEAD: HEAD,
    **dict.fromkeys((MS.L1D_MISSES, MS.LLC_MISSES, MS.MEDIA_READS, MS.MEDIA_WRITES,
                     MS.L1D_STORE_MISSES, MS.LLC_STORE_MISSES, MS.L1D_PENDING,
                     MS.LLC_PENDING), TOTAL),
    MS.HOT_USED: mark("hot"), MS.HOT_DROPPED: mark("hot"),
}


LINE_WORDS = 8   # int64 words in a host cache line


def _zeros_on_line(n):
    """n int64 zeros, the first at the start of a host cache line (numpy aligns to 16
    bytes): only the host's speed depends on it, so a copy of S that is not aligned runs
    the same."""
    buf = np.zeros(n + LINE_WORDS, dtype=np.int64)
    k = (-buf.ctypes.data // 8) % LINE_WORDS
    return buf[k:k + n]


class Layout:
    """Named sections of S over `blocks` (memmodel's, then emu's) for `cores` cores;
    `build()` allocates S and writes every core's header."""

    def __init__(self, *blocks, cores=1, sockets=1):
        if sockets < 1 or cores % sockets:
            raise ValueError(f"{cores} core(s) over {sockets} socket(s): not a whole number "
                             "of cores a socket")
        self.blocks = blocks
        self.cores = cores
        self.sockets = sockets
        self.per_socket = cores // sockets
        self.fixed_words = blocks[-1].end   # F: the words before the variable sections, per core
        self.shapes = {}
        self.on_line = set()
        self.roles = {}
        self.signature = {}
        self.share = {}
        self.shared_words = {}
        self._words = None

    def _block_of(self, name):
        for b in self.blocks:
            if name in b.slots or name in b.fixed:
                return b
        raise KeyError(f"unknown state section {name!r}")

    def add(self, name, shape, role, *, share, on_line=False, signature=(), shared_words=0):
        """Declare section `name` of `shape` and its words' `role` (a Role, a dict of its
        fields' or a function: the module docstring) and `share` (PRIVATE or SHARED: the
        module docstring); `shared_words`: of a PRIVATE section of one dimension, its last
        words that the cores share; `on_line`: it starts a host cache
        line (its rows of 8 words then lie one to a line: memmodel.cache's sets);
        `signature`: its words in emu.fastforward's signature, a cheap first test that the
        state repeats (True: all of them, else their flat indices in the section): small
        sections that change as the program runs, so a period's signature differs from most
        others'."""
        b = self._block_of(name)
        shape = tuple(int(x) for x in np.atleast_1d(shape))
        if share not in (PRIVATE, SHARED):
            raise ValueError(f"state section {name!r}: share is {share!r}, not {PRIVATE!r} "
                             f"(a copy per core) or {SHARED!r}")
        if name in b.fixed and share != PRIVATE:
            raise ValueError(f"state section {name!r} is fixed, so {PRIVATE!r}")
        if shared_words and (share != PRIVATE or len(shape) != 1
                             or not 0 <= shared_words <= shape[0]):
            raise ValueError(f"state section {name!r}: {shared_words} shared words need a "
                             f"private section of one dimension at least that long")
        if name in b.fixed and int(np.prod(shape)) > b.fixed[name][1]:
            raise ValueError(f"state section {name!r} holds at most {b.fixed[name][1]} fields")
        self.roles[name] = role
        self.signature[name] = signature
        self.share[name] = share
        self.shared_words[name] = int(shared_words)
        self.shapes[name] = shape
        if on_line:
            self.on_line.add(name)

    def build(self):
        """S (every core's view's header written; the sections zero)."""
        n, f = self.cores, self.fixed_words
        offsets, stride = {}, {}
        pos = n * f
        for b in self.blocks:
            for name, (at, _) in b.fixed.items():
                offsets[name], stride[name] = at, f
            for name in b.slots:
                if name in self.on_line:
                    pos += -pos % LINE_WORDS
                size = int(np.prod(self.shapes.get(name, (0,))))
                offsets[name] = pos
                # the distance from one core's copy to the next's (0: one copy)
                stride[name] = (0 if self.share.get(name, SHARED) == SHARED
                                else size - self.shared_words[name])
                pos += size + (n - 1) * stride[name] + (self.sockets - 1) * \
                    self.shared_words.get(name, 0)
        S = _zeros_on_line(pos)
        self._words = None
        for k in range(n):
            for b in self.blocks:
                for name, slot in b.slots.items():
                    S[k * f + slot] = offsets[name] + k * (stride[name] - f)
        self.offsets, self.stride, self.size = offsets, stride, pos
        return S

    def core(self, S, k):
        """Core k's view of S (the buffer build() made)."""
        if not 0 <= k < self.cores:
            raise ValueError(f"core {k}: this machine has cores 0 to {self.cores - 1}")
        return S[k * self.fixed_words:]

    def _core_of(self, S):
        """The core whose view S is (the whole buffer: core 0's)."""
        return (self.size - len(S)) // self.fixed_words

    def socket_of(self, k):
        """The socket of core k (socket-major: cores/sockets a socket)."""
        return k // self.per_socket

    def tail_at(self, S, name):
        """The offset, from the copy of section `name` in view S, of its socket's shared
        words."""
        k = self._core_of(S)
        return (self.cores - k) * self.stride[name] + self.socket_of(k) * self.shared_words[name]

    def spread(self, S):
        """Copy core 0's private words (set up as one core's) to every other core's copy; its
        header slots stay each core's own."""
        f = self.fixed_words
        for b in self.blocks:
            for name, (at, words) in b.fixed.items():
                for k in range(1, self.cores):
                    S[k * f + at:k * f + at + words] = S[at:at + words]
        for name, d in self.stride.items():
            if d and name not in self._block_of(name).fixed:
                off = self.offsets[name]
                for k in range(1, self.cores):
                    S[off + k * d:off + (k + 1) * d] = S[off:off + d]
                t, tail = off + self.cores * d, self.shared_words[name]
                for s in range(1, self.sockets):   # every socket's shared words as socket 0's
                    S[t + s * tail:t + (s + 1) * tail] = S[t:t + tail]

    def signature_words(self):
        """The flat indices in S of the words the sections put in the signature (add)."""
        return np.concatenate([self.offsets[name] + (np.arange(int(np.prod(self.shapes[name])))
                                                     if sig is True else np.asarray(sig, int))
                               for name, sig in self.signature.items() if sig] or
                              [np.zeros(0, int)])

    def words(self, S):
        """[(flat indices into S, Role)] of every word of every section (every core's copy),
        in the order the sections were added; a word its section's function does not name
        is EXACT. The functions read parameters set up with S (a level's policy, a media's
        queue): the first call after build() must come once S is set up, and is kept until
        the next."""
        if self._words is not None:
            return self._words
        out = self._words = []
        for name, role in self.roles.items():
            parts = self._parts(S, name, role)
            out += parts + self._other_cores(name, parts)
        return out

    def _parts(self, S, name, role):
        """words() of core 0's copy of section `name` (and its shared words)."""
        off, size = self.offsets[name], int(np.prod(self.shapes[name]))
        own = np.concatenate([i.reshape(-1) for i in self.indices(name)[:1] +
                              self.indices(name)[self.cores:]])   # ascending
        if isinstance(role, Role):   # shaped as the section's rows (a ring's slots)
            rows = self.shapes[name] if len(self.shapes[name]) > 1 else (-1, 1)
            return [(own.reshape(rows), role)]
        if isinstance(role, dict):   # a fixed section's fields are numbered in S
            if len(role) != size:
                raise ValueError(f"state section {name!r}: roles of {len(role)} of its "
                                 f"{size} fields declared")
            base = 0 if name in self._block_of(name).fixed else off
            parts = [(np.array([base + int(f)]), r) for f, r in role.items()]
        else:
            parts = self._every_socket(name, role(self, S))
        named = np.zeros(len(own), dtype=bool)   # size, and the other sockets' shared words
        for idx, _ in parts:
            named[np.searchsorted(own, np.asarray(idx).reshape(-1))] = True
        return parts + [(own[~named], EXACT)]

    def _every_socket(self, name, parts):
        """`parts` (words a section's function named: core 0's copy and socket 0's shared
        words) with socket 0's shared words' roles given to every other socket's too."""
        tail = self.shared_words[name]
        if self.sockets == 1 or not tail:
            return parts
        t0 = self.offsets[name] + self.cores * self.stride[name]
        out = list(parts)
        for idx, role in parts:
            idx = np.asarray(idx).reshape(-1)
            idx = idx[(idx >= t0) & (idx < t0 + tail)]
            if len(idx):
                out += [(idx + s * tail, role) for s in range(1, self.sockets)]
        return out

    def _other_cores(self, name, parts):
        """`parts` (core 0's words of section `name`) for cores 1 and on: moved to their copy,
        their ring heads to their fixed words; the shared words left out."""
        d, f = self.stride[name], self.fixed_words
        if not d or self.cores == 1:
            return []
        own_end = self.offsets[name] + d
        out = []
        for k in range(1, self.cores):
            for idx, role in parts:
                idx = np.asarray(idx)
                if self.shared_words[name]:
                    idx = idx.reshape(-1)
                    idx = idx[idx < own_end]
                head = role.head
                if isinstance(head, (int, np.integer)):
                    role = role._replace(head=int(head) + k * f)
                out.append((idx + k * d, role))
        return out

    def where(self, S, *kinds):
        """The flat indices of the words whose role is of one of `kinds`, ascending."""
        parts = [np.asarray(i).reshape(-1) for i, r in self.words(S) if r.kind in kinds]
        return np.unique(np.concatenate(parts + [np.zeros(0, dtype=np.int64)]))

    def indices(self, name):
        """The flat indices in S of section `name`'s words: [core 0's copy, core 1's, ...,
        socket 0's shared words, socket 1's, ...] (one array for a shared section), each
        shaped as its words."""
        off, shape, d = self.offsets[name], self.shapes.get(name, (0,)), self.stride[name]
        size, tail = int(np.prod(shape)), self.shared_words.get(name, 0)
        if not d:
            return [np.arange(off, off + size).reshape(shape)]
        own = [np.arange(off + k * d, off + k * d + size - tail).reshape(
            shape if not tail else (-1,)) for k in range(self.cores)]
        t = off + self.cores * d
        return own + [np.arange(t + s * tail, t + (s + 1) * tail)
                      for s in range(self.sockets if tail else 0)]

    def view(self, S, name):
        """Section `name` in S, the buffer or a core's view of it (its own copy); a section
        with shared words: from its copy to the end of its socket's (tail_at)."""
        k = self._core_of(S)
        off = self.offsets[name] + k * (self.stride[name] - self.fixed_words)
        shape = self.shapes.get(name, (0,))
        if self.shared_words.get(name, 0):
            return S[off:off + self.tail_at(S, name) + self.shared_words[name]]
        return S[off:off + int(np.prod(shape))].reshape(shape)

    def resized(self, S, name, shape):
        """A new S in which section `name` has `shape` (rows kept, new rows zero)."""
        old = {(n, k): self.view(self.core(S, k), n).copy() for n in self.shapes
               for k in range(self.cores)}
        self.add(name, shape, self.roles[name], share=self.share[name],
                 signature=self.signature[name], shared_words=self.shared_words[name])
        S2 = self.build()
        for (n, k), arr in old.items():
            dst = self.view(self.core(S2, k), n)
            if n == name:
                dst[:len(arr)] = arr[:len(dst)]
            else:
                dst[...] = arr
        return S2
