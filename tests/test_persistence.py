"""Persistence domain: what a power failure keeps (Machine.crash), byte by byte.

ADR (cascadelake-optane's Optane, haswell-nvdimm-n's NVDIMM-N): the memory controller's
write-pending queue and the media survive, the caches do not. eADR: the caches too.
Expected contents follow the x86/PMDK persistence rules (docs/hardware.md §1.5,
docs/kernel-paths.md §2 and §6), not the emulator's output.
"""
import pytest

from emu import Machine
from isa import Op, Program

OLD, NEW = b"\x11" * 64, b"\x22" * 64


def pmem_machine(persistence="adr"):
    over = {} if persistence == "adr" else {"media.optane.persistence": persistence}
    m = Machine("cascadelake-optane", over)
    addr = m.regions["pmem0"]["base"] + 0x10000
    m.write(addr, OLD)  # set-up data is durable before the run
    return m, addr


def test_setup_data_is_durable():
    m, a = pmem_machine()
    assert m.crash().read(a, 64) == OLD


def test_plain_store_never_flushed_is_lost_under_adr():
    m, a = pmem_machine()
    m.run(Program().store(a, NEW).sfence())
    assert m.read(a, 64) == NEW          # the program sees its store
    assert m.crash().read(a, 64) == OLD  # but it sits in a cache


def test_plain_store_is_kept_under_eadr():
    m, a = pmem_machine("eadr")
    m.run(Program().store(a, NEW))
    assert m.crash().read(a, 64) == NEW


def test_store_clwb_sfence_survives_and_line_stays_cached():
    m, a = pmem_machine()
    m.run(Program().store(a, NEW).clwb(a).sfence())
    assert m.crash().read(a, 64) == NEW
    assert (a >> 6) in {line for s in m.cache_contents("l1d") for line in s}


@pytest.mark.parametrize("kind", [Op.CLWB, Op.CLFLUSHOPT])
def test_write_back_without_fence_is_not_guaranteed(kind):
    m, a = pmem_machine()
    p = Program().store(a, NEW)
    p.clwb(a) if kind == Op.CLWB else p.clflushopt(a)
    m.run(p)
    assert m.crash().read(a, 64) == OLD
    m.run(Program().sfence())            # the fence completes it
    assert m.crash().read(a, 64) == NEW


def test_clflush_is_durable_without_fence():
    m, a = pmem_machine()
    m.run(Program().store(a, NEW).clflush(a))
    assert m.crash().read(a, 64) == NEW


def test_movnt_without_sfence_may_be_lost_and_with_sfence_survives():
    m, a = pmem_machine()
    m.run(Program().movnt(a, NEW[:8]))   # a partial line still in a WC buffer
    assert m.crash().read(a, 64) == OLD
    m.run(Program().movnt(a + 8, NEW[:8]).sfence())
    assert m.crash().read(a, 64) == NEW[:16] + OLD[16:]


def test_crash_does_not_disturb_the_machine():
    m, a = pmem_machine()
    m.run(Program().store(a, NEW).clwb(a))
    before = m.stats()
    img = m.crash()
    assert img.read(a, 64) == OLD and m.stats() == before
    m.run(Program().sfence())
    assert img.read(a, 64) == OLD        # an image taken earlier does not change


def test_nt_copy_and_fence_persist_every_byte_including_partial_edges():
    m, a = pmem_machine()
    src = m.regions["dram0"]["base"] + 0x4000
    data = bytes(range(256)) * 4
    m.write(src, data)
    m.run(Program().nt_copy(a + 8, src, 1000).sfence())
    assert m.crash().read(a, 1016) == OLD[:8] + data[:1000] + bytes(8)


