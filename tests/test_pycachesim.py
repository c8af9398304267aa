"""The emulator's hierarchy against pycachesim (package `cachesim`, an independent C model).

Geometry on both sides: L1 32 KiB 8-way (64 sets), L2 1 MiB 16-way (1024 sets), L3/LLC
2 MiB 16-way (2048 sets), 64-byte lines, LRU, write-back + write-allocate; emulator
prefetchers off, LLC non-inclusive. All accesses are 8 bytes, 8-byte aligned, so none
crosses a line and every pycachesim call is exactly one line (its LOAD/STORE counters
count calls, its HIT/MISS counters lines). Traces over 4 MiB: sequential, stride 64
(two passes), stride 4096+64 (four passes), 200k random (numpy seed 0).

Load-only traces: both model the same thing (look up L1, L2, L3; fill every level above
the hit, lowest first; LRU victim, invalid ways first; clean victims vanish), so the
per-level hit and miss counts and the final contents of every level are identical.

How the two differ once there are stores (pycachesim 0.3.1 backend.c: `Cache__store`,
`Cache__load`, `Cache__inject`; (A)-(C) are each shown on a tiny hierarchy below):

(A) A store that hits is not a use in pycachesim: `Cache__store` only sets the dirty
    bit, the LRU queue is reordered only in `Cache__load`. The emulator touches the line
    (memmodel/cache.py `touch`). A store hit on a line that is not already the most
    recently used one of its set makes the two L1s diverge.
(B) Likewise a dirty victim sent down (`store_to`) that hits the next level is not a use
    in pycachesim; the emulator's write-back is (memmodel/_hierarchy.py `_evicted`: `touch`).
(C) A dirty victim that misses the next level: pycachesim write-allocates, calling
    `Cache__load` on that level, which counts a LOAD and a MISS there and loads the line
    from the level below (a LOAD and a HIT or MISS there, possibly fills and evictions),
    then marks it dirty. The emulator installs it dirty without any fetch and counts a
    `writeback_in_misses`, never a load or store miss.
(D) Counting. pycachesim: a store miss at L1 is a LOAD and a MISS at L1 (the
    write-allocate load) and then a LOAD with a HIT or MISS at L2; a store hit counts in
    STORE only, neither HIT nor MISS; a write-back arriving at a level is one STORE there
    (plus, on a miss, the LOAD and MISS of (C)); EVICT counts dirty evictions only.
    The emulator: `store_hits`/`store_misses` at L1, the RFO is a store hit or miss at L2
    and the LLC, write-backs arriving are `writeback_in_hits`/`writeback_in_misses`,
    `dirty_writebacks` counts dirty victims. So wherever the two levels hold the same
    lines and dirty bits throughout:
        L1:      HIT == load_hits        MISS == load_misses + store_misses
                 STORE == store_hits + store_misses
        L2, L3:  HIT == load_hits + store_hits
                 MISS == load_misses + store_misses + writeback_in_misses
                 STORE == writeback_in_hits + writeback_in_misses
        all:     EVICT == dirty_writebacks   (L3: == memory writes)
    (for L3 these also need no (C) at L2: the (C) loads are L3 accesses that the
    emulator does not make).

What is asserted for mixed traces (30 % of the accesses stores, numpy seed 0, for the
sequential and strided traces; read-modify-write pairs for the random one):
* L1, always: (A) never applies, because every store touches the line the previous
  access touched (sequential: 8 accesses per line in a row; read-modify-write: the load
  just before) or misses (strided: each access is a new line). So L1 is identical:
  the L1 equalities of (D) and the same final contents.
* L2, for the sequential and strided traces: identical (equalities of (D), contents),
  with writeback_in_misses == 0 asserted as the precondition. Why (B) changes nothing:
  a dirty L1 victim x is written back when line x+512 is filled (L1 holds 512 lines),
  before the next line of x's L2 set, x+1024, arrives, and L2 keeps the last 16384
  lines, so every write-back hits (no (C)), and the touch does not reorder x against any
  other line of its set: both rank a set's lines by line number, and the LRU victim is
  the smallest. (With a 256 KiB 8-way L2, 512 sets, x+512 *is* the next line of x's
  set, filled just before the touch of x; a clean x+512 then ranks older than a dirty x
  in the emulator only, and the L2 victims and counts do differ.)
* L3, sequential and 64-byte stride: what arrives is identical (L2 is): pycachesim's L3
  LOAD == the emulator's LLC demand lookups (load/store hits + misses), STORE == its
  write-backs arriving (hits + misses), and no demand lookup hits in either (a line
  comes back only one 65536-line pass later, after more than 16 newer lines of its
  set). Its victims are not compared: an L2 victim x is written back 16384 lines after
  its fill, when 8 newer lines of its LLC set (one per 2048 lines) have arrived; the
  emulator's touch makes x more recent than them, so the emulator's LLC evicts lines
  that are still in L2 and their write-backs later miss the LLC (asserted > 0 for the
  sequential trace), while pycachesim evicts the oldest fill. Hence different LLC
  contents, EVICT and memory writes.
* Stride 4096+64: L2 and L3 never evict (1009 lines; at most 1 per set of either), so
  every level is identical, memory writes (0) included.
* Random read-modify-write: L1 identical; L2 gets the same stream (pycachesim's L2 LOAD
  == the emulator's L2 lookups, STORE == write-backs arriving) but (B) reorders L2 sets
  at random write-back hits, so L2 and L3 hits, misses and contents are not compared.
* Independent random loads and stores are not compared: (A) makes even L1 diverge.

pycachesim is driven only through its iterable interface (`load(list)`, `loadstore`):
its scalar `load(addr)`/`store(addr)` parse the address with the "I" format into a C
`long` whose upper half stays uninitialised, which yields garbage line numbers.
"""
import numpy as np
import pytest
from reference_cache import pcs_hierarchy

