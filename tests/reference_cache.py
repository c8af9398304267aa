"""A slow, obviously correct reference cache hierarchy (docs/style.md item 9, first kind).

Pure Python on top of cachetools: every set of every level is one `LRUCache` or
`FIFOCache` with maxsize = ways, keyed by line number; dirty lines are kept in a set per
level. It mirrors the emulator's hierarchy semantics (memmodel/_hierarchy.py `demand`, `_walk`,
`_install`, `_writeback`, `_back_invalidate`; memmodel/cache.py `fill`, `touch`) and
nothing else: no timing, no prefetchers, no flushes.

* An access of `size` bytes at `addr` touches line addr>>6 and, if it crosses, line
  (addr+size-1)>>6, one after the other.
* A demand access looks levels up from L1 down; each level that misses counts a miss of
  the access kind (an L1 store miss is a store miss at L2 and the LLC too, as the RFO);
  the level that hits counts a hit and the line is used there. The line is then
  installed in every level above the hit (all levels on a full miss), lowest level
  first, L1 last. Stores mark the L1 copy dirty (write-allocate, write-back).
* Installing into a full set evicts the policy's victim (LRU: least recently used,
  fills and hits both count as use; FIFO: oldest fill, hits do not count). A set that
  is not full has an invalid way, which is always taken first: nothing is evicted.
* A dirty victim of level j is written into level j+1: present there -> marked dirty
  and used (an LRU touch); absent -> installed there dirty without any fetch (which may
  evict and cascade in turn). From the last level it goes to memory.
* `inclusive`: a victim of the last level is also invalidated in every level above;
  a dirty copy there makes the write-back dirty.

How cachetools is used, and why (read in cachetools 8.0.2; pinned by
tests/test_differential.py::test_cachetools_behaviour_the_reference_relies_on):
* `key in cache` looks without using (Cache.__contains__ is the plain dict lookup).
* `cache[key]` is a use: LRUCache.__getitem__ moves the key to the MRU end; FIFOCache
  inherits Cache.__getitem__, which changes no order. That is exactly "a hit".
* `cache[key] = v` on an *existing* key would move it to the end in both LRUCache and
  FIFOCache (FIFOCache.__setitem__ calls move_to_end), which would be wrong for FIFO,
  so it is only ever done for new keys; dirty bits live in a separate set.
* Inserting a new key into a full cache makes cachetools call popitem() itself and
  discard the victim, so `install` pops the victim explicitly first (popitem() returns
  the LRU / first-inserted key) to know which line left and whether it was dirty. A
  set with fewer than `ways` entries has an invalid way, and nothing is popped.
"""
from collections import Counter

from cachetools import FIFOCache, LRUCache

LINE = 64
_SET_CLASS = {"lru": LRUCache, "fifo": FIFOCache}

#: Counter names shared with memmodel/cache.py COUNTER_NAMES (the ones modelled here).
COUNTERS = ("load_hits", "load_misses", "store_hits", "store_misses",
            "writeback_in_hits", "writeback_in_misses", "fills", "evictions",
            "dirty_writebacks", "invalidations")


class RefLevel:
    """One set-associative level: a cachetools cache per set plus a set of dirty lines."""

    def __init__(self, name, size_bytes, ways, policy):
        if policy not in _SET_CLASS:
            raise ValueError(f"reference models lru and fifo only, not {policy!r}")
        n_sets, rem = divmod(size_bytes, LINE * ways)
        assert rem == 0 and n_sets >= 1, (size_bytes, ways)
        self.name, self.ways, self.n_sets, self.policy = name, ways, n_sets, policy
        self.sets = [_SET_CLASS[policy](maxsize=ways) for _ in range(n_sets)]
        self.dirty = set()
        self.counts = Counter({k: 0 for k in COUNTERS})

    def _set(self, line):
        return self.sets[line % self.n_sets]

    def has(self, line):
        return line in self._set(line)          # no replacement update

    def use(self, line):
        self._set(line)[line]                   # LRU: move to MRU end; FIFO: no change

    def install(self, line, dirty):
        """Put `line` (absent) in its set; returns (victim line, victim dirty) or None."""
        s = self._set(line)
        assert line not in s
        victim = None
        if len(s) == self.ways:                 # no invalid way: evict the policy's victim
            v, _ = s.popitem()
            vd = v in self.dirty
            self.dirty.discard(v)
            self.counts["evictions"] += 1
            self.counts["dirty_writebacks"] += vd
            victim = (v, vd)
        s[line] = True
        self.counts["fills"] += 1
        if dirty:
            self.dirty.add(line)
        else:
            self.dirty.discard(line)
        return victim

    def invalidate(self, line):
        """Drop `line` if present; returns whether it was dirty (None if absent)."""
        s = self._set(line)
        if line not in s:
            return None
        del s[line]
        was = line in self.dirty
        self.dirty.discard(line)
        self.counts["invalidations"] += 1
        return was

    def contents(self):
        """List per set of the sorted line numbers held (as Machine.cache_contents)."""
        return [sorted(s) for s in self.sets]