def test_eviction_makes_a_dirty_line_durable():
    m, a = pmem_machine()
    over = {"cache.l1d.size_bytes": 64, "cache.l1d.ways": 1, "cache.l2.size_bytes": 64,
            "cache.l2.ways": 1, "cache.llc.size_bytes": 64, "cache.llc.ways": 1}
    m = Machine("cascadelake-optane", over)
    m.write(a, OLD)
    other = m.regions["dram0"]["base"]
    m.run(Program().store(a, NEW).load(other).load(other + 64).load(other + 128))
    assert m.crash().read(a, 64) == NEW  # the store's line was pushed out to the media


def test_volatile_addresses_are_not_in_the_image():
    m, _ = pmem_machine()
    with pytest.raises(ValueError, match="persistent"):
        m.crash().read(m.regions["dram0"]["base"], 8)


# ------------------------------------------------------------------ program order
# A fence never makes the durable image older, and stores to one line become durable in
# program order: a write-back waiting for the next fence must not be applied over a newer
# copy of the same bytes that reached the persistence domain meanwhile.
X1, X2 = b"\x01" * 8, b"\x02" * 8
TINY = {"cache.l1d.size_bytes": 512, "cache.l1d.ways": 2, "cache.l2.size_bytes": 1024,
        "cache.l2.ways": 2, "cache.llc.size_bytes": 2048, "cache.llc.ways": 2,
        "cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}


def flush(p, kind, a):
    {Op.CLWB: p.clwb, Op.CLFLUSHOPT: p.clflushopt, Op.CLFLUSH: p.clflush}[kind](a)


@pytest.mark.parametrize("kind", [Op.CLWB, Op.CLFLUSHOPT, Op.CLFLUSH])
def test_eadr_fence_keeps_the_newer_store(kind):
    m, a = pmem_machine("eadr")
    p = Program().store(a, X1)
    flush(p, kind, a)
    m.run(p.store(a, X2).sfence())
    assert m.read(a, 8) == X2
    assert m.crash().read(a, 8) == X2


@pytest.mark.parametrize("kind", [Op.CLWB, Op.CLFLUSHOPT, Op.CLFLUSH])
def test_adr_newer_store_evicted_by_clflush_survives_the_fence(kind):
    m, a = pmem_machine()
    p = Program().store(a, X1)
    flush(p, kind, a)
    m.run(p.store(a, X2).clflush(a).sfence())
    assert m.crash().read(a, 8) == X2


@pytest.mark.parametrize("kind", [Op.CLWB, Op.CLFLUSHOPT, Op.CLFLUSH])
def test_adr_newer_store_evicted_by_conflicts_survives_the_fence(kind):
    m = Machine("cascadelake-optane", TINY)
    a = m.regions["pmem0"]["base"] + 0x10000
    m.write(a, OLD)
    p = Program().store(a, X1)
    flush(p, kind, a)
    p.store(a, X2)
    for k in range(1, 65):          # 64 lines mapping to a's sets: a's line leaves every level
        p.load(a + k * 4096)
    m.run(p)
    assert m.cached(a) is None
    assert m.crash().read(a, 8) == X2   # the eviction wrote X2 back: durable under ADR
    m.run(Program().sfence())
    assert m.crash().read(a, 8) == X2


@pytest.mark.parametrize("kind", [Op.CLWB, Op.CLFLUSHOPT])
def test_adr_unfenced_store_after_write_back_is_not_durable(kind):
    """The other direction: the older write-back does become durable at the fence while the
    newer store still sits in the cache (lost under ADR), byte for byte."""
    m, a = pmem_machine()
    p = Program().store(a, X1)
    flush(p, kind, a)
    m.run(p.store(a, X2).sfence())
    assert m.crash().read(a, 8) == X1
    assert m.crash().read(a + 8, 56) == OLD[8:]


def test_setup_write_supersedes_a_pending_write_back():
    m, a = pmem_machine()
    m.run(Program().store(a, X1).clwb(a))
    m.write(a, X2)                      # placed without timing: durable at once
    m.run(Program().sfence())
    assert m.crash().read(a, 8) == X2
