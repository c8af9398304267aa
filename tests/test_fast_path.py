"""The core's register-resident path for plain loads and stores (emu._fast.plain_run) against
the general path, on random programs: identical cycles, statistics, state hash and memory.

Both take the L1's lookup, hit and memo from memmodel._l1; plain_run keeps the pipeline
scalars, the use stamp and two memo entries in registers and does its own ordering of the
steps, and its docstring promises exactly the general path's effects. Machine.plain_path =
False sends every op through the general path, so the two can be compared op for op.
"""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emu import Machine
from isa import Program

PROFILES = ("skylake-ddr4", "cascadelake-optane", "haswell-nvdimm-n")
SPAN = 1 << 16   # small enough that lines are reused and sets conflict


@st.composite
def programs(draw):
    """(ops as (kind, offset, size, arg) tuples): mostly plain loads and stores, which the
    fast path takes, some in runs of one line, mixed with what makes it hand over (flags,
    line crossings, other ops)."""
    n = draw(st.integers(1, 120))
    ops = []
    for _ in range(n):
        kind = draw(st.sampled_from(
            ["load"] * 6 + ["store"] * 5 + ["run"] * 3 + ["pair"] * 3 +
            ["dep", "cross", "movnt", "clflush", "clwb", "sfence", "mfence", "lfence", "copy",
             "work"]))
        off = draw(st.integers(0, SPAN - 64)) // 8 * 8
        size = draw(st.sampled_from([1, 2, 4, 8]))
        ops.append((kind, off, size, draw(st.integers(0, 255))))
    return ops


def build(ops, base):
    p = Program()
    for kind, off, size, arg in ops:
        a = base + off
        if kind == "load":
            p.load(a, size)
        elif kind == "run":   # loads of one line after each other (plain_run's inner loop)
            for k in range(2 + arg % 9):
                p.load((a & ~63) + (arg + 8 * k) % 64 // size * size, size,
                       dependent=(arg >> k) & 1 == 1)
        elif kind == "pair":   # a copy's words: a load of one line, a store to another
            for k in range(2 + arg % 9):
                w = (arg + 8 * k) % 64
                p.load((a & ~63) + w, 8, dependent=(arg >> k) & 1 == 1)
                p.store(((a ^ 0x2040) & ~63) + w // size * size, bytes([k]) * size)
        elif kind == "dep":
            p.load(a, size, dependent=True)
        elif kind == "store":
            p.store(a, bytes([arg]) * size)
        elif kind == "cross":
            p.load(a | 60, 8)
        elif kind == "movnt":
            p.movnt(a, bytes([arg]) * 8)
        elif kind == "clflush":
            p.clflush(a)
        elif kind == "clwb":
            p.clwb(a)
        elif kind == "copy":
            p.rep_movsb(base + (off ^ 0x8000), a, 1 + arg * 3)
        elif kind == "work":
            p.work(arg % 20)
        else:
            getattr(p, kind)()
    return p


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=st.lists(programs(), min_size=1, max_size=3), profile=st.sampled_from(PROFILES),
       region=st.integers(0, 3), functional=st.booleans(),
       policy=st.sampled_from(["lru", "plru", "fifo", "random"]),
       prefetch=st.booleans())
def test_plain_path_equals_general_path(prog, profile, region, functional, policy, prefetch):
    over = {"cache.l1d.policy": policy}
    if not prefetch:
        over.update({"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"})
    fast = Machine(profile, dict(over), functional=functional)
    general = Machine(profile, dict(over), functional=functional)
    general.plain_path = False
    r = list(fast.regions.values())[region % len(fast.regions)]
    base = r["base"] + (1 << 20 if r["size_bytes"] > 4 << 20 else 0)
    for ops in prog:
        a, b = fast.run(build(ops, base)), general.run(build(ops, base))
        assert a.cycles == b.cycles
    assert fast.stats() == general.stats()
    assert fast.state_hash() == general.state_hash()
    if functional:
        assert fast.read(base, SPAN) == general.read(base, SPAN)
