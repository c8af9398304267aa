"""The DMA pool allocator's three designs (kernels/dmapool.py) and the dmapool-test scenario:
geometry and walk lengths computed by hand from mm/dmapool.c, mm/dmapool_test.c and the RFC
(docs/kernel-paths.md §5), and the bytes the allocator leaves in DMA memory."""
import json

import numpy as np
import pytest

from emu import Machine
from emu.studies.cli import main
from emu.studies.scenarios.dmapool_test import kernel_base
from isa import Program
from isa.program import ProgramError
from isa.ops import COL_IMM, COL_OP, Op
from kernels import dmapool as dp
from memmodel.profile import load_profile

COSTS = dp.Costs(call=25, div=36, irq_save=10, irq_restore=8)


def site_loads(program, site):
    """LOAD ops emitted while `site` is the current function."""
    ops = program.ops
    is_site = ops[:, COL_OP] == Op.SITE
    last_site_row = np.maximum.accumulate(np.where(is_site, np.arange(len(ops)), -1))
    current = np.where(last_site_row >= 0, ops[np.maximum(last_site_row, 0), COL_IMM], -1)
    return int(np.sum((ops[:, COL_OP] == Op.LOAD) & (current == program.site_names.index(site))))


def test_blocks_per_row_follow_the_test_formula():
    # clamp((4096 / size) * 512, 1024, 8192), by hand
    assert [dp.nr_blocks(s) for s, _, _ in dp.PARMS] == [8192, 8192, 8192, 2048, 1024, 8192]
    assert dp.row_key(68, 32, 8192) == "size=68,align=32,blocks=8192"


def test_pool_geometry_rounds_size_to_align_and_respects_boundaries():
    size, allocation, offsets = dp.pool_geometry("orig", 68, 32, 4096)
    assert (size, allocation, len(offsets)) == (96, 4096, 42)      # 4096 // 96
    # a 1024-byte boundary: 10 blocks of 96 bytes fit before each, then skip to it
    _, _, offsets = dp.pool_geometry("orig", 96, 32, 1024)
    assert len(offsets) == 40 and offsets[10] == 1024 and offsets[9] == 864
    # the 16-byte minimum holds only where the free-list link lives in the block
    assert len(dp.pool_geometry("orig", 8, 8, 0)[2]) == 256
    assert len(dp.pool_geometry("list", 8, 8, 0)[2]) == 512
    with pytest.raises(ValueError, match="boundary"):
        dp.pool_geometry("orig", 256, 256, 128)
    with pytest.raises(ValueError, match="variant"):
        dp.pool_geometry("xarray", 16, 16, 0)


def test_list_free_walks_the_page_list_from_the_newest_page():
    # 3 pages of 4 blocks; the page list is newest first. Round 1 frees page 0's blocks
    # first (3 pages visited: 3 vaddr + 2 next loads), then page 1's (3 loads), page 2's (1):
    # 4 x (5 + 3 + 1) = 36 walk loads, plus size, allocation, the list head and
    # page->blocks per free: 12 x 4 = 48. Round 2 frees in the reverse page order: the same.
    pool = dp.DmaPool("list", 1024, 1024, 0, 1 << 32)
    for _ in range(2):
        assert site_loads(dp.dmapool_test_alloc(pool, 12, COSTS), "pool_find_block") == 84
    orig = dp.DmaPool("orig", 1024, 1024, 0, 1 << 32)
    assert site_loads(dp.dmapool_test_alloc(orig, 12, COSTS), "pool_find_block") == 0


def test_maple_lookup_scans_pivots_up_to_the_slot_at_every_level():
    # 12 contiguous blocks + a gap before and after = 14 entries: one node, the root. Block
    # b is entry b + 1: the root pointer, b + 2 pivots, the slot: sum(b + 4) = 114.
    pool = dp.DmaPool("maple", 1024, 1024, 0, 1 << 32)
    assert site_loads(dp.dmapool_test_alloc(pool, 12, COSTS), "mtree_load") == 114
    # 8192 blocks + 2 gaps: 513 leaves, 33, 3, 1: four levels
    big = dp.DmaPool("maple", 16, 16, 0, 1 << 32)
    dp.dmapool_test_alloc(big, 8192, COSTS)
    assert [n for _, n in big.tree[2]] == [513, 33, 3, 1]


def test_free_is_constant_work_in_orig_and_grows_with_pages_in_list():
    def loads_per_free(variant, size):
        pool = dp.DmaPool(variant, size, size, 0, 1 << 32)
        blocks = dp.nr_blocks(size)
        dp.dmapool_test_alloc(pool, blocks, COSTS)
        p = dp.dmapool_test_alloc(pool, blocks, COSTS)   # a round without page set-up
        return site_loads(p, "dma_pool_free") / blocks, site_loads(p, "pool_find_block") / blocks
    # orig: pool->next_block and pool->nr_active are read; the lock word is a LOCK_RMW
    assert loads_per_free("orig", 16) == loads_per_free("orig", 4096) == (2, 0)
    # list: 32 pages -> (32 + 1) / 2 pages visited on average, two loads each but the last;
    # 1024 pages -> (1024 + 1) / 2
    for size, pages in ((16, 32), (4096, 1024)):
        walk = (pages + 1) / 2
        assert loads_per_free("list", size)[1] == pytest.approx(2 * walk - 1 + 4)


def run_round(variant, blocks=12):
    m = Machine("skylake-ddr4")
    pool = dp.DmaPool(variant, 1024, 1024, 0, kernel_base(m))
    m.run(dp.dma_pool_create(Program(), pool))
    m.run(dp.dmapool_test_alloc(pool, blocks, COSTS))
    return m, pool


def word(m, addr):
    return int.from_bytes(m.read(int(addr), 8), "little")


