"""Machine(regions=...) is checked by the profile's region schema (memmodel.profile.
check_regions), as strictly as a profile's [[region]]: every bad memory map raises
ProfileError naming the region's index and the key, before any state is built."""
import pytest

from emu import Machine, PrivilegeFault
from isa import Program
from memmodel.profile import ProfileError

MIB = 1 << 20
GOOD = [dict(name="kern", base=0, size_bytes=16 * MIB, media="dram", node=0),
        dict(name="user", base=16 * MIB, size_bytes=MIB, media="dram", node=0, privilege="user")]


def _regions(i, **changes):
    """GOOD with region i changed: a value of None drops the key."""
    out = [dict(r) for r in GOOD]
    for key, val in changes.items():
        if val is None:
            del out[i][key]
        else:
            out[i][key] = val
    return out


BAD = {
    "unknown key": (_regions(0, size_bytes=None, sise_bytes=16 * MIB),
                    "regions[0].sise_bytes: unknown key"),
    "bad privilege": (_regions(1, privilege="User"),
                      "regions[1].privilege: 'User' is not one of 'user', 'supervisor'"),
    "missing key": (_regions(1, node=None), "regions[1].node: missing"),
    "wrong type": (_regions(0, base="0"), "regions[0].base: must be an integer, got '0'"),
    "unknown media": (_regions(0, media="nvme"), "regions[0].media: 'nvme' is not one of 'dram'"),
    "misaligned base": (_regions(1, base=16 * MIB + 64),
                        "regions[1].base: 0x1000040 is not a multiple of 4096"),
    "misaligned size": (_regions(1, size_bytes=MIB + 512),
                        "regions[1].size_bytes: 0x100200 is not a multiple of 4096"),
    "too small": (_regions(1, size_bytes=0), "regions[1].size_bytes: must be >= 4096, got 0"),
    "overlap": (_regions(1, base=16 * MIB - 4096),
                "regions[0] 'kern' and regions[1] 'user' overlap at 0xfff000"),
    "same name": (_regions(1, name="kern"),
                  "regions[1].name: 'kern' is already the name of regions[0]"),
    "empty": ([], "regions: needs a list of at least one region"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_regions_name_region_and_key(case):
    regions, needle = BAD[case]
    with pytest.raises(ProfileError) as info:
        Machine("skylake-ddr4", regions=regions)
    assert needle in str(info.value)


def test_good_regions_build_the_memory_map():
    m = Machine("skylake-ddr4", regions=GOOD, mode="user")
    assert m.regions["kern"]["privilege"] == "supervisor"   # the default
    assert m.regions["user"]["privilege"] == "user"
    assert GOOD[0] == dict(name="kern", base=0, size_bytes=16 * MIB, media="dram", node=0)
    assert m.run(Program().load(16 * MIB + 64)).ops == 1
    with pytest.raises(PrivilegeFault):
        m.run(Program().load(64))


def test_region_lookup_matches_the_memory_map_in_any_order():
    """memory.find_region tries the region found last first: whatever the order of the
    addresses (runs in one region, jumps, gaps, beyond the map), it answers as a search of
    the map written here does."""
    import numpy as np

    from memmodel import memory as mm
    regions = GOOD + [dict(name="far", base=32 * MIB, size_bytes=MIB, media="dram", node=0),
                      dict(name="top", base=64 * MIB, size_bytes=16 * MIB, media="dram", node=0)]
    m = Machine("skylake-ddr4", regions=regions)
    spans = sorted((r["base"], r["base"] + r["size_bytes"]) for r in regions)
    rng = np.random.default_rng(3)
    addrs = list(rng.integers(0, 96 * MIB, 400))
    addrs += [16 * MIB - 1, 16 * MIB, 17 * MIB - 1, 17 * MIB, 32 * MIB, 80 * MIB, 80 * MIB - 1]
    addrs += [a + k for a in addrs[:50] for k in (0, 8, 4096)]   # runs within a region
    for a in addrs:
        want = next((i for i, (lo, hi) in enumerate(spans) if lo <= a < hi), -1)
        assert mm.find_region(m.S, np.int64(a)) == want, hex(a)
