"""Time-translation invariance: a machine moved along its clocks (emu.timeshift) behaves
exactly as the original, moved by the same constants. What fast-forwarding repeated work
rests on; a clock value the declarations miss, or any use of an absolute time, breaks it."""
import copy

import numpy as np
import pytest

from emu import Machine, timeshift
from isa import Program
from isa.ops import Op
from memmodel.sections.cache import clock_of_level

CONFIGS = [
    ("skylake-ddr4", {}),
    ("cascadelake-optane", {}),
    ("haswell-nvdimm-n", {}),
    ("skylake-ddr4", {"cache.l1d.policy": "plru", "cache.l2.policy": "fifo",
                      "cache.llc.policy": "random", "cache.l1d.size_bytes": 2048,
                      "cache.l1d.ways": 4, "cache.l2.size_bytes": 16384, "cache.l2.ways": 8}),
]


def _program(base, pmem, seed):
    """Every kind of op over a few MiB, in DRAM and in a second region (pmem where there is
    one): misses, prefetch streams, WC buffers, flushes, fences, copies, WORK."""
    rng = np.random.default_rng(seed)
    p = Program()
    p.loads(base + rng.integers(0, 1 << 22, 3000) // 8 * 8)
    for i in range(1500):
        a = (pmem if i % 3 == 0 else base) + int(rng.integers(0, 1 << 20)) // 8 * 8
        k = int(rng.integers(0, 12))
        if k == 0:
            p.load(a, dependent=True)
        elif k == 1:
            p.store(a, b"abcdefgh")
        elif k == 2:
            p.movnt(a, b"q" * 8)
        elif k == 3:
            p.clflush(a)
        elif k == 4:
            p.clwb(a)
        elif k == 5:
            p.sfence()
        elif k == 6:
            p.lfence() if i % 2 else p.mfence()
        elif k == 7:
            p.rep_movsb(base + (1 << 21) + (a & 0xFFFF), a, int(rng.integers(1, 6000)))
        elif k == 8:
            p.nt_copy(pmem + (1 << 21) + (a & 0xFFFF), a, int(rng.integers(1, 3000)))
        elif k == 9:
            p.flush_range(a, int(rng.integers(1, 800)), Op.CLWB)
        elif k == 10:
            p.work(int(rng.integers(0, 400)))
        else:
            p.lock_rmw(a, b"12345678")
    return p


@pytest.mark.parametrize("profile, overrides", CONFIGS)
def test_a_shifted_machine_runs_as_the_original_shifted(profile, overrides):
    a = Machine(profile, overrides, smap=True)
    regions = list(a.regions.values())
    base = regions[0]["base"]
    other = next((r for r in regions if a.profile.values["media"][r["media"]]["kind"] != "dram"),
                 regions[-1])["base"]
    a.run(_program(base, other, 1))
    b = copy.deepcopy(a)
    deltas = {"cycles": 987_654_321, "uops": 123_457, "loads": 54_321, "mem": 777,
              "stream": 4_321, **{clock_of_level(i): 10_007 * (i + 1)
                                  for i in range(len(a.level_names))}}
    timeshift.shift(b, deltas)
    ra, rb = a.run(_program(base, other, 2)), b.run(_program(base, other, 2))
    assert ra.cycles == rb.cycles
    sa, sb = a.stats(), b.stats()
    assert sb["cycles"] == sa["cycles"] + deltas["cycles"]
    for k in ("levels", "media", "regions", "sites"):
        assert sa[k] == sb[k], k
    timeshift.shift(a, deltas)
    assert np.array_equal(a.S, b.S)
    assert a.read(base, 1 << 16) == b.read(base, 1 << 16)


def test_every_clock_field_moves():
    # a shift of one clock moves exactly its fields: nothing else in the state changes
    m = Machine("cascadelake-optane")
    before = m.S.copy()
    timeshift.shift(m, {"uops": 5})
    changed = np.flatnonzero(m.S != before)
    expected = np.sort(timeshift.fields(m)[("uops", False)])
    assert np.array_equal(changed, expected)