@pytest.mark.parametrize("variant", dp.VARIANTS)
def test_free_list_links_are_in_dma_memory_only_in_orig(variant):
    # after a round the free list holds blocks 11, 10, ..., 0 (each free pushed its block on
    # the list, which was empty after the allocations): block b links to block b - 1
    m, pool = run_round(variant)
    for b in range(12):
        meta = pool.block(b)
        assert word(m, meta + dp.BLK_NEXT) == (int(pool.block(b - 1)) if b else 0)
        assert word(m, meta + dp.BLK_DMA) == int(pool.vaddr(b))
        dma = m.read(int(pool.vaddr(b)), 1024)
        if variant == "orig":     # the link and the dma address, inside the DMA block
            assert int(meta) == int(pool.vaddr(b)) and dma[16:] == bytes(1008)
        else:                     # the RFC: nothing of the allocator's in device memory
            assert dma == bytes(1024)
    assert word(m, pool.pool + dp.POOL_NEXT_BLOCK) == int(pool.block(11))
    pairs = pool.base + dp.AT_PAIRS
    assert [word(m, pairs + 16 * k + dp.PAIR_V) for k in range(12)] == \
        [int(pool.vaddr(b)) for b in range(12)]


def test_dmapool_test_interface_and_walk_cost(capsys):
    assert main(["run", "dmapool-test", "--rounds", "1", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["scenario"] == "dmapool-test" and res["rounds"] == 1
    keys = ["size=16,align=16,blocks=8192", "size=64,align=64,blocks=8192",
            "size=256,align=256,blocks=8192", "size=1024,align=1024,blocks=2048",
            "size=4096,align=4096,blocks=1024", "size=68,align=32,blocks=8192"]
    assert set(res["variants"]) == {"orig", "list", "maple"}
    for d in res["variants"].values():
        assert list(d["time_us"]) == keys and all(t > 0 for t in d["time_us"].values())
    # 1024 pages: list's frees visit 512 pages on average, each a dependent load of at least
    # an L1 hit; orig's frees are O(1)
    t = {v: d["time_us"]["size=4096,align=4096,blocks=1024"] for v, d in res["variants"].items()}
    prof = load_profile("skylake-ddr4").values
    l1_ns = prof["cache"]["l1d"]["hit_cycles"] / prof["core"]["freq_ghz"]
    assert t["list"] - t["orig"] >= 1024 * 512 * l1_ns / 1e3
    assert res["rows"]["size=68,align=32,blocks=8192"]["pages_list"] == 196   # ceil(8192/42)


def test_program_from_array_without_a_copy_keeps_the_array_or_refuses_it():
    # the builder hands its op array over (Program.from_array(copy=False)): the Program's
    # ops are that array; one it could not keep as it is (another dtype, not C-contiguous,
    # read-only: runs write site ids into it for their duration) is refused
    ops = Program().loads(np.array([0x1000, 0x2000])).ops.copy()
    p = Program.from_array(ops, copy=False)
    assert np.shares_memory(p.ops, ops) and len(p) == 2
    frozen = ops.copy()
    frozen.flags.writeable = False
    for bad, what in ((ops.astype(np.int32), "int32"), (np.asfortranarray(ops), "non-contiguous"),
                      (frozen, "read-only")):
        with pytest.raises(ProgramError, match=what):
            Program.from_array(bad, copy=False)


@pytest.mark.parametrize("variant,parms,rounds", [("orig", (1024, 1024, 0), 1),
                                                  ("orig", (1024, 1024, 0), 7),
                                                  ("maple", (4096, 4096, 0), 6)])
def test_run_row_is_every_round_built_and_run_in_turn(variant, parms, rounds):
    """run_row (the rounds' programs built once per allocator state, the cycle they fall
    into repeated, fast-forwarded or not) gives the cycles of the plain loop: each round's
    program built from the pool as it is and run, one after the other."""
    from emu.studies.scenarios.dmapool_test import run_row
    m = Machine("skylake-ddr4")
    pool = dp.DmaPool(variant, *parms, kernel_base(m))
    costs = dp.Costs.of(m.profile.values)
    m.run(dp.dma_pool_create(Program(), pool))
    cycles = sum(m.run(dp.dmapool_test_alloc(pool, dp.nr_blocks(parms[0]), costs)).cycles
                 for _ in range(rounds))
    want = (cycles / (m.freq_ghz * 1e3), pool.pages)
    for ff in (True, False):
        assert run_row("skylake-ddr4", {}, variant, parms, rounds, ff) == want


def test_op_memory_reuses_its_buffer_only_when_no_program_of_it_is_alive():
    def rounds(memory, n, base=1 << 32):
        pool = dp.DmaPool("orig", 64, 64, 0, base)
        return [dp.dmapool_test_alloc(pool, 64, COSTS, memory) for _ in range(n)]
    plain = [p.ops.copy() for p in rounds(None, 3)]
    memory = dp.OpMemory()
    memory.reset()
    kept = rounds(memory, 3)           # no buffer yet: arrays of their own
    assert all(np.array_equal(p.ops, q) for p, q in zip(kept, plain))
    memory.reset()
    held = rounds(memory, 3)           # carved from the buffer the first row asked for
    assert held[0].ops.base is not None
    memory.reset()                     # `held` is alive: the buffer is not reused
    rounds(memory, 3, base=1 << 33)
    assert all(np.array_equal(p.ops, q) for p, q in zip(held, plain))
    base = held[0].ops.base
    del held, base
    memory.reset()
    again = rounds(memory, 3)          # ... and with nothing alive, it is, to the same ops
    assert again[0].ops.base is not None
    assert all(np.array_equal(p.ops, q) for p, q in zip(again, plain))
