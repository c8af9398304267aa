"""mm/page_counter.c and include/linux/page_counter.h as emitted ops: struct page_counter's
layout before and after commit 802f1d522d5f ("mm: page_counter: re-layout structure to
reduce false cache sharing", v5.12), and the charge and uncharge walks up a hierarchy of
counters (docs/scenarios.md §6).

Sources read (store ids for read_file): the v2 patch on LKML (12504298172: its diff against
v5.11-rc1, page_counter.h blob 85bd413 -> 6795913, moves `parent` from after `max` to the
end of the struct); include/linux/page_counter.h and mm/page_counter.c of v5.10.13
(Rtoax/linux-5.10.13, 30900262066 and 30319699788; the header's fields are the patch's
context lines, so the file is the one the patch applies to).

Model departures and assumptions:
- 64-bit: every field is 8 bytes (atomic_long_t, unsigned long, a pointer), no padding:
  offsets are 8 x the field's place; the struct is 112 bytes in both layouts.
- memory.min and memory.low are unset (0, their defaults) in every counter, so
  propagate_protected_usage only reads: `c->parent`, `c->min`, then `c->min_usage` (0:
  no xchg), `c->low`, `c->low_usage`. memory.max is unset (PAGE_COUNTER_MAX): a try_charge
  never fails.
- The watermark is at its peak already (a long-running benchmark's): `new > c->watermark`
  is false, no store.
- `c->parent` is loaded twice a level, in propagate_protected_usage's test and for the
  loop's next counter (the compiler may merge them: the second is then an L1 hit fewer).
- A locked op here stores (the emulator's LOCK_RMW leaves a value, it does not add): the
  value left is the caller's running count, not the sum of every core's charges. No
  branch depends on it, so only the functional contents differ from the kernel's.
"""
from dataclasses import dataclass
from typing import Optional

LAYOUTS = ("before", "after")
# struct page_counter's fields in declaration order (include/linux/page_counter.h)
_BEFORE = ("usage", "min", "low", "high", "max", "parent", "emin", "min_usage",
           "children_min_usage", "elow", "low_usage", "children_low_usage", "watermark",
           "failcnt")
_AFTER = tuple(f for f in _BEFORE if f != "parent") + ("parent",)
FIELD_BYTES = 8
# {layout: {field: byte offset}}
OFFSETS = {name: {f: FIELD_BYTES * i for i, f in enumerate(order)}
           for name, order in (("before", _BEFORE), ("after", _AFTER))}
SIZE_BYTES = FIELD_BYTES * len(_BEFORE)


@dataclass
class PageCounter:
    """One struct page_counter at `addr`, laid out as `layout`; `parent` the next counter
    up (None: the root's). `usage` is what this model has charged to it."""
    addr: int
    layout: str
    parent: Optional["PageCounter"] = None
    usage: int = 0

    def __post_init__(self):
        if self.layout not in OFFSETS:
            raise ValueError(f"page_counter layout {self.layout!r}: one of {', '.join(LAYOUTS)}")

    def field(self, name):
        """The address of field `name`."""
        return self.addr + OFFSETS[self.layout][name]

    def chain(self):
        """This counter and its ancestors, leaf first (`for (c = counter; c; c = c->parent)`)."""
        c = self
        while c is not None:
            yield c
            c = c.parent


def propagate_protected_usage(p, c):
    """The reads of propagate_protected_usage with memory.min and memory.low unset."""
    p.load(c.field("parent"))
    if c.parent is None:
        return
    for limit, usage in (("min", "min_usage"), ("low", "low_usage")):
        p.load(c.field(limit))
        p.load(c.field(usage))


def page_counter_try_charge(p, counter, nr_pages):
    """Charge `nr_pages` to `counter` and its ancestors: per level atomic_long_add_return
    on `usage` (a LOCK XADD), the `max` test, propagate_protected_usage, the watermark test
    and the load of `parent` that finds the next level."""
    with p.function("page_counter_try_charge"):
        for c in counter.chain():
            c.usage += nr_pages
            p.lock_rmw(c.field("usage"), value=c.usage)
            p.load(c.field("max"))
            propagate_protected_usage(p, c)
            p.load(c.field("watermark"))
            p.load(c.field("parent"))
    return p


def page_counter_cancel(p, c, nr_pages):
    """atomic_long_sub_return on `usage`, then propagate_protected_usage."""
    c.usage -= nr_pages
    p.lock_rmw(c.field("usage"), value=c.usage)
    propagate_protected_usage(p, c)


def page_counter_uncharge(p, counter, nr_pages):
    """Uncharge `nr_pages` from `counter` and its ancestors: page_counter_cancel per level,
    then the load of `parent`."""
    with p.function("page_counter_uncharge"):
        for c in counter.chain():
            page_counter_cancel(p, c, nr_pages)
            p.load(c.field("parent"))
    return p