class RefHierarchy:
    """levels: list of dicts with name, size_bytes, ways, policy (L1 first)."""

    def __init__(self, levels, inclusive=False):
        self.levels = [RefLevel(lv["name"], lv["size_bytes"], lv["ways"], lv["policy"])
                       for lv in levels]
        self.inclusive = bool(inclusive)
        self.mem_reads = 0
        self.mem_writes = 0

    # ---------------------------------------------------------------- accesses
    def load(self, addr, size=8):
        self._access(addr, size, False)

    def store(self, addr, size=8):
        self._access(addr, size, True)

    def run(self, trace):
        """trace: iterable of (is_store, addr, size)."""
        for is_store, addr, size in trace:
            self._access(addr, size, is_store)
        return self

    def _access(self, addr, size, is_store):
        assert 1 <= size <= 64 and addr >= 0
        first, last = addr // LINE, (addr + size - 1) // LINE
        self._demand(first, is_store)
        if last != first:
            self._demand(last, is_store)

    def _demand(self, line, is_store):
        kind = "store" if is_store else "load"
        n = len(self.levels)
        hit = n
        for j, lv in enumerate(self.levels):
            if lv.has(line):
                lv.counts[kind + "_hits"] += 1
                lv.use(line)
                hit = j
                break
            lv.counts[kind + "_misses"] += 1
        if hit == n:
            self.mem_reads += 1
        for j in range(hit - 1, -1, -1):        # lowest level first, L1 last
            self._install(j, line, dirty=is_store and j == 0)
        if is_store and hit == 0:
            self.levels[0].dirty.add(line)

    # ---------------------------------------------------------------- victims
    def _install(self, j, line, dirty):
        victim = self.levels[j].install(line, dirty)
        if victim is None:
            return
        v, vd = victim
        if self.inclusive and j == len(self.levels) - 1:
            vd = self._back_invalidate(v) or vd
        if vd:
            self._writeback(j + 1, v)

    def _writeback(self, j, line):
        """A dirty victim from level j-1 arrives at level j (or memory)."""
        if j == len(self.levels):
            self.mem_writes += 1
            return
        lv = self.levels[j]
        if lv.has(line):
            lv.counts["writeback_in_hits"] += 1
            lv.dirty.add(line)
            lv.use(line)
            return
        lv.counts["writeback_in_misses"] += 1
        self._install(j, line, dirty=True)

    def _back_invalidate(self, line):
        dirty = False
        for lv in self.levels[:-1]:
            dirty = bool(lv.invalidate(line)) or dirty
        return dirty

    # ---------------------------------------------------------------- results
    def stats(self):
        """{level name: {counter: value}} plus hits/misses totals, as Machine.stats()."""
        out = {}
        for lv in self.levels:
            d = dict(lv.counts)
            d["hits"] = d["load_hits"] + d["store_hits"]
            d["misses"] = d["load_misses"] + d["store_misses"]
            out[lv.name] = d
        return out

    def contents(self, level):
        return self._level(level).contents()

    def dirty_lines(self, level):
        return set(self._level(level).dirty)

    def _level(self, level):
        if isinstance(level, int):
            return self.levels[level]
        return next(lv for lv in self.levels if lv.name == level)


def pcs_hierarchy(levels):
    """pycachesim L1 -> L2 -> L3 -> memory, LRU, write-back + write-allocate (load_from =
    store_to = the next level); `levels` = [(size_bytes, ways), ...] from L1 down.
    Returns (CacheSimulator, [caches from L1 down])."""
    from cachesim import Cache, CacheSimulator, MainMemory
    mem = MainMemory()
    caches = []
    below = None
    for name, (size, ways) in reversed(list(zip(("L1", "L2", "L3"), levels))):
        c = Cache(name, size // (64 * ways), ways, 64, "LRU", store_to=below, load_from=below,
                  write_back=True, write_allocate=True)
        if below is None:
            mem.load_to(c)
            mem.store_from(c)
        caches.insert(0, c)
        below = c
    return CacheSimulator(caches[0], mem), caches
