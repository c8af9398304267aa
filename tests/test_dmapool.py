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
from isa.event_rows import OpMemory
from isa.program import ProgramError
from isa.ops import COL_ADDR, COL_IMM, COL_OP, COL_SIZE, COL_SRC, Op
from kernels import dmapool as dp
from memmodel.profile import load_profile

COSTS = dp.Costs(call=25, div=36, irq_save=10, irq_restore=8)


def site_rows(program, site):
    """Which ops are emitted while `site` is the current function."""
    ops = program.ops
    is_site = ops[:, COL_OP] == Op.SITE
    last_site_row = np.maximum.accumulate(np.where(is_site, np.arange(len(ops)), -1))
    current = np.where(last_site_row >= 0, ops[np.maximum(last_site_row, 0), COL_IMM], -1)
    return current == program.site_names.index(site)


def site_loads(program, site):
    """LOAD ops emitted while `site` is the current function."""
    return int(np.sum((program.ops[:, COL_OP] == Op.LOAD) & site_rows(program, site)))


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


def test_each_load_site_is_one_instruction_with_its_own_ip():
    # pool_find_block's page->vaddr loads are one instruction in the kernel's loop: one ip
    # for every page visited; its next-page loads another; no load is left without one
    pool = dp.DmaPool("list", 1024, 1024, 0, 1 << 32)
    program = dp.dmapool_test_alloc(pool, 12, COSTS)
    ops = program.ops
    assert (ops[ops[:, COL_OP] == Op.LOAD, COL_SRC] != 0).all()
    walk = ops[site_rows(program, "pool_find_block") & (ops[:, COL_OP] == Op.LOAD)]
    field = (walk[:, COL_ADDR] - (pool.base + dp.AT_PAGES)) % dp.DMA_PAGE_BYTES["list"]
    in_pages = (walk[:, COL_ADDR] >= pool.base + dp.AT_PAGES) & (
        walk[:, COL_ADDR] < pool.base + dp.AT_META)
    vaddr, nxt = walk[in_pages & (field == dp.PAGE_VADDR)], walk[in_pages & (field == 0)]
    assert len(vaddr) == 24 and len(nxt) == 12          # the walk's count in the test above
    assert len(set(vaddr[:, COL_SRC])) == 1 and len(set(nxt[:, COL_SRC])) == 1
    assert vaddr[0, COL_SRC] != nxt[0, COL_SRC]


def test_maple_lookup_walks_as_v64_mtree_load_at_every_level():
    # v6.4-v6.7 mtree_load: ma_root, mas_start's root->parent; per level pivot[14]
    # (ma_data_end), meta.end if pivot[14] is 0, node->parent, the pivots scanned, node->parent
    # again, the slot. 12 contiguous blocks + a gap before and after = 14 entries: one node,
    # the root, not full (meta.end = 13, the scan stops at pivot 12 at the latest). Block b is
    # entry b + 1: 2 + 1 + 1 + 1 + (b + 2) + 1 + 1 = b + 9 loads; sum over b < 12: 174
    pool = dp.DmaPool("maple", 1024, 1024, 0, 1 << 32)
    assert site_loads(dp.dmapool_test_alloc(pool, 12, COSTS), "mtree_load") == 174
    # 8192 blocks + 2 gaps: 513 leaves (the last holds 2 entries), 33 (1), 3 (16, 16, 1), 1
    # (3 entries): four levels
    big = dp.DmaPool("maple", 16, 16, 0, 1 << 32)
    p = dp.dmapool_test_alloc(big, 8192, COSTS)
    assert [n for _, n in big.tree[2]] == [513, 33, 3, 1]
    # freeing block 0 (entry 1): the root (3 entries: meta.end, slot 0, one pivot) 2 + 6;
    # two full internal nodes at slot 0: 5 each; the leaf at slot 1 (two pivots): 6
    walk = event_ops(p, "mtree_load", 0)
    assert sum(op == Op.LOAD for op, *_ in walk) == 8 + 5 + 5 + 6
    root = int(big.node(big.tree[2][-1][0]))
    assert (Op.LOAD, root + dp.MN_META, 8, 0) in walk


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


def event_ops(program, site, nth):
    """The ops from the nth time `site` is entered up to the next SITE op of another site
    or the end: (op, addr, size, imm) tuples."""
    ops, sid = program.ops, program.site_names.index(site)
    starts = np.nonzero((ops[:, COL_OP] == Op.SITE) & (ops[:, COL_IMM] == sid))[0]
    out = []
    for row in ops[starts[nth] + 1:]:
        if row[COL_OP] == Op.SITE:
            break
        out.append(tuple(int(row[c]) for c in (COL_OP, COL_ADDR, COL_SIZE, COL_IMM)))
    return out


