"""mm/memcontrol.c (v5.11) as emitted ops: the memory cgroups whose `memory` page counters
kernels/page_counter.py charges, and the hierarchical statistics flush that walks them with
parent_mem_cgroup (docs/scenarios.md §6).

Sources read (store ids for read_file): include/linux/memcontrol.h of v5.11's time
(19481841): parent_mem_cgroup(memcg) reads `memcg->memory.parent` (the page counter's
field the commit moved; a later kernel reads css.parent instead), MEMCG_CHARGE_BATCH is 32;
mm/memcontrol.c of the same time (2480715): __mod_memcg_state adds to a per-CPU delta and,
once it passes MEMCG_CHARGE_BATCH, walks `for (mi = memcg; mi; mi = parent_mem_cgroup(mi))
atomic_long_add(x, &mi->vmstats[idx])`; __mod_memcg_lruvec_state does the same walk over
the per-node structs (parent_nodeinfo, through parent_mem_cgroup), and the event counters
(__count_memcg_events) theirs.

Model departures and assumptions:
- struct mem_cgroup's layout was not read: each memcg is a 4 KiB object (kmalloc'd, so line
  aligned); its `memory` counter starts `counter_offset` bytes into a line (0 by default:
  where it falls depends on the fields before it, css and id, whose sizes are not worked
  out here); the counters a flush adds to are in lines of their own (the vmstats array
  after the struct's padding, the per-node lruvec_stat in another allocation), one 8-byte
  slot per statistic.
- The per-CPU delta's update before the threshold test (a private per-CPU line) is not
  emitted: it is part of the caller's declared work.
- A flush's atomic_long_add is a LOCK_RMW; parent_mem_cgroup's test and container_of are
  not ops (they overlap the load).
- The events' flush (__count_memcg_events) and the lruvec's (__mod_memcg_lruvec_state, whose
  parent_nodeinfo adds a load of the parent's nodeinfo pointer, not emitted) are emitted as
  __mod_memcg_state's: the same walk, the same reads of `memory.parent`.
"""
from dataclasses import dataclass
from typing import Optional

from kernels.page_counter import PageCounter

MEMCG_CHARGE_BATCH = 32
MEMCG_BYTES = 4096
MEMORY_AT = 256          # the `memory` counter's line within the memcg
STATS_AT = 1024          # the lines the flushes add to
STAT_SLOTS = 8           # statistics a stats line holds (8-byte counters)


@dataclass
class MemCgroup:
    addr: int
    memory: PageCounter
    parent: Optional["MemCgroup"] = None

    def stat(self, slot):
        """The address of statistic `slot` (0 .. 2 * STAT_SLOTS - 1: the vmstats line, then
        the per-node line) this memcg's flushes add to."""
        if not 0 <= slot < 2 * STAT_SLOTS:
            raise ValueError(f"statistic slot {slot}: 0 to {2 * STAT_SLOTS - 1}")
        return self.addr + STATS_AT + 64 * (slot // STAT_SLOTS) + 8 * (slot % STAT_SLOTS)


def hierarchy(base, depth, layout, counter_offset=0):
    """`depth` memory cgroups, the root's at `base` and each child's MEMCG_BYTES further, each
    `memory` counter laid out as `layout` and charged up to its parent's; returns the leaf
    (the benchmark's cgroup)."""
    if depth < 1:
        raise ValueError(f"hierarchy depth {depth}: at least 1 (the root's cgroup)")
    if counter_offset % 8 or not 0 <= counter_offset < 64:
        raise ValueError(f"counter_offset {counter_offset}: a multiple of 8 in 0..56")
    memcg = None
    for level in range(depth):
        addr = base + MEMCG_BYTES * level
        parent_counter = memcg.memory if memcg else None
        memcg = MemCgroup(addr, PageCounter(addr + MEMORY_AT + counter_offset, layout,
                                            parent_counter), memcg)
    return memcg


def parent_mem_cgroup(p, memcg):
    """The load of `memcg->memory.parent`; returns the parent (None at the root)."""
    p.load(memcg.memory.field("parent"))
    return memcg.parent


def mod_memcg_state(p, memcg, slot, value=1):
    """__mod_memcg_state's flush of a per-CPU delta past MEMCG_CHARGE_BATCH: an
    atomic_long_add to statistic `slot` of the memcg and of each ancestor, found with
    parent_mem_cgroup."""
    with p.function("__mod_memcg_state"):
        mi = memcg
        while mi is not None:
            p.lock_rmw(mi.stat(slot), value=value)
            mi = parent_mem_cgroup(p, mi)
    return p
