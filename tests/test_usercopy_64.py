"""x86 flush-cache copies (docs/kernel-paths.md §2): op sequences by hand, and what is durable
when (the write-backs after __copy_user_nocache's SFENCE wait for a later fence)."""
import numpy as np
import pytest

from emu import Machine
from isa import Op, Program
from isa.ops import COL_ADDR, COL_IMM, COL_OP, COL_SIZE
from kernels import usercopy_64 as uc


def ops_of(p):
    return [(Op(int(r[COL_OP])).name, int(r[COL_SIZE]),
             Op(int(r[COL_IMM])).name if r[COL_OP] == Op.FLUSH_RANGE else None) for r in p.ops]


def test_copy_user_flushcache_unaligned_op_sequence():
    p = Program()
    uc.__copy_user_flushcache(p, Op.CLWB, 0x1003, 0x9000, 100)
    # 5 cached bytes to 8-alignment, 88 B of MOVNTI words, 7 left at a 4-aligned dst: one
    # 4-byte MOVNTI, 3 cached bytes, CLAC, SFENCE (copy_user_64.S .L_finish_copy); dst
    # unaligned -> CLWB of its line;
    # 100 - (0x1040 - 0x1003) = 39 is not a multiple of 8 -> CLWB of the last line
    assert ops_of(p) == [("STAC", 0, None), ("CAREFUL_COPY", 5, None), ("NT_COPY", 88, None),
                         ("NT_COPY", 4, None), ("CAREFUL_COPY", 3, None), ("CLAC", 0, None),
                         ("SFENCE", 0, None),
                         ("FLUSH_RANGE", 1, "CLWB"), ("FLUSH_RANGE", 1, "CLWB")]


def test_copy_user_flushcache_four_aligned_bytes_need_no_writeback():
    p = Program()
    uc.__copy_user_flushcache(p, Op.CLWB, 0x1004, 0x9000, 4)
    assert ops_of(p) == [("STAC", 0, None), ("NT_COPY", 4, None), ("CLAC", 0, None),
                         ("SFENCE", 0, None)]


def test_copy_user_flushcache_short_copy_writes_back_only_the_first_line():
    p = Program()
    uc.__copy_user_flushcache(p, Op.CLWB, 0x103e, 0x9000, 5)
    # below 8 bytes: no MOVNTI (dst 0x103e is not 4-aligned), 5 cached bytes over two lines;
    # usercopy_64.c then calls clean_cache_range(dst, 1): only the line of 0x103e
    assert ops_of(p) == [("STAC", 0, None), ("CAREFUL_COPY", 5, None), ("CLAC", 0, None),
                         ("SFENCE", 0, None), ("FLUSH_RANGE", 1, "CLWB")]
    assert int(p.ops[-1][COL_ADDR]) == 0x103e


def test_memcpy_flushcache_op_sequence():
    p = Program()
    uc.__memcpy_flushcache(p, Op.CLFLUSHOPT, 0x2001, 0x9000, 50)
    # 7 cached + write-back, 40 B of words, 0 left for the 4-byte store, 3 cached + write-back
    assert ops_of(p) == [("CAREFUL_COPY", 7, None), ("FLUSH_RANGE", 7, "CLFLUSHOPT"),
                         ("NT_COPY", 40, None), ("CAREFUL_COPY", 3, None),
                         ("FLUSH_RANGE", 3, "CLFLUSHOPT")]


def _setup():
    m = Machine("cascadelake-optane")
    src = m.regions["dram0"]["base"] + 0x100000
    data = np.random.default_rng(3).integers(0, 256, 3 * 4096, dtype=np.uint8).tobytes()
    m.write(src, data)
    return m, src, data, uc.clwb_op(m.profile.values)


@pytest.mark.parametrize("off,n", [(0, 1), (3, 3), (4, 4), (1, 63), (7, 200), (0, 4096),
                                   (5, 3 * 4096 - 8)])
@pytest.mark.parametrize("fn", ["__copy_user_flushcache", "__memcpy_flushcache"])
def test_data_arrives_and_is_durable_after_a_later_fence(off, n, fn):
    m, src, data, flush = _setup()
    dst = m.regions["pmem0"]["base"] + 0x40000 + off
    p = Program()
    getattr(uc, fn)(p, flush, dst, src, n)
    m.run(p.sfence())  # e.g. the fence of the next nvdimm_flush
    assert m.read(dst, n) == data[:n]
    assert m.crash().read(dst, n) == data[:n]


def test_cached_tail_is_not_durable_until_a_later_fence():
    m, src, data, flush = _setup()
    dst = m.regions["pmem0"]["base"] + 0x40000 + 3
    p = Program()
    uc.__copy_user_flushcache(p, flush, dst, src, 200)
    m.run(p)
    img = m.crash()
    # 5 cached head bytes, 192 B of MOVNTI words, 3 cached tail bytes. The MOVNTIs into the
    # head's line evict it (an eviction write-back is durable), and they are fenced inside
    # __copy_user_nocache; the tail is stored after them and its CLWB waits for a fence.
    assert img.read(dst, 197) == data[:197]
    assert img.read(dst + 197, 3) != data[197:200]
    m.run(Program().sfence())
    assert m.crash().read(dst, 200) == data[:200]


def test_short_copy_across_a_line_leaves_the_second_line_unwritten_back():
    m, src, data, flush = _setup()
    dst = m.regions["pmem0"]["base"] + 0x40000 + 62
    p = Program()
    uc.__copy_user_flushcache(p, flush, dst, src, 5)
    m.run(p.sfence())
    # the kernel writes back only dst's line: after a fence the first 2 bytes are durable,
    # the 3 in the next line are still only in the cache
    img = m.crash()
    assert img.read(dst, 2) == data[:2]
    assert img.read(dst + 2, 3) != data[2:5]
