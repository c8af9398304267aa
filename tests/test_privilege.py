"""Privilege levels and SMAP (issue 4 §1): precise faults, STAC/CLAC semantics and cost."""
import pytest

from emu import Machine, PrivilegeFault, SmapFault
from isa import Program

GIB = 1 << 30
REGIONS = [
    {"name": "kern", "base": 0, "size_bytes": GIB, "media": "dram", "node": 0},
    {"name": "user", "base": GIB, "size_bytes": GIB, "media": "dram", "node": 0,
     "privilege": "user"},
]
USER = GIB + 0x1000


def machine(smap, mode="kernel"):
    return Machine("skylake-ddr4", regions=REGIONS, smap=smap, mode=mode)


@pytest.mark.parametrize("access", ["load", "store", "copy_from", "copy_to"])
def test_kernel_access_to_user_page_without_stac_faults_with_smap(access):
    m = machine(smap=True)
    p = Program().site("copy").store(0x40, b"k")
    {"load": lambda: p.load(USER),
     "store": lambda: p.store(USER, b"u"),
     "copy_from": lambda: p.rep_movsb(0x2000, USER, 128),
     "copy_to": lambda: p.rep_movsb(USER, 0x2000, 128)}[access]()
    with pytest.raises(SmapFault) as e:
        m.run(p)
    assert e.value.op_index == 2 and e.value.addr == USER and e.value.site == "copy"
    assert m.read(0x40, 1) == b"k"          # state up to the fault is kept


def test_the_same_access_passes_with_smap_off_or_inside_stac_clac():
    machine(smap=False).run(Program().load(USER).store(USER, b"u"))
    m = machine(smap=True)
    m.run(Program().stac().load(USER).store(USER, b"u").clac())
    assert m.read(USER, 1) == b"u"
    with pytest.raises(SmapFault):          # after CLAC the window is closed again
        m.run(Program().load(USER))


def test_user_mode_access_to_a_supervisor_page_faults():
    m = machine(smap=True, mode="user")
    m.run(Program().store(USER, b"ok"))     # its own pages are fine
    with pytest.raises(PrivilegeFault) as e:
        m.run(Program().load(USER).load(0x100))
    assert e.value.op_index == 1 and e.value.addr == 0x100


def test_stac_clac_cost_cycles_only_with_smap_on():
    instr = machine(smap=True).profile.values["instr"]
    on = machine(smap=True).run(Program().stac().clac()).cycles
    off = machine(smap=False).run(Program().stac().clac()).cycles
    assert on == instr["stac_cycles"] + instr["clac_cycles"]
    assert off == 0                         # the kernel patches them to no-ops