from emu.machine import Machine
from isa.ops import COL_ADDR, COL_DATA, COL_OP, COL_SIZE, N_COLS, Op
from isa.program import Program

MIB = 1 << 20
FOOT = 4 * MIB
L1 = (32 * 1024, 8)
L2 = (MIB, 16)
L3 = (2 * MIB, 16)
EMU_LEVELS = ("l1d", "l2", "llc")


def emu_overrides(l1=L1, l2=L2, l3=L3):
    o = {}
    for name, (size, ways) in zip(EMU_LEVELS, (l1, l2, l3)):
        o[f"cache.{name}.size_bytes"] = size
        o[f"cache.{name}.ways"] = ways
        o[f"cache.{name}.policy"] = "lru"
        o[f"cache.{name}.prefetcher"] = "none"
    o["cache.llc.inclusive"] = False
    return o


def emu_program(kinds, addrs):
    """kinds: bool array (True = store); addrs: int array. 8-byte accesses."""
    ops = np.zeros((len(addrs), N_COLS), dtype=np.int64)
    ops[:, COL_OP] = np.where(kinds, int(Op.STORE), int(Op.LOAD))
    ops[:, COL_ADDR] = addrs
    ops[:, COL_SIZE] = 8
    ops[:, COL_DATA] = -1
    return Program.from_array(ops)


def run_emu(kinds, addrs, **geo):
    m = Machine("skylake-ddr4", emu_overrides(**geo), functional=False)
    m.run(emu_program(kinds, addrs))
    return m


def run_pcs(kinds, addrs, l1=L1, l2=L2, l3=L3):
    cs, caches = pcs_hierarchy([l1, l2, l3])
    addrs = [int(a) for a in addrs]
    if not kinds.any():
        cs.load(addrs, length=8)
    else:
        cs.loadstore([((None, [a]) if k else ([a], None)) for k, a in zip(kinds, addrs)],
                     length=8)
    return cs, caches


def pcs_lines(cache):
    """pycachesim's `cached` lists every byte address held; keep one per line."""
    return {a >> 6 for a in cache.backend.cached if a & 63 == 0}


def emu_lines(m, level):
    return {line for s in m.cache_contents(level) for line in s}


# ------------------------------------------------------------------ traces
def seq_addrs():
    return np.arange(0, FOOT, 8, dtype=np.int64)


def stride_addrs(stride, passes):
    return np.tile(np.arange(0, FOOT, stride, dtype=np.int64), passes)


