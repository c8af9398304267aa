"""The Machine facade stays usable at its limits (issue 34, section 4): a repeat whose N
runs could carry the clock past its limit is refused before anything changes; the
functional memory limit holds for runs as for write(); a read larger than that limit is a
size error, not numpy's MemoryError."""
import numpy as np
import pytest

from emu import Machine
from emu.results import MemoryLimitFault
from isa.program import Program, ProgramError
from memmodel import memory as mm
from memmodel.sections.memory import MemoryLimit

PAGE = mm.PAGE_BYTES


def _body(base):
    p = Program()
    with p.function("body"):   # a site new to the machine: a refused call adds no row
        p.load(base).store(base + 64, b"\1" * 8)
    return p


def _used(base):
    m = Machine("skylake-ddr4")
    m.write(base, np.arange(256, dtype=np.uint8))
    m.run(Program().load(base + 128))
    return m


@pytest.mark.parametrize("call", ["run", "run_rounds"])
def test_a_refused_repeat_leaves_the_machine_as_it_was(call):
    m = _used(0x10000)
    twin = _used(0x10000)
    before = (m.state_hash(), m.read(0x10000, 256), m.cycles, list(m.site_names), m.stats())
    p = _body(0x10000)
    with pytest.raises(ProgramError, match="clock's limit"):
        if call == "run":
            m.run(p, repeat=2**56)
        else:
            m.run_rounds([p, p], 2**56)
    assert (m.state_hash(), m.read(0x10000, 256), m.cycles, list(m.site_names),
            m.stats()) == before
    # and the next run is the one a machine that never saw the refused call makes
    assert m.run(p, repeat=3) == twin.run(p, repeat=3)
    assert m.state_hash() == twin.state_hash()


def test_the_memory_limit_holds_for_runs_as_for_writes():
    base = 0x100000
    m = Machine("skylake-ddr4", memory_limit_bytes=8 * 1024)   # below what a machine holds
    with pytest.raises(MemoryLimit):
        m.write(base, b"x")
    with pytest.raises(MemoryLimitFault):
        m.run(Program().store(base, b"\1" * 8))
    # one type names the limit for both: the fault is the MemoryLimit write() raises
    with pytest.raises(MemoryLimit):
        m.run(Program().store(base, b"\1" * 8))
    # room for two pages beside the RESERVED_FRAMES every machine holds: a third is refused
    m = Machine("skylake-ddr4", memory_limit_bytes=(mm.RESERVED_FRAMES + 2) * PAGE)
    m.run(Program().store(base, b"\1" * 8).store(base + PAGE, b"\2" * 8))
    with pytest.raises(MemoryLimitFault):
        m.run(Program().store(base + 2 * PAGE, b"\3" * 8))
    with pytest.raises(MemoryLimit):
        m.write(base + 3 * PAGE, b"x")
    assert m.read(base, 8) == b"\1" * 8 and m.read(base + PAGE, 8) == b"\2" * 8
    m.run(Program().store(base + 8, b"\4" * 8))   # pages it holds: still usable
    assert m.read(base + 8, 8) == b"\4" * 8


def test_a_read_beyond_the_memory_limit_is_a_size_error():
    m = Machine("skylake-ddr4", memory_limit_bytes=1 << 20)
    with pytest.raises(ValueError, match="memory limit"):
        m.read(0, 2 << 20)
    m = Machine("skylake-ddr4", regions=[{"name": "big", "base": 0, "size_bytes": 1 << 41,
                                          "media": "dram", "node": 0}])
    with pytest.raises(ValueError, match="memory limit"):
        m.read(0, 1 << 40)
    assert m.read(0, 8) == bytes(8)
