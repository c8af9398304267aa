"""mm/dmapool.c and mm/dmapool_test.c as emitted ops: where the DMA pool allocator keeps its
free-block metadata, in three designs (docs/scenarios.md §3, docs/kernel-paths.md §5).

- "orig" (v6.4+): one free list across all pages whose links (`struct dma_block` {next_block,
  dma}, 16 B) are written into the free blocks themselves, in DMA memory; `dma_pool_alloc`
  and `dma_pool_free` are O(1).
- "list" (the 2024 RFC, v2): the `dma_block`s {next_block, dma, vaddr} (24 B) live in a
  kmalloc'd array per page, outside DMA memory; `dma_pool_free` finds a block from its vaddr
  with `pool_find_block`, a walk of the page list (O(pages)) and a division.
- "maple" (as "list", but the block is found by `mtree_load` in a maple tree that maps each
  block's address range to its `dma_block`: O(log n)).

`DmaPool` is the allocator's state in Python (which block each call returns, the order of the
page list); `dmapool_test_alloc` emits one round of the test (allocate `blocks` blocks, free
them in the same order) as one op array built with numpy, with the values the kernel stores,
so that emulated memory holds the real free-list links.

Sources read (as /work/reports/kernel-check-A.md §1 gives them, store ids for read_file):
mm/dmapool.c in its v6.4-v6.7 form (40089932341: struct dma_pool's layout) and a later
revision with the same hot path (48991723: dma_pool_alloc, dma_pool_free, pool_block_pop,
pool_block_push, pool_initialise_page); mm/dmapool_test.c (torvalds/linux, 712682778): the
test loop reloads the static `pool` pointer for every call, and `*handle` (p[i].dma) is
stored inside dma_pool_alloc before the caller stores p[i].v; lib/maple_tree.c in its
v6.6/6.7 form (40214964773) for mtree_load. The RFC's code was not read (its mails are kept
back): what its variants do beyond the thread's description is assumed and said so below.

Model departures and assumptions:
- Page allocation (`dma_alloc_coherent`, which zeroes the page, and the kmallocs of `struct
  dma_page` and of the RFC's block arrays) happens in the first round only and is not
  modelled, but for pool_alloc_page's stores of page->vaddr and page->dma (and the RFC's
  page->blocks) outside the lock; pages are contiguous in DRAM, `struct dma_page`s
  consecutive kmalloc objects (32 bytes in v6.4, kmalloc-32; 64 for the RFC's, one pointer
  more assumed), the RFC's block arrays consecutive and line-aligned. DMA addresses equal the
  kernel addresses (the test's device has no IOMMU: direct mapping).
- No DMAPOOL_DEBUG (poisoning, double-free scans), no init_on_alloc and no init_on_free (each
  would add a memset of the block per call): a production config.
- The lock as v6.4 x86-64 runs it (include/linux/spinlock_api_smp.h, torvalds store id
  1414151981; arch/x86/include/asm/irqflags.h, 2533546825, the form since ab234a260b1f;
  paravirt.h PVOP_ALT form, 47938027, patched native on bare metal; qspinlock.h, 965426939;
  as read in /work/reports/kernel-check-A.md §1.5): `spin_lock_irqsave` is local_irq_save's
  PUSHF; POP and CLI (profile [instr] pushf_pop_cycles + cli_cycles, one WORK chain), then
  the qspinlock fast path's LOCK CMPXCHG of the 4-byte lock word (a LOCK_RMW);
  `spin_unlock_irqrestore` is the release store of the lock byte (`movb $0`, 1 byte), then
  local_irq_restore: interrupts were on in the saved flags, so STI (sti_cycles, WORK).
  There is no POPF. Assumed config (the test robot's is not known): x86 selects no
  ARCH_INLINE_SPIN_*, so the lock and unlock are out-of-line calls; CONFIG_PREEMPT_COUNT=y
  (PREEMPT_DYNAMIC, the x86 default in distribution configs since v5.12, recalled), so
  preempt_disable/enable add and decrement the per-CPU preempt count (an L1-hot per-CPU
  line). Those calls, the preempt-count RMWs, the `test $IF` before STI and the rest of the
  non-memory work of each alloc or free call (argument checks, the test loop) are the
  declared cost [software] dma_pool_call_ns, the same in every variant.
- The maple tree's layout is an assumption, not the kernel's: densely packed (16 slots in
  every node but the last of a level; block ranges and the gaps between them are entries),
  built in the first round with two stores per entry. The kernel's store path (mas_store's
  walk, mab_calc_split's split at half a node, mas_push_data's rebalancing into a sibling)
  leaves partly filled nodes after ascending mtree_store_range calls; their occupancy was not
  worked out here (it needs mas_push_data's split point, which was not read), so lookups may
  cross more nodes and scan fewer pivots per node than here. Nodes are maple_range_64 /
  maple_leaf_64 (16 slots, 15 pivots: a tree without MT_FLAGS_ALLOC_RANGE, assumed).
- `mtree_load` as v6.4-v6.7 run it (lib/maple_tree.c, 40214964773): mas_start loads ma_root
  and checks the root node for death (node->parent); per level mtree_lookup_walk's
  ma_data_end loads pivot[14] (and, for a node not full, meta.end in the last slot's place),
  ma_dead_node loads node->parent, the scan loads pivots until one is >= the index (at most
  `end`), the slot is loaded and ma_dead_node loads node->parent again. Only each node's
  first load waits for the pointer to it (FLAG_DEPENDENT: the previous load's data); the
  second parent load is emitted before the slot load so that the next node's first load
  waits for the slot. The scan's exit test, `if (pivots[offset] >= mas->index) break;`
  (mtree_lookup_walk, read in 40214964773), is a branch after each pivot load, resolved
  once that pivot is there, at one site (IP_MTREE_SCAN) that the branch predictor guesses:
  its outcome (go on below the slot taken, leave at it) is the walk's, known when the ops
  are built. The loop's other test, `++offset < end`, which ends a scan that reaches `end`,
  is not emitted (a counted bound, not data-dependent).
- Compares, branches and address arithmetic are not ops (they overlap the loads), but for
  the walks' data-dependent exits (the maple scan's, pool_find_block's per page), which
  the branch predictor guesses and which cost a misprediction when it guesses wrong; the
  division of `pool_find_block` is an op (profile [instr] div64_cycles), as its result is
  the block's address.
"""
from dataclasses import dataclass

