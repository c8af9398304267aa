"""kernels/uaccess.py: each primitive's op sequence (docs/kernel-paths.md §4.2), its cost with
SMAP on and off, and the kernel's return values for bad user addresses (-EFAULT, bytes not
copied, the zeroed tail of copy_from_user: include/linux/uaccess.h, lib/usercopy.c)."""
import numpy as np
import pytest

from emu import Machine, SmapFault
from isa import EFAULT, Op, Program
from kernels import uaccess as ua

K, U, U_SIZE = 0x0, 1 << 24, 1 << 20
REGIONS = [dict(name="kernel", base=K, size_bytes=1 << 24, media="dram", node=0),
           dict(name="user", base=U, size_bytes=U_SIZE, media="dram", node=0, privilege="user")]
PATTERN = (np.arange(U_SIZE, dtype=np.int64) * 7 % 251).astype(np.uint8)


def machine(smap=True):
    m = Machine("skylake-ddr4", regions=REGIONS, smap=smap)
    m.write(U, PATTERN)
    return m


def names(p):
    return [Op(o).name for o in p.ops[:, 0]]


SEQUENCES = [
    (lambda p: ua.__get_user(p, U, 8), ["STAC", "LFENCE", "LOAD", "CLAC"]),
    (lambda p: ua.get_user(p, U, 8), ["BRANCH", "INDEX_MASK", "STAC", "LOAD", "CLAC"]),
    (lambda p: ua.__put_user(p, U, 5, 4), ["STAC", "STORE", "CLAC"]),
    (lambda p: ua.put_user(p, U, 5, 4), ["BRANCH", "STAC", "STORE", "CLAC"]),
    (lambda p: ua.__copy_from_user(p, 0x1000, U, 16, const=True),
     ["STAC", "LFENCE", "CAREFUL_COPY", "CLAC"]),
    (lambda p: ua.__copy_to_user(p, U, 0x1000, 16, const=True), ["STAC", "CAREFUL_COPY", "CLAC"]),
    (lambda p: ua.__copy_from_user(p, 0x1000, U, 40), ["STAC", "CAREFUL_COPY", "CLAC"]),
    (lambda p: ua.__copy_from_user(p, 0x1000, U, 4096), ["STAC", "REP_MOVSB", "CLAC"]),
    (lambda p: ua.__copy_from_user(p, 0x1000, U, 4096, erms=False),
     ["STAC", "CAREFUL_COPY", "CLAC"]),
    (lambda p: ua.raw_copy_to_user(p, U, 0x1000, 4096), ["STAC", "REP_MOVSB", "CLAC"]),
    (lambda p: ua.copy_from_user(p, 0x1000, U, 4096), ["BRANCH", "STAC", "REP_MOVSB", "CLAC"]),
    (lambda p: ua.copy_to_user(p, U, 0x1000, 100), ["BRANCH", "STAC", "REP_MOVSB", "CLAC"]),
]


@pytest.mark.parametrize("emit,expected", SEQUENCES)
def test_op_sequence_and_smap_cost(emit, expected):
    p = Program()
    emit(p)
    assert names(p) == expected
    # SMAP off: the kernel patches STAC/CLAC out. Issue is delayed by exactly their cost;
    # the end of the run by that much once later work outlasts the accesses in flight.
    p.work(1000)
    on, off = machine(True), machine(False)
    c_on, c_off = on.run(p).cycles, off.run(p).cycles
    stac, clac = on.profile.get("instr.stac_cycles"), on.profile.get("instr.clac_cycles")
    assert c_on - c_off == stac + clac


def test_checked_forms_guard_exactly_the_access():
    p = Program()
    ua.get_user(p, U, 8)
    assert p.ops[0, 5] == len(p) - 1   # the branch's body: everything after it


def test_get_and_put_user_values():
    m = machine()
    p = Program()
    ok = ua.get_user(p, U + 8, 8)
    r_ok = ua.__get_user(p, U + 16, 4)
    w_ok = ua.put_user(p, U + 64, 0x1122334455667788, 8)
    unmapped = ua.__get_user(p, U + U_SIZE, 8)            # beyond the user mapping
    w_unmapped = ua.__put_user(p, U + U_SIZE + 8, 1, 8)
    kernel_limit = ua.get_user(p, ua.TASK_SIZE_MAX - 4, 8)  # access_ok refuses
    res = m.run(p)
    assert [res.ret(r) for r in (ok, r_ok, w_ok)] == [0, 0, 0]
    assert res.ret(unmapped) == res.ret(w_unmapped) == res.ret(kernel_limit) == -EFAULT
    assert m.read(U + 64, 8) == (0x1122334455667788).to_bytes(8, "little")


def test_copy_from_user_partial_copy_returns_bytes_not_copied_and_zeroes_the_tail():
    m = machine()
    m.write(0x2000, b"\xee" * 300)
    p = Program()
    src = U + U_SIZE - 100                # the last 100 bytes of the user mapping
    r = ua.copy_from_user(p, 0x2000, src, 300)
    res = m.run(p)
    assert res.ret(r) == 200
    got = m.read(0x2000, 300)
    assert got[:100] == PATTERN[-100:].tobytes() and got[100:] == bytes(200)


def test_copy_to_user_partial_copy_stops_at_the_fault():
    m = machine()
    m.write(0x3000, bytes(range(256)))
    p = Program()
    dst = U + U_SIZE - 64
    r = ua.copy_to_user(p, dst, 0x3000, 256)
    res = m.run(p)
    assert res.ret(r) == 256 - 64
    assert m.read(dst, 64) == bytes(range(64))


def test_copy_refused_by_access_ok_copies_nothing():
    m = machine()
    m.write(0x4000, b"\xaa" * 32)
    p = Program()
    r1 = ua.copy_from_user(p, 0x4000, ua.TASK_SIZE_MAX - 16, 32)
    r2 = ua.copy_to_user(p, ua.TASK_SIZE_MAX - 8, 0x4000, 32)
    res = m.run(p)
    assert res.ret(r1) == 32 and res.ret(r2) == 32
    assert m.read(0x4000, 32) == bytes(32)   # copy_from_user zeroed its destination


def test_whole_copies_are_exact():
    m = machine()
    p = Program()
    rets = [ua.copy_from_user(p, 0x10000 + 8192 * k, U + 13 * k + 1, n)
            for k, n in enumerate((1, 7, 16, 63, 64, 100, 4096, 3 * 4096 - 3))]
    res = m.run(p)
    for k, (r, n) in enumerate(zip(rets, (1, 7, 16, 63, 64, 100, 4096, 3 * 4096 - 3))):
        assert res.ret(r) == 0
        assert m.read(0x10000 + 8192 * k, n) == PATTERN[13 * k + 1:13 * k + 1 + n].tobytes()


def test_kernel_access_to_user_memory_needs_stac_only_with_smap():
    p = Program().load(U, 8)
    with pytest.raises(SmapFault):
        machine(True).run(p)
    machine(False).run(p)
    machine(True).run(Program().stac().load(U, 8).clac())