def test_lock_and_unlock_are_v64s_irqsave_and_irqrestore_without_popf():
    # v6.4 x86-64 (irqflags.h since ab234a260b1f, qspinlock.h): save = PUSHF; POP, CLI, then
    # LOCK CMPXCHG of the 4-byte lock word; restore = a 1-byte store of 0 to the lock byte,
    # then STI. A free of a round without page set-up, in `orig`: the declared call work,
    # PUSHF; POP + CLI, the locked op, the free-list update, the byte store, STI
    pool = dp.DmaPool("orig", 1024, 1024, 0, 1 << 32)
    dp.dmapool_test_alloc(pool, 4, COSTS)
    p = dp.dmapool_test_alloc(pool, 4, COSTS)
    lock = pool.pool + dp.POOL_LOCK
    work = lambda cycles: (Op.WORK, cycles)              # noqa: E731 (a WORK has no address)
    brief = lambda ops: [(o[0], o[3]) if o[0] == Op.WORK else o for o in ops]   # noqa: E731
    free = brief(event_ops(p, "dma_pool_free", 0))
    assert free[:3] == [work(COSTS.call), work(COSTS.irq_save), (Op.LOCK_RMW, lock, 4, 1)]
    assert free[-2:] == [(Op.STORE, lock, 1, 0), work(COSTS.irq_restore)]
    alloc = brief(event_ops(p, "dma_pool_alloc", 0))
    assert alloc[:2] == [work(COSTS.call), work(COSTS.irq_save)]
    k = alloc.index((Op.STORE, lock, 1, 0))
    assert alloc[k + 1] == work(COSTS.irq_restore)
    # one lock and one unlock per call: 8 calls
    assert np.sum(p.ops[:, COL_OP] == Op.LOCK_RMW) == 8
    works = p.ops[p.ops[:, COL_OP] == Op.WORK, COL_IMM]
    assert sorted(set(works.tolist())) == sorted({COSTS.call, COSTS.irq_save, COSTS.irq_restore})


def test_costs_of_a_profile_sum_pushf_pop_and_cli_and_take_sti_alone():
    v = load_profile("skylake-ddr4").values
    c = dp.Costs.of(v)
    assert c.irq_save == v["instr"]["pushf_pop_cycles"] + v["instr"]["cli_cycles"]
    assert c.irq_restore == v["instr"]["sti_cycles"]


def test_test_loop_reloads_pool_and_the_handle_is_stored_before_the_vaddr():
    # dmapool_test.c: `pool` is a static pointer passed to every call (a load per call);
    # dma_pool_alloc stores *handle (p[i].dma) before the caller stores p[i].v
    pool = dp.DmaPool("orig", 1024, 1024, 0, 1 << 32)
    p = dp.dmapool_test_alloc(pool, 4, COSTS)
    var, pairs = pool.base + dp.AT_POOL_VAR, pool.base + dp.AT_PAIRS
    ops = p.ops
    loads = ops[ops[:, COL_OP] == Op.LOAD, COL_ADDR]
    assert np.sum(loads == var) == 8                  # 4 allocs + 4 frees
    stores = [int(a) for a in ops[ops[:, COL_OP] == Op.STORE, COL_ADDR]
              if pairs <= a < pairs + 4 * dp.PAIR_BYTES]
    assert stores == [pairs + 16 * i + off for i in range(4) for off in (dp.PAIR_DMA, dp.PAIR_V)]


def test_pool_initialise_page_stores_three_times_per_block_and_counts():
    # v6.4 pool_initialise_page, 4 blocks of 1024 B per page: per block block->dma,
    # block->next_block = NULL and (but the first) last->next_block = block, then after the
    # loop last->next_block = pool->next_block: 4 + 4 + 3 + 1 = 12 stores into DMA memory.
    # Loads: page->vaddr, page->dma, per block pool->size, pool->allocation, pool->nr_blocks
    # (12), pool->next_block, list_add's head->next, pool->nr_pages: 17
    pool = dp.DmaPool("orig", 1024, 1024, 0, 1 << 32)
    p = dp.dmapool_test_alloc(pool, 4, COSTS)
    init = event_ops(p, "pool_initialise_page", 0)
    dma = pool.base + dp.AT_DMA
    assert sum(op == Op.STORE and dma <= a < dma + 4096 for op, a, _, _ in init) == 12
    assert sum(op == Op.LOAD for op, *_ in init) == 17


def test_page_list_and_counters_in_memory_after_the_first_round():
    # 12 blocks of 1024 B: three pages, each list_add'ed at the head: pool->page_list ->
    # page 2 -> page 1 -> page 0 -> back to the head; struct dma_page is 32 bytes in v6.4
    # (kmalloc-32: two per line)
    m, pool = run_round("orig")
    head = pool.pool + dp.POOL_PAGE_LIST
    pages = [pool.base + dp.AT_PAGES + 32 * j for j in range(3)]
    assert word(m, head) == pages[2] and word(m, head + 8) == pages[0]
    assert [word(m, pg + dp.PAGE_LIST) for pg in pages] == [head, pages[0], pages[1]]
    assert [word(m, pg + dp.PAGE_PREV) for pg in pages] == [pages[1], pages[2], head]
    assert [word(m, pg + dp.PAGE_VADDR) for pg in pages] == \
        [int(pool.vaddr(4 * j)) for j in range(3)]
    assert word(m, pool.pool + dp.POOL_NR_BLOCKS) == 12
    assert word(m, pool.pool + dp.POOL_NR_PAGES) == 3
    assert word(m, pool.pool + dp.POOL_NR_ACTIVE) == 0
    assert m.read(pool.pool + dp.POOL_LOCK, 4) == bytes(4)       # unlocked


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
    memory = OpMemory()
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