import numpy as np

from isa.event_rows import EventRows
from isa.ops import Op

VARIANTS = ("orig", "list", "maple")
# dmapool_test.c: (size, align, boundary) of each pool, NR_TESTS rounds
PARMS = ((16, 16, 0), (64, 64, 0), (256, 256, 0), (1024, 1024, 0), (4096, 4096, 0),
         (68, 32, 4096))
NR_TESTS = 100
PAGE_SIZE = 4096

# struct dma_pool, v6.4 (store id 40089932341): page_list 0, lock 16, next_block 24,
# nr_blocks 32, nr_active 40, nr_pages 48, dev 56, unsigned int size 64, allocation 68,
# boundary 72, name[32] 76, pools 112: 128 bytes. The maple variant's struct maple_tree
# (ma_lock, ma_flags, ma_root) is assumed appended at 128 (the RFC's layout is not read)
POOL_PAGE_LIST, POOL_LOCK, POOL_NEXT_BLOCK = 0, 16, 24
POOL_NR_BLOCKS, POOL_NR_ACTIVE, POOL_NR_PAGES = 32, 40, 48
POOL_SIZE, POOL_ALLOCATION, POOL_MT_ROOT = 64, 68, 128 + 8
# struct dma_page: page_list, vaddr, dma (v6.4: 32 bytes, kmalloc-32), and the RFC's blocks
# pointer (40 bytes, kmalloc-64: the RFC's struct is not read, one pointer more assumed)
PAGE_LIST, PAGE_PREV, PAGE_VADDR, PAGE_DMA, PAGE_BLOCKS = 0, 8, 16, 24, 32
DMA_PAGE_BYTES = {"orig": 32, "list": 64, "maple": 64}
# struct dma_block
BLK_NEXT, BLK_DMA, BLK_VADDR = 0, 8, 16
META_BLOCK_BYTES = 24           # the RFC's dma_block, kept outside DMA memory
# dmapool_test.c struct dma_pool_pair {dma, v}
PAIR_DMA, PAIR_V, PAIR_BYTES = 0, 8, 16
# maple_range_64 node: parent, pivot[15], slot[16]; a node not full keeps its metadata
# (meta.end, the data end) where slot[15] would be
MAPLE_NODE_BYTES, MAPLE_SLOTS, MAPLE_PIVOTS = 256, 16, 15
MN_PARENT, MN_PIVOT, MN_SLOT, MN_META = 0, 8, 128, 128 + 8 * 15

