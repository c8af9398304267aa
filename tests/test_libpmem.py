"""libpmem persist paths: the op sequence of docs/kernel-paths.md §6, and that every byte copied
is in the persistence domain after the final drain (Machine.crash)."""
import numpy as np
import pytest

from emu import Machine
from isa import Op, Program
from isa.ops import COL_IMM, COL_OP, COL_SIZE
from kernels.libpmem import Pmem, memcpy_then_persist, pmem_memcpy_persist
from memmodel.profile import load_profile


def ops_of(p):
    rows = p.ops
    return [(Op(int(r[COL_OP])).name, int(r[COL_SIZE]),
             Op(int(r[COL_IMM])).name if r[COL_OP] == Op.FLUSH_RANGE else None) for r in rows]


def test_flush_instruction_follows_the_cpu():
    assert Pmem.for_profile(load_profile("cascadelake-optane").values).flush == Op.CLWB
    assert Pmem.for_profile(load_profile("haswell-nvdimm-n").values).flush == Op.CLFLUSH


def test_nt_path_op_sequence_with_wc_workaround():
    lib = Pmem(flush=Op.CLWB)
    p = Program()
    pmem_memcpy_persist(p, lib, 0x1000 + 8, 0x9000, 2000)
    # head 56 B cached + CLWB; 1944 left: 768 NT, fence, 768 NT, fence, 384 NT (6 lines),
    # tail 24 B (not 4/8/16/32) cached + CLWB; then the drain
    assert ops_of(p) == [
        ("CAREFUL_COPY", 56, None), ("FLUSH_RANGE", 56, "CLWB"),
        ("NT_COPY", 768, None), ("SFENCE", 0, None),
        ("NT_COPY", 768, None), ("SFENCE", 0, None),
        ("NT_COPY", 384, None),
        ("CAREFUL_COPY", 24, None), ("FLUSH_RANGE", 24, "CLWB"),
        ("SFENCE", 0, None)]


def test_nt_path_exact_multiple_has_no_trailing_workaround_fence_and_nt_tail():
    lib = Pmem(flush=Op.CLFLUSH)
    p = Program()
    pmem_memcpy_persist(p, lib, 0x1000, 0x9000, 768 + 16)
    # aligned: no head; one 768 B block, more remains -> fence; 16 B tail is one NT store;
    # the CLFLUSH build fences right after the NT stores, then drains
    assert ops_of(p) == [("NT_COPY", 768, None), ("SFENCE", 0, None), ("NT_COPY", 16, None),
                         ("SFENCE", 0, None), ("SFENCE", 0, None)]


def test_avx512_engine_has_no_768_byte_split():
    p = Program()
    pmem_memcpy_persist(p, Pmem(flush=Op.CLWB, avx512f=True), 0x1000, 0x9000, 2 * 768)
    assert ops_of(p) == [("NT_COPY", 768, None), ("NT_COPY", 768, None), ("SFENCE", 0, None)]


def test_small_copies_take_the_temporal_path():
    p = Program()
    pmem_memcpy_persist(p, Pmem(flush=Op.CLFLUSHOPT), 0x1000 + 3, 0x9000, 255)
    assert ops_of(p) == [("CAREFUL_COPY", 255, None), ("FLUSH_RANGE", 255, "CLFLUSHOPT"),
                         ("SFENCE", 0, None)]


def test_eadr_skips_the_flushes():
    p = Program()
    pmem_memcpy_persist(p, Pmem(flush=Op.CLWB, eadr=True), 0x1000 + 3, 0x9000, 100)
    assert ops_of(p) == [("CAREFUL_COPY", 100, None), ("SFENCE", 0, None)]


@pytest.mark.parametrize("profile,region", [("cascadelake-optane", "pmem0"),
                                            ("haswell-nvdimm-n", "nvdimm0")])
@pytest.mark.parametrize("persist", [pmem_memcpy_persist, memcpy_then_persist])
def test_every_copied_byte_is_durable_after_the_drain(profile, region, persist):
    rng = np.random.default_rng(5)
    m = Machine(profile)
    lib = Pmem.for_profile(m.profile.values)
    src = m.regions["dram0"]["base"] + 0x100000
    base = m.regions[region]["base"] + 0x200000
    data = rng.integers(0, 256, 3 * 4096 + 64, dtype=np.uint8).tobytes()
    m.write(src, data)
    cases = [(1, 1), (7, 63), (0, 256), (13, 700), (64, 768), (5, 2000), (3, 3 * 4096)]
    p = Program()
    for i, (off, n) in enumerate(cases):
        persist(p, lib, base + i * 0x4000 + off, src + off, n)
    m.run(p)
    img = m.crash()
    for i, (off, n) in enumerate(cases):
        dst = base + i * 0x4000 + off
        assert m.read(dst, n) == data[off:off + n]
        assert img.read(dst, n) == data[off:off + n], (off, n)
        assert img.read(dst + n, 8) == bytes(8)


def test_memcpy_without_persist_is_not_durable():
    m = Machine("cascadelake-optane")
    src = m.regions["dram0"]["base"] + 0x100000
    dst = m.regions["pmem0"]["base"] + 0x200000
    m.write(src, b"\x7f" * 4096)
    m.run(Program().rep_movsb(dst, src, 4096).sfence())
    assert m.crash().read(dst, 4096) != b"\x7f" * 4096
