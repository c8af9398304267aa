"""The DAX read path with machine-check-safe copies (docs/kernel-paths.md §1.5, §3): the bytes the
file holds arrive in the user buffer, the copy is the one the platform's static key picks,
inside access_ok's branch and STAC/CLAC, and poison gives a short read."""
import errno
import json

import numpy as np
import pytest

from emu.studies.cli import main
from emu.studies.scenarios.dax_read_copy_mc import VARIANTS, poison_check
from emu.studies.scenarios.dax_write_usercopy import dax_machine
from isa import Op, Program
from kernels.copy_mc import CopyMc
from kernels.iov_iter import copied
from kernels.read_write import ksys_pread64

FILE = 4 << 20
DATA = np.random.default_rng(4).integers(0, 256, FILE, dtype=np.uint8)


def rig(copy_mc=CopyMc()):
    m, (f,), user, _ = dax_machine("cascadelake-optane", {}, "dev", False, FILE, copy_mc)
    start = f.dax.pmem.virt_addr + f.dax.pmem.data_offset
    m.write(start, DATA)
    return m, f, user["base"], [(user["base"], user["base"] + user["size_bytes"])]


CASES = [(0, 1), (1, 1), (4095, 2), (3, 63), (63, 65), (4093, 4099), (7, 3 * 4096 - 7),
         (0, 3 * 4096), (100, 3 * 4096)]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_bytes_read_are_the_files(variant):
    m, f, buf, ranges = rig(VARIANTS[variant])
    p = Program()
    iters = []
    for k, (off, n) in enumerate(CASES):
        pos = 100_000 * k + off
        ret, it = ksys_pread64(p, f, buf + 16384 * k + off % 7, n, pos, ranges)
        assert ret == n
        iters.append(it)
    res = m.run(p)
    for k, ((off, n), it) in enumerate(zip(CASES, iters)):
        pos = 100_000 * k + off
        assert copied(res, it) == n
        assert m.read(buf + 16384 * k + off % 7, n) == DATA[pos:pos + n].tobytes(), (off, n)


@pytest.mark.parametrize("variant,copies", [("fragile", ["CAREFUL_COPY"]),
                                            ("generic", ["REP_MOVSB"]),
                                            ("fragile+generic-bug", ["CAREFUL_COPY", "REP_MOVSB"])])
def test_copy_out_is_access_ok_then_stac_copy_clac(variant, copies):
    m, f, buf, ranges = rig(VARIANTS[variant])
    p = Program()
    ksys_pread64(p, f, buf, 8192, 0, ranges)
    ops = [Op(o).name for o in p.ops[:, 0] if o != Op.SITE]
    i = ops.index("STAC")
    assert ops[i - 1] == "BRANCH" and ops[i + 1:i + 2 + len(copies)] == copies + ["CLAC"]
    assert ops.count("STAC") == 1


def test_read_past_the_end_of_the_file_returns_what_is_there():
    m, f, buf, ranges = rig()
    p = Program()
    ret, it = ksys_pread64(p, f, buf, 8192, FILE - 100, ranges)
    assert ret == 100
    assert ksys_pread64(p, f, buf, 10, FILE, ranges)[0] == 0
    assert ksys_pread64(p, f, 1 << 46, 10, 0, ranges)[0] == -errno.EFAULT
    assert ksys_pread64(p, f, buf, 10, -1, ranges)[0] == -errno.EINVAL
    m.run(p)
    assert m.read(buf, 100) == DATA[-100:].tobytes()


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_poison_makes_a_short_read_with_the_data_before_it(variant):
    r = poison_check("cascadelake-optane", {}, variant, 65536, 3 * 65536 + 1000, FILE)
    assert r["read_returned"] == 1000 // 64 * 64 == r["bytes_before_poisoned_line"]
    assert r["data_intact"]
    assert "unrecoverable machine check" in r["plain_memcpy"]


def test_scenario_json_names(capsys):
    assert main(["run", "dax-read-copy-mc", "--ios", "2", "--bs", "65536", "--jobs", "4",
                 "--file-size", str(1 << 20), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scenario"] == "dax-read-copy-mc"
    assert set(out["variants"]) == {"fragile", "generic", "fragile+generic-bug"}
    v = out["variants"]
    assert all(d["iops"] > 0 for d in v.values())
    # the bug variant copies every block twice: it cannot be faster
    assert v["fragile+generic-bug"]["iops"] < v["fragile"]["iops"]
    assert main(["run", "dax-read-copy-mc", "--ios", "1", "--bs", "65536",
                 "--file-size", str(1 << 20), "--poison", str(2 << 20)]) == 2


def test_read_access_ok_is_a_constant_compare_then_the_stack_set_up():
    # v5.10 uaccess.h: access_ok compares with TASK_SIZE_MAX (no set_fs, no load); then
    # new_sync_read stores the iovec, the kiocb and the iov_iter, and at the end *ppos
    m, f, buf, ranges = rig()
    p = Program()
    ksys_pread64(p, f, buf, 4096, 0, ranges)
    ops = [Op(o).name for o in p.ops[:, 0] if o != Op.SITE]
    assert ops[:4] == ["BRANCH", "STORE", "STORE", "STORE"] and ops[-1] == "STORE"


def test_read_of_a_hole_zero_fills_the_buffer():
    # fs/dax.c dax_iomap_actor: a read of a hole returns iov_iter_zero() -> clear_user
    m, f, buf, ranges = rig()
    f.size = FILE + 8192                  # past the file's one extent: a hole up to i_size
    m.write(buf, b"\xff" * 300)
    p = Program()
    ret, it = ksys_pread64(p, f, buf, 300, FILE - 100, ranges)
    assert ret == 300
    ops = [Op(o).name for o in p.ops[:, 0] if o != Op.SITE]
    assert ops.count("STAC") == 2 and ops.count("CLAC") == 2    # copy_mc_to_user, clear_user
    res = m.run(p)
    assert copied(res, it) == 300
    assert m.read(buf, 300) == DATA[-100:].tobytes() + bytes(200)