def random_addrs(n=200_000):
    return np.random.default_rng(0).integers(0, FOOT // 8, n, dtype=np.int64) * 8


LOAD_TRACES = {
    "sequential": seq_addrs,
    "stride64x2": lambda: stride_addrs(64, 2),
    "stride4160x4": lambda: stride_addrs(4096 + 64, 4),
    "random": random_addrs,
}


def store_mask(n, p=0.3):
    return np.random.default_rng(0).random(n) < p


# ------------------------------------------------------------------ load-only
@pytest.mark.parametrize("trace", list(LOAD_TRACES))
def test_load_only_identical(trace):
    addrs = LOAD_TRACES[trace]()
    kinds = np.zeros(len(addrs), dtype=bool)
    m = run_emu(kinds, addrs)
    _, caches = run_pcs(kinds, addrs)
    s = m.stats()["levels"]
    for name, c in zip(EMU_LEVELS, caches):
        e = s[name]
        assert (c.HIT_count, c.MISS_count) == (e["load_hits"], e["load_misses"]), name
        assert e["store_hits"] == e["store_misses"] == 0
        assert c.STORE_count == c.EVICT_count == e["dirty_writebacks"] == 0
        assert pcs_lines(c) == emu_lines(m, name), f"{name} contents"
    assert s["l1d"]["load_hits"] + s["l1d"]["load_misses"] == len(addrs)


# ------------------------------------------------------------------ mixed
def assert_same_level(m, c, name):
    """The equalities (D) of the module docstring at one level, and equal contents."""
    e = m.stats()["levels"][name]
    if name == "l1d":
        assert c.HIT_count == e["load_hits"], name
        assert c.MISS_count == e["load_misses"] + e["store_misses"], name
        assert c.STORE_count == e["store_hits"] + e["store_misses"], name
    else:
        assert c.HIT_count == e["load_hits"] + e["store_hits"], name
        assert c.MISS_count == e["load_misses"] + e["store_misses"] + \
            e["writeback_in_misses"], name
        assert c.STORE_count == e["writeback_in_hits"] + e["writeback_in_misses"], name
    assert c.EVICT_count == e["dirty_writebacks"], name
    assert pcs_lines(c) == emu_lines(m, name), f"{name} contents"


def assert_same_arrivals(m, c, name):
    """What the level above sends down is the same: demand lookups and write-backs."""
    e = m.stats()["levels"][name]
    assert c.LOAD_count == e["load_hits"] + e["load_misses"] + e["store_hits"] + \
        e["store_misses"], name
    assert c.STORE_count == e["writeback_in_hits"] + e["writeback_in_misses"], name


@pytest.mark.parametrize("trace", ["sequential", "stride64x2", "stride4160x4"])
def test_mixed_streaming(trace):
    addrs = LOAD_TRACES[trace]()
    kinds = store_mask(len(addrs))
    m = run_emu(kinds, addrs)
    _, (p1, p2, p3) = run_pcs(kinds, addrs)
    s = m.stats()["levels"]
    writes = m.stats()["media"]["dram"]["line_writes"]
    assert s["l1d"]["dirty_writebacks"] > 0
    # L1 and L2 identical; no write-back misses L2 (precondition, no (C) at L2)
    assert s["l2"]["writeback_in_misses"] == 0 and p2.LOAD_count == p1.MISS_count
    assert_same_level(m, p1, "l1d")
    assert_same_level(m, p2, "l2")
    if trace == "stride4160x4":
        assert_same_level(m, p3, "llc")
        assert p3.EVICT_count == writes == 0
    else:
        assert_same_arrivals(m, p3, "llc")
        assert p3.HIT_count == s["llc"]["load_hits"] + s["llc"]["store_hits"] == 0
        assert writes > 0 and p3.EVICT_count > 0
        if trace == "sequential":   # the divergence the docstring explains
            assert s["llc"]["writeback_in_misses"] > 0


def test_mixed_random_read_modify_write():
    addrs = np.repeat(random_addrs(), 2)
    kinds = np.tile([False, True], len(addrs) // 2)
    m = run_emu(kinds, addrs)
    _, (p1, p2, _) = run_pcs(kinds, addrs)
    s = m.stats()["levels"]
    assert s["l1d"]["store_misses"] == 0 and s["l1d"]["store_hits"] == len(addrs) // 2
    assert_same_level(m, p1, "l1d")
    assert_same_arrivals(m, p2, "l2")


# ------------------------------------------------------------------ the differences
def _tiny(ops, l2_ways=2):
    """L1 1 set x 2 ways, L2 1 set x `l2_ways`, L3 1 set x 16 ways; ops: (is_store, line).
    Returns the machine and pycachesim's three caches."""
    geo = {"l1": (128, 2), "l2": (64 * l2_ways, l2_ways), "l3": (1024, 16)}
    kinds = np.array([k for k, _ in ops], dtype=bool)
    addrs = np.array([64 * line for _, line in ops], dtype=np.int64)
    return run_emu(kinds, addrs, **geo), run_pcs(kinds, addrs, **geo)[1]


def test_difference_a_store_hit_is_a_use_only_in_the_emulator():
    """ld 1, ld 2, st 1 (hit), ld 3. Emulator: the store made 1 the MRU line, so clean 2
    is evicted. pycachesim: 1 is still LRU and is evicted dirty (EVICT 1); (D): the
    store hit is in neither HIT nor MISS."""
    m, (p1, _, _) = _tiny([(False, 1), (False, 2), (True, 1), (False, 3)])
    e = m.stats()["levels"]["l1d"]
    assert emu_lines(m, "l1d") == {1, 3} and pcs_lines(p1) == {2, 3}
    assert e["dirty_writebacks"] == 0 and p1.EVICT_count == 1
    assert (p1.HIT_count, p1.MISS_count, p1.STORE_count) == (0, 3, 1)
    assert (e["load_hits"], e["load_misses"], e["store_hits"]) == (0, 3, 1)


def test_difference_b_writeback_hit_is_a_use_only_in_the_emulator():
    """L2 4 ways. st 1: L1 [1*], L2 [1]; ld 2: L1 [1* 2], L2 [1 2]; ld 3: L2 [1 2 3],
    L1 evicts 1*, whose write-back hits L2: emulator L2 order (LRU first) [2 3 1*],
    pycachesim [1* 2 3]; ld 4: L2 full, L1 evicts 2; ld 5: L2 evicts its LRU line:
    emulator 2 (clean), pycachesim 1 (dirty, stored to L3)."""
    m, (_, p2, p3) = _tiny([(True, 1), (False, 2), (False, 3), (False, 4), (False, 5)],
                            l2_ways=4)
    e = m.stats()["levels"]["l2"]
    assert emu_lines(m, "l2") == {1, 3, 4, 5} and pcs_lines(p2) == {2, 3, 4, 5}
    assert e["writeback_in_hits"] == 1 and p2.STORE_count == 1
    assert e["dirty_writebacks"] == 0 and p2.EVICT_count == 1 and p3.STORE_count == 1
    assert m.dirty_lines("l2") == [1]


def test_difference_c_writeback_miss_loads_only_in_pycachesim():
    """st 1: L1 [1*], L2 [1], L3 [1]; ld 2: L1 [1* 2], L2 [1 2]; ld 3: L2 evicts 1
    (clean there) -> [2 3], then L1 evicts 1*, whose write-back misses L2. Emulator:
    installs 1 dirty, evicting 2 (writeback_in_misses 1, no L3 access). pycachesim:
    STORE at L2, then a LOAD and MISS at L2 and a LOAD and HIT at L3, same L2 result."""
    m, (_, p2, p3) = _tiny([(True, 1), (False, 2), (False, 3)])
    s = m.stats()["levels"]
    assert emu_lines(m, "l2") == pcs_lines(p2) == {1, 3} and m.dirty_lines("l2") == [1]
    assert s["l2"]["writeback_in_misses"] == 1 and p2.STORE_count == 1
    assert (s["l2"]["load_misses"], s["l2"]["store_misses"]) == (2, 1)
    assert p2.LOAD_count == p2.MISS_count == 4          # 3 demand + the (C) load
    assert (p3.LOAD_count, p3.HIT_count, p3.MISS_count) == (4, 1, 3)
    assert s["llc"]["load_hits"] + s["llc"]["store_hits"] == 0
    assert s["llc"]["load_misses"] + s["llc"]["store_misses"] == 3
