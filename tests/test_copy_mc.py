"""Poison and the machine-check-safe copies (kernels/copy_mc.py, docs/kernel-paths.md §3).

Kernel behaviour: copy_mc_* return the bytes not copied when a load consumes poison, with
everything before the poisoned line copied; a plain copy that consumes poison is an
unrecoverable machine check; the fragile static key picks the 8-byte careful loop, else
ERMS picks rep movsb."""
import numpy as np
import pytest

from emu import Machine, MachineCheck
from isa import Op, Program
from kernels import copy_mc as mc

SRC, DST, N = 0x100000, 0x200000, 3 * 4096
DATA = (np.arange(N, dtype=np.int64) * 13 % 256).astype(np.uint8)


def machine(profile="cascadelake-optane"):
    m = Machine(profile)
    base = m.regions[[n for n in m.regions if m.regions[n]["media"] == "optane"][0]]["base"] \
        if profile == "cascadelake-optane" else 0
    m.write(base + SRC, DATA)
    return m, base


def names(p):
    return [Op(o).name for o in p.ops[:, 0]]


@pytest.mark.parametrize("fragile,erms,bug,expected", [
    (True, True, False, ["STAC", "CAREFUL_COPY", "CLAC"]),
    (False, True, False, ["STAC", "REP_MOVSB", "CLAC"]),
    (True, True, True, ["STAC", "CAREFUL_COPY", "REP_MOVSB", "CLAC"]),
    (False, False, False, ["STAC", "CAREFUL_COPY", "CLAC"]),   # copy_user_generic fallback
])
def test_copy_mc_to_user_choice(fragile, erms, bug, expected):
    p = Program()
    mc.copy_mc_to_user(p, DST, SRC, 100, fragile_key=fragile, erms=erms, bug=bug)
    assert names(p) == expected


@pytest.mark.parametrize("fragile", [True, False])
@pytest.mark.parametrize("src_off,poison_off", [(0, 1000), (10, 4096 + 64), (3, 5)])
def test_poison_gives_bytes_not_copied_and_keeps_the_data_before_it(fragile, src_off, poison_off):
    m, base = machine()
    m.write(base + DST, b"\x77" * N)
    m.poison(base + SRC + poison_off)
    p = Program()
    n = N - src_off
    r = mc.copy_mc_to_kernel(p, base + DST, base + SRC + src_off, n, fragile_key=fragile)
    res = m.run(p)
    line = (SRC + poison_off) // 64 * 64 - SRC      # the poisoned line's offset in the source
    copied = max(line - src_off, 0)
    assert res.ret(r) == n - copied
    assert m.read(base + DST, copied) == DATA[src_off:src_off + copied].tobytes()
    assert m.read(base + DST + copied, n - copied) == b"\x77" * (n - copied)   # untouched


def test_plain_copy_or_load_of_poison_is_an_unrecoverable_machine_check():
    m, base = machine()
    bad = base + SRC + 2 * 4096 + 128
    m.poison(bad)
    with pytest.raises(MachineCheck) as e:
        m.run(Program().site("memcpy").rep_movsb(base + DST, base + SRC, N))
    assert e.value.addr == bad and e.value.site == "memcpy"
    with pytest.raises(MachineCheck):
        m.run(Program().load(bad + 8, 8))
    m.run(Program().load(bad - 64, 8))   # the line before is fine


def test_machine_check_costs_the_media_read_and_the_handler():
    m, base = machine()
    m.poison(base + SRC)
    p = Program()
    r = mc.copy_mc_fragile(p, base + DST, base + SRC, 64)
    res = m.run(p)
    read_cycles = m.profile.get("media.optane.read_latency_ns") * m.freq_ghz
    assert res.ret(r) == 64
    assert res.cycles >= m.profile.get("instr.machine_check_cycles") + read_cycles


def test_healed_line_reads_normally():
    m, base = machine()
    m.poison(base + SRC + 64)
    m.poison(base + SRC + 64, on=False)
    p = Program()
    r = mc.copy_mc_to_kernel(p, base + DST, base + SRC, 4096)
    assert m.run(p).ret(r) == 0
    assert m.read(base + DST, 4096) == DATA[:4096].tobytes()


def test_bug_variant_copies_twice():
    m, base = machine()
    p1, p2 = Program(), Program()
    mc.copy_mc_to_user(p1, base + DST, base + SRC, 4096, fragile_key=True)
    mc.copy_mc_to_user(p2, base + DST, base + SRC, 4096, fragile_key=True, bug=True)
    one = Machine("cascadelake-optane").run(p1)
    two = Machine("cascadelake-optane").run(p2)
    assert two.cycles > one.cycles
    assert sum(p2.ops[:, 2]) == 2 * sum(p1.ops[:, 2])


def test_poisoning_a_user_page_needs_no_stac():
    regions = [dict(name="k", base=0, size_bytes=1 << 24, media="dram", node=0),
               dict(name="u", base=1 << 24, size_bytes=1 << 20, media="dram", node=0,
                    privilege="user")]
    for mode in ("kernel", "user"):
        m = Machine("skylake-ddr4", regions=regions, smap=True, mode=mode)
        m.poison((1 << 24) + 640)
        assert m.mode == mode
        with pytest.raises(MachineCheck):
            m.run(Program().stac().load((1 << 24) + 640).clac() if mode == "kernel"
                  else Program().load((1 << 24) + 640))