# where the structures live, as offsets from the kernel base the caller gives (AT_POOL_VAR:
# dmapool_test.c's static `pool` pointer)
AT_POOL_VAR, AT_POOL, AT_PAIRS, AT_PAGES, AT_META, AT_MAPLE, AT_DMA = (
    0x800, 0x1000, 0x10000, 0x100000, 0x200000, 0x1000000, 0x4000000)
SPAN_BYTES = AT_DMA + (8 << 20)     # the kernel memory a test row needs

SITES = ("dmapool_test_alloc", "dma_pool_alloc", "pool_initialise_page", "dma_pool_free",
         "pool_find_block", "mtree_load")
# branch sites (ips: what the branch predictor tells branches apart by; any distinct values)
IP_MTREE_SCAN = 0x1000       # mtree_lookup_walk's `pivots[offset] >= mas->index` break
IP_FIND_BLOCK = 0x1040       # pool_find_block's test of a page in its page-list walk


def nr_blocks(size):
    """dmapool_test.c: clamp((PAGE_SIZE / size) * 512, 1024, 8192)."""
    return min(max((PAGE_SIZE // size) * 512, 1024), 8192)


def row_key(size, align, blocks):
    return f"size={size},align={align},blocks={blocks}"


def pool_geometry(variant, size, align, boundary):
    """dma_pool_create and pool_initialise_page: (block size, allocation, offsets of the
    blocks in a page). The RFC drops the 16-byte minimum (no link inside the block)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown dmapool variant {variant!r}: one of {', '.join(VARIANTS)}")
    if align & (align - 1) or align < 1 or size < 1:
        raise ValueError(f"dma_pool_create: size {size}, align {align} (a power of two)")
    if variant == "orig":
        size = max(size, 16)
    size = -(-size // align) * align
    allocation = max(size, PAGE_SIZE)
    if boundary and (boundary < size or boundary & (boundary - 1)):
        raise ValueError(f"dma_pool_create: boundary {boundary} below size {size} or not a "
                         f"power of two")
    boundary = min(boundary, allocation) if boundary else allocation
    offsets, offset, next_boundary = [], 0, boundary
    while offset + size <= allocation:
        if offset + size > next_boundary:
            offset = next_boundary
            next_boundary += boundary
            continue
        offsets.append(offset)
        offset += size
    return size, allocation, np.array(offsets, dtype=np.int64)


@dataclass
class Costs:
    """Cycles of what is not a memory op: the declared non-memory work of one alloc or free
    call, a 64-bit DIV, local_irq_save's PUSHF; POP and CLI, local_irq_restore's STI."""
    call: int
    div: int
    irq_save: int
    irq_restore: int

    @classmethod
    def of(cls, profile_values):
        v = profile_values
        i = v["instr"]
        return cls(round(v["software"]["dma_pool_call_ns"] * v["core"]["freq_ghz"]),
                   i["div64_cycles"], i["pushf_pop_cycles"] + i["cli_cycles"], i["sti_cycles"])


class DmaPool:
    """One test pool: its geometry, addresses and allocator state. Block b is block
    b % bpp of the b // bpp-th page allocated."""

    def __init__(self, variant, size, align, boundary, kernel_base):
        self.variant = variant
        self.size, self.allocation, self.offsets = pool_geometry(variant, size, align, boundary)
        self.bpp = len(self.offsets)
        self.base = kernel_base
        self.pool = kernel_base + AT_POOL
        self.meta_stride = -(-self.bpp * META_BLOCK_BYTES // 64) * 64
        self.pages = 0
        self.free = []          # block ids; free[-1] is pool->next_block
        self.tree = None        # maple: (entry start addresses, entry block or -1, levels)

    # addresses, vectorised over block ids
    def vaddr(self, b):
        b = np.asarray(b, dtype=np.int64)
        return self.base + AT_DMA + (b // self.bpp) * self.allocation + self.offsets[b % self.bpp]

    def block(self, b):
        """The struct dma_block of block b: in the block itself ("orig") or in its page's
        array ("list", "maple")."""
        if self.variant == "orig":
            return self.vaddr(b)
        b = np.asarray(b, dtype=np.int64)
        return (self.base + AT_META + (b // self.bpp) * self.meta_stride
                + (b % self.bpp) * META_BLOCK_BYTES)

    def page(self, j):
        return (self.base + AT_PAGES
                + np.asarray(j, dtype=np.int64) * DMA_PAGE_BYTES[self.variant])

    def head(self):
        """pool->next_block's value."""
        return int(self.block(self.free[-1])) if self.free else 0

    def _entries(self, pages):
        """Maple tree entries over `pages` pages: block ranges and the gaps around them,
        sorted by address: (start addresses, block id or -1 for a gap)."""
        blocks = np.arange(pages * self.bpp, dtype=np.int64)
        starts = self.vaddr(blocks)
        ends = starts + self.size
        gap_after = np.append(starts[1:] > ends[:-1], True)
        entry_start = np.concatenate([[0], starts, ends[gap_after]])
        entry_block = np.concatenate([[-1], blocks, np.full(int(gap_after.sum()), -1)])
        order = np.argsort(entry_start, kind="stable")
        return entry_start[order], entry_block[order]

    def build_tree(self):
        """Lay the maple tree out over all pages (nodes of each level consecutive, leaves
        first; the root is the last node)."""
        starts, blocks = self._entries(self.pages)
        levels, counts, n = [], [], len(starts)
        first = 0
        while True:
            nodes = -(-n // MAPLE_SLOTS)
            levels.append((first, nodes))
            counts.append(n)
            first += nodes
            if nodes == 1:
                break
            n = nodes
        self.tree = (starts, blocks, levels, counts)
        return self.tree

    def node(self, i):
        return self.base + AT_MAPLE + np.asarray(i, dtype=np.int64) * MAPLE_NODE_BYTES


def _lock(r, ev, step, pool, costs):
    """spin_lock_irqsave: local_irq_save (PUSHF; POP, CLI) and the qspinlock fast path's
    LOCK CMPXCHG of the 4-byte lock word. Returns the next step."""
    r.add(ev, step, Op.WORK, imm=costs.irq_save)
    r.add(ev, step + 1, Op.LOCK_RMW, pool.pool + POOL_LOCK, imm=1, size=4)
    return step + 2


def _unlock(r, ev, step, pool, costs):
    """spin_unlock_irqrestore: the release store of the lock byte, then STI (interrupts were
    on when the lock was taken). Returns the next step."""
    r.store(ev, step, pool.pool + POOL_LOCK, 0, size=1)
    r.add(ev, step + 1, Op.WORK, imm=costs.irq_restore)
    return step + 2


def _pool_alloc_page(r, ev, step, pool, j):
    """pool_alloc_page's stores into each new struct dma_page j[i], outside the lock: the
    chunk's addresses from dma_alloc_coherent (and the RFC's block array). Returns the next
    step."""
    page, vaddr = pool.page(j), pool.vaddr(j * pool.bpp)
    r.store(ev, step, page + PAGE_VADDR, vaddr)
    r.store(ev, step + 1, page + PAGE_DMA, vaddr)
    if pool.variant == "orig":
        return step + 2
    r.store(ev, step + 2, page + PAGE_BLOCKS, pool.block(j * pool.bpp))
    return step + 3


def _pool_initialise_pages(r, ev, step, pool, j):
    """pool_initialise_page for each event ev[i], page j[i] (arrays, pages ascending): per
    block (in address order) the loop's reloads of pool->size and pool->allocation, the stores
    `block->dma`, `block->next_block = NULL` and `last->next_block = block`, and
    `pool->nr_blocks++`; then `last->next_block = pool->next_block` (the list is empty when a
    page is added), `pool->next_block = first`, list_add at the head of the page list and
    `pool->nr_pages++`. The reloads and the RMW in the loop: the kernel is built with
    -fno-strict-aliasing, so the stores through `block` may alias the pool's fields (reasoned,
    not seen in a disassembly). The RFC's loop is assumed the same over its block array, with
    `block->vaddr` stored too. Returns the next step."""
    ids = j[:, None] * pool.bpp + np.arange(pool.bpp, dtype=np.int64)   # (pages, bpp)
    blk, vaddr = pool.block(ids).reshape(-1), pool.vaddr(ids).reshape(-1)
    page = pool.page(j)
    r.site(ev, step, "pool_initialise_page")
    r.load(ev, step + 1, page + PAGE_VADDR)
    r.load(ev, step + 2, page + PAGE_DMA)
    s = step + 3
    if pool.variant != "orig":
        r.load(ev, s, page + PAGE_BLOCKS)
        s += 1
    ev_k = np.repeat(ev, pool.bpp)
    k = np.tile(np.arange(pool.bpp, dtype=np.int64), len(j))
    at = s + 8 * k
    r.load(ev_k, at, pool.pool + POOL_SIZE, size=4)
    r.load(ev_k, at + 1, pool.pool + POOL_ALLOCATION, size=4)
    r.store(ev_k, at + 2, blk + BLK_DMA, vaddr)
    r.store(ev_k, at + 3, blk + BLK_NEXT, 0)
    if pool.variant != "orig":
        r.store(ev_k, at + 4, blk + BLK_VADDR, vaddr)
    linked = k > 0
    r.store(ev_k[linked], at[linked] + 5, blk[np.nonzero(linked)[0] - 1] + BLK_NEXT,
            blk[linked])
    r.load(ev_k, at + 6, pool.pool + POOL_NR_BLOCKS)
    r.store(ev_k, at + 7, pool.pool + POOL_NR_BLOCKS, ids.reshape(-1) + 1)
    s += 8 * pool.bpp
    r.load(ev, s, pool.pool + POOL_NEXT_BLOCK)
    r.store(ev, s + 1, blk[pool.bpp - 1::pool.bpp] + BLK_NEXT, 0)
    r.store(ev, s + 2, pool.pool + POOL_NEXT_BLOCK, blk[::pool.bpp])
    # list_add(&page->page_list, &pool->page_list): __list_add(new, head, head->next)
    prev = j > 0
    old_first = np.where(prev, pool.page(j - 1), pool.pool + POOL_PAGE_LIST)
    r.load(ev, s + 3, pool.pool + POOL_PAGE_LIST)
    r.store(ev, s + 4, np.where(prev, old_first + PAGE_PREV, pool.pool + POOL_PAGE_LIST + 8),
            page)
    r.store(ev, s + 5, page + PAGE_LIST, old_first)
    r.store(ev, s + 6, page + PAGE_PREV, pool.pool + POOL_PAGE_LIST)
    r.store(ev, s + 7, pool.pool + POOL_PAGE_LIST, page)
    r.load(ev, s + 8, pool.pool + POOL_NR_PAGES)
    r.store(ev, s + 9, pool.pool + POOL_NR_PAGES, j + 1)
    return s + 10


def _maple_insert_pages(r, ev, step, pool, j):
    """The first round's tree stores for the entries of each page j[i] (pivot and slot of
    each), in event ev[i], after setting the root pointer."""
    starts, blocks, levels, _ = pool.tree
    r.store(ev, step, pool.pool + POOL_MT_ROOT, int(pool.node(levels[-1][0])))
    step += 1
    e = np.nonzero(blocks >= 0)[0]
    e = e[np.isin(blocks[e] // pool.bpp, j)]      # in address order: page by page
    page = blocks[e] // pool.bpp
    k = np.arange(len(e), dtype=np.int64) - np.searchsorted(page, page)   # rank in its page
    ev_k = ev[np.searchsorted(j, page)]
    leaf = pool.node(levels[0][0] + e // MAPLE_SLOTS)
    slot = e % MAPLE_SLOTS
    last = np.minimum(slot, MAPLE_PIVOTS - 1)
    r.add(ev_k, step + 2 * k, Op.STORE, leaf + MN_PIVOT + 8 * last, imm=starts[e] + pool.size - 1)
    r.add(ev_k, step + 2 * k + 1, Op.STORE, leaf + MN_SLOT + 8 * slot, imm=pool.block(blocks[e]))


def _mtree_load(r, events, step, pool, b):
    """mtree_load(&pool->mt, vaddr of block b) for each event, v6.4-v6.7: the root pointer and
    mas_start's dead-node check of the root, then per level ma_data_end (pivot[14], and
    meta.end when pivot[14] is 0: a node with at most 14 entries), ma_dead_node, the pivot scan
    up to the slot taken or the data end, ma_dead_node again and the slot."""
    starts, blocks, levels, counts = pool.tree
    e = np.searchsorted(starts, pool.vaddr(b), side="right") - 1
    r.site(events, step, "mtree_load")
    r.load(events, step + 1, pool.pool + POOL_MT_ROOT)
    root = pool.node(levels[-1][0])
    r.load(events, step + 2, root + MN_PARENT, dependent=True)
    s = step + 3
    index = [e]                          # the entry's index at each level, leaves first
    for _ in levels[1:]:
        index.append(index[-1] // MAPLE_SLOTS)
    for lvl in range(len(levels) - 1, -1, -1):
        first, nodes = levels[lvl]
        i = index[lvl] // MAPLE_SLOTS
        node = pool.node(first + i)
        slot = index[lvl] % MAPLE_SLOTS
        # entries in the node: 16 but in the last node of the level (dense layout)
        n = np.where(i == nodes - 1, counts[lvl] - MAPLE_SLOTS * (nodes - 1), MAPLE_SLOTS)
        meta = n <= MAPLE_PIVOTS - 1                 # pivot[14] is 0: ma_meta_end
        # ma_data_end: meta.end = n - 1; pivot[14] == max (15 entries) -> 14; else 15
        end = np.where(meta, n - 1, np.where(n == MAPLE_PIVOTS, MAPLE_PIVOTS - 1, MAPLE_PIVOTS))
        top = lvl == len(levels) - 1      # the root: its first load was mas_start's
        r.load(events, s, node + MN_PIVOT + 8 * (MAPLE_PIVOTS - 1), dependent=not top)
        r.load(events[meta], s + 1, node[meta] + MN_META)
        r.load(events, s + 2, node + MN_PARENT)
        # the do-while scan reads pivots[0..] until one is >= the index, at most up to `end`:
        # after each, `if (pivots[offset] >= mas->index) break`, which goes on (pivot below
        # the index) at every offset before the slot taken
        scans = np.maximum(1, np.minimum(slot + 1, end))
        for o in range(MAPLE_PIVOTS):
            take = scans > o
            r.load(events[take], s + 3 + 2 * o, node[take] + MN_PIVOT + 8 * o)
            r.exit_branch(events[take], s + 4 + 2 * o, o, slot[take], IP_MTREE_SCAN)
        r.load(events, s + 3 + 2 * MAPLE_PIVOTS, node + MN_PARENT)
        r.load(events, s + 4 + 2 * MAPLE_PIVOTS, node + MN_SLOT + 8 * slot)
        s += 5 + 2 * MAPLE_PIVOTS
    r.site(events, s, "dma_pool_free")
    return s + 1


def _pool_find_block(r, events, step, pool, b, costs):
    """RFC v2 pool_find_block: walk the page list from its head (the newest page) to the
    page holding vaddr, then index its block array by offset / size. The RFC's code was not
    read: one test per page visited, on its loaded vaddr, ending the walk at the page
    holding the block (a branch predicted at IP_FIND_BLOCK), is assumed."""
    r.site(events, step, "pool_find_block")
    r.load(events, step + 1, pool.pool + POOL_SIZE, size=4)
    r.load(events, step + 2, pool.pool + POOL_ALLOCATION, size=4)
    r.load(events, step + 3, pool.pool + POOL_PAGE_LIST)
    j = np.asarray(b, dtype=np.int64) // pool.bpp
    pos = pool.pages - 1 - j                       # the page's place in the list
    visits = pos + 1
    ev = np.repeat(events, visits)
    start = np.cumsum(visits) - visits
    within = np.arange(int(visits.sum()), dtype=np.int64) - np.repeat(start, visits)
    page = pool.page(pool.pages - 1 - within)
    s = step + 4
    r.load(ev, s + 3 * within, page + PAGE_VADDR, dependent=True)
    # the walk's exit test on page->vaddr (is vaddr in this page?): goes on before its page
    last = np.repeat(pos, visits)
    r.exit_branch(ev, s + 3 * within + 1, within, last, IP_FIND_BLOCK)
    more = within < last
    r.load(ev[more], s + 3 * within[more] + 2, page[more] + PAGE_LIST, dependent=True)
    s += 3 * (pool.pages + 1)
    r.add(events, s, Op.WORK, imm=costs.div)
    r.load(events, s + 1, pool.page(j) + PAGE_BLOCKS)
    r.site(events, s + 2, "dma_pool_free")
    return s + 3


def dmapool_test_alloc(pool, blocks, costs, memory=None):
    """One round of dmapool_test_alloc(p, blocks): `blocks` dma_pool_alloc calls, then a
    dma_pool_free of each block in the same order. Updates the pool's state; returns the
    round's Program, its op array from `memory` (an isa.event_rows.OpMemory) if given."""
    r = EventRows(SITES)
    pairs = pool.base + AT_PAIRS + PAIR_BYTES * np.arange(blocks, dtype=np.int64)
    # the allocator's choices: the free list popped from its end, then each new page's
    # blocks in address order (pool_initialise_page links them so)
    take = min(blocks, len(pool.free))
    got = np.empty(blocks, dtype=np.int64)
    got[:take] = pool.free[len(pool.free) - take:][::-1]
    del pool.free[len(pool.free) - take:]
    need = blocks - take
    new_pages = -(-need // pool.bpp)
    init_ev = take + pool.bpp * np.arange(new_pages, dtype=np.int64)   # alloc calls adding pages
    init_page = pool.pages + np.arange(new_pages, dtype=np.int64)
    got[take:] = pool.pages * pool.bpp + np.arange(need, dtype=np.int64)
    if new_pages:
        pool.pages += new_pages
        pool.free = list(range(pool.pages * pool.bpp - 1, int(got[-1]), -1))
        if pool.variant == "maple":
            pool.build_tree()
    # dma_pool_alloc: events 0 .. blocks - 1
    ev = np.arange(blocks, dtype=np.int64)
    pool_var = pool.base + AT_POOL_VAR
    r.site(ev, 0, "dmapool_test_alloc")
    r.load(ev, 1, pool_var)                       # the static `pool`, reloaded each call
    r.site(ev, 2, "dma_pool_alloc")
    r.add(ev, 3, Op.WORK, imm=costs.call)
    _lock(r, ev, 4, pool, costs)
    if new_pages:             # the list is empty: unlock, get a page, relock
        r.load(init_ev, 8, pool.pool + POOL_NEXT_BLOCK)
        t = _unlock(r, init_ev, 9, pool, costs)
        t = _pool_alloc_page(r, init_ev, t, pool, init_page)
        t = _lock(r, init_ev, t, pool, costs)
        t = _pool_initialise_pages(r, init_ev, t, pool, init_page)
        if pool.variant == "maple":
            _maple_insert_pages(r, init_ev, t, pool, init_page)
        r.site(init_ev, (1 << 22) - 1, "dma_pool_alloc")    # back from the page set-up
    nxt = np.append(pool.block(got[1:]), 0)       # the list after each pop, in this round
    nxt[init_ev[init_ev > 0] - 1] = 0             # ... where a page ran out, it was empty
    if pool.free:
        nxt[-1] = int(pool.block(pool.free[-1]))
    blk = pool.block(got)
    t = 1 << 22                                   # after any page set-up
    r.load(ev, t, pool.pool + POOL_NEXT_BLOCK)
    r.load(ev, t + 1, blk + BLK_NEXT, dependent=True)
    r.store(ev, t + 2, pool.pool + POOL_NEXT_BLOCK, nxt)
    r.load(ev, t + 3, pool.pool + POOL_NR_ACTIVE)
    r.store(ev, t + 4, pool.pool + POOL_NR_ACTIVE, ev + 1)
    _unlock(r, ev, t + 5, pool, costs)
    r.load(ev, t + 7, blk + BLK_DMA)
    r.store(ev, t + 8, pairs + PAIR_DMA, pool.vaddr(got))      # *handle = block->dma
    if pool.variant != "orig":
        r.load(ev, t + 9, blk + BLK_VADDR)
    r.site(ev, t + 10, "dmapool_test_alloc")
    r.store(ev, t + 11, pairs + PAIR_V, pool.vaddr(got))
    # dma_pool_free: events blocks .. 2 * blocks - 1, blocks in allocation order, each
    # pushed on the list: the head before a free is the block freed before it
    heads_before = np.append(pool.head(), blk[:-1])
    pool.free.extend(got.tolist())
    fev = blocks + ev
    r.site(fev, 0, "dmapool_test_alloc")
    r.load(fev, 1, pool_var)
    r.load(fev, 2, pairs + PAIR_V)
    r.load(fev, 3, pairs + PAIR_DMA)
    r.site(fev, 4, "dma_pool_free")
    r.add(fev, 5, Op.WORK, imm=costs.call)
    t = _lock(r, fev, 6, pool, costs)
    if pool.variant == "list":
        t = _pool_find_block(r, fev, t, pool, got, costs)
    elif pool.variant == "maple":
        t = _mtree_load(r, fev, t, pool, got)
    else:
        r.store(fev, t, blk + BLK_DMA, pool.vaddr(got))
        t += 1
    r.load(fev, t, pool.pool + POOL_NEXT_BLOCK)
    r.store(fev, t + 1, blk + BLK_NEXT, heads_before)
    r.store(fev, t + 2, pool.pool + POOL_NEXT_BLOCK, blk)
    r.load(fev, t + 3, pool.pool + POOL_NR_ACTIVE)
    r.store(fev, t + 4, pool.pool + POOL_NR_ACTIVE, blocks - 1 - ev)
    _unlock(r, fev, t + 5, pool, costs)
    return r.program(memory)


def dma_pool_create(program, pool):
    """The fields the hot paths read, stored once (not timed by the test), and the test's
    `pool` pointer."""
    program.store(pool.base + AT_POOL_VAR, value=pool.pool)
    program.store(pool.pool + POOL_SIZE, size=4, value=pool.size)
    program.store(pool.pool + POOL_ALLOCATION, size=4, value=pool.allocation)
    if pool.variant == "maple":
        program.store(pool.pool + POOL_MT_ROOT, value=0)
    return program
