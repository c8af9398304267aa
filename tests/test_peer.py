"""PEER_WRITE: another core's write, and this core's next access as a cache-to-cache
transfer. Expected cycles come from the profile by hand (skylake-ddr4: L1 hit 4 cycles,
LLC hit 70, peer_hitm_ns 49 at 2.5 GHz = 122.5 -> 122 cycles (round half to even),
DRAM 90 ns = 225 cycles)."""
import tomllib
from pathlib import Path

import pytest

from emu import Machine
from emu.scenarios.common import with_user_region
from isa import Program
from isa.program import ProgramError
from memmodel.profile import load_profile

PROFILES = Path(__file__).resolve().parent.parent / "memmodel" / "profiles"

NO_PF = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}
A = 0x10000


def machine(profile="skylake-ddr4", **extra):
    return Machine(profile, {**NO_PF, **extra})


def hitm_cycles(m):
    return int(round(m.profile.get("cache.llc.peer_hitm_ns") * m.freq_ghz))


def cycles(m, build):
    p = Program()
    build(p)
    return m.run(p).cycles


def test_a_line_another_core_wrote_costs_a_transfer_then_hits_l1():
    m = machine()
    cycles(m, lambda p: p.load(A))
    assert cycles(m, lambda p: p.load(A)) == 4
    assert cycles(m, lambda p: p.peer_write(A, b"PEERPEER")) == 0   # no issue slot here
    assert cycles(m, lambda p: p.load(A + 8)) == hitm_cycles(m) == 122
    assert cycles(m, lambda p: p.load(A + 16)) == 4
    lv = m.stats()["levels"]
    assert lv["llc"]["peer_transfers"] == 1
    assert lv["l1d"]["misses"] == lv["l2"]["misses"] == 2    # the first load and after the write
    assert m.read(A, 8) == b"PEERPEER"


def test_a_transfer_costs_at_least_an_llc_hit():
    m = machine(**{"cache.llc.peer_hitm_ns": 1.0})
    cycles(m, lambda p: p.peer_write(A, size=8, value=7))
    assert cycles(m, lambda p: p.load(A)) == 70      # max(LLC hit 70, 2.5 -> 2 cycles)


def test_a_line_never_cached_here_comes_from_the_writer_not_from_dram():
    m = machine()
    cycles(m, lambda p: p.peer_write(A, size=8, value=0x1122334455667788))
    assert cycles(m, lambda p: p.load(A)) == hitm_cycles(m)
    assert m.stats()["media"]["dram"]["reads"] == 0
    assert m.read(A, 8) == (0x1122334455667788).to_bytes(8, "little")


def test_our_dirty_copy_goes_to_the_writer_without_a_memory_write():
    m = machine()
    cycles(m, lambda p: p.store(A, b"ourbytes"))
    cycles(m, lambda p: p.peer_write(A + 8, b"theirs!!"))
    assert m.stats()["media"]["dram"]["writes"] == 0
    assert m.read(A, 16) == b"ourbytestheirs!!"
    assert cycles(m, lambda p: p.store(A, b"again...")) == hitm_cycles(m)
    assert m.stats()["levels"]["llc"]["peer_transfers"] == 1


def test_a_write_across_two_lines_takes_both():
    m = machine()
    cycles(m, lambda p: p.load(A).load(A + 64))
    cycles(m, lambda p: p.peer_write(A + 60, b"12345678"))
    cycles(m, lambda p: p.load(A).load(A + 64))
    assert m.stats()["levels"]["llc"]["peer_transfers"] == 2
    assert m.read(A + 60, 8) == b"12345678"


def test_smap_does_not_apply_to_another_cores_write():
    values = load_profile("skylake-ddr4").values
    m = Machine("skylake-ddr4", dict(NO_PF), smap=True, regions=with_user_region(values))
    user = m.regions["user0"]["base"]
    cycles(m, lambda p: p.peer_write(user, b"guest!!!"))
    assert m.read(user, 8) == b"guest!!!"


def test_bad_peer_writes_are_refused():
    with pytest.raises(ProgramError, match="size 65"):
        Program().peer_write(A, bytes(65))
    # a hierarchy of one level has no private level for the writer to take the line from
    raw = tomllib.loads((PROFILES / "skylake-ddr4.toml").read_text())
    l1, llc = raw["cache"]["l1d"], raw["cache"]["llc"]
    raw["cache"] = {"l1d": {**l1, "inclusive": llc["inclusive"],
                            "peer_hitm_ns": llc["peer_hitm_ns"]}}
    m = Machine(raw, {"cache.l1d.prefetcher": "none"})
    with pytest.raises(ValueError, match="one level"):
        m.run(Program().peer_write(A, b"x"))
