"""Coherence between the cores of one Machine (memmodel._coherence): MESI over each core's
private levels, HIT and HITM transfers at the profile's sourced latencies, invalidations on
a read for ownership, write-back on a downgrade, flushes and an inclusive LLC's evictions in
every core. The expected states follow the protocol's definition (module docstring); the
expected latencies are the profile's: a test changes one latency and checks that the
access's cycles move by exactly that much."""
import pytest

from emu import Machine
from isa import Program
from memmodel import cache as cm
from memmodel.layout import MT

BASE = 0x200000   # skylake-ddr4's and broadwell-ddr4's first region (DRAM)
NO_PF = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}


def machine(profile="skylake-ddr4", extra=None, cores=2):
    return Machine(profile, dict(NO_PF, **(extra or {})), cores=cores)


def on_core(m, k, program):
    """`program` on core k alone (the others' programs empty)."""
    programs = [Program() for _ in range(m.cores)]
    programs[k] = program
    return m.run(programs).cores[k]


def state(m, k, addr):
    """Core k's MESI state of addr's line, from its private levels' flags (the union of its
    L1D's and L2's copies); 'I' when neither holds it."""
    S = m.core_state(k)
    held = [cm.flags(S, b) for lvl in (0, 1) if (b := cm.lookup(S, lvl, addr >> 6)) >= 0]
    if not held:
        return "I"
    flags = 0
    for f in held:
        flags |= f
    if flags & cm.F_SHARED:
        assert not flags & cm.F_DIRTY, "a shared copy is never dirty"
        return "S"
    return "M" if flags & cm.F_DIRTY else "E"


def llc_dirty(m, addr):
    b = cm.lookup(m.S, 2, addr >> 6)
    return b >= 0 and bool(cm.flags(m.S, b) & cm.F_DIRTY)


def levels(m, k):
    return m.stats()["cores"][k]["levels"]


def test_a_read_of_a_line_modified_in_another_core_is_a_hitm_and_both_end_shared():
    m = machine()
    on_core(m, 0, Program().store(BASE, b"12345678"))
    assert state(m, 0, BASE) == "M" and state(m, 1, BASE) == "I"
    on_core(m, 1, Program().load(BASE))
    assert state(m, 0, BASE) == state(m, 1, BASE) == "S"
    assert llc_dirty(m, BASE)   # the modified data written back on the downgrade
    assert levels(m, 1)["llc"]["peer_transfers"] == 1
    assert levels(m, 0)["llc"]["peer_transfers"] == 0


def test_a_read_of_a_line_another_core_holds_alone_and_clean_is_a_snoop_hit():
    m = machine()
    on_core(m, 0, Program().load(BASE))
    assert state(m, 0, BASE) == "E"
    on_core(m, 1, Program().load(BASE))
    assert state(m, 0, BASE) == state(m, 1, BASE) == "S"
    assert levels(m, 1)["llc"]["peer_hits"] == 1 and levels(m, 1)["llc"]["peer_transfers"] == 0
    assert not llc_dirty(m, BASE)


def test_a_line_no_other_core_holds_is_read_exclusive():
    m = machine()
    on_core(m, 1, Program().load(BASE + 4096))   # another line
    on_core(m, 0, Program().load(BASE))
    assert state(m, 0, BASE) == "E" and state(m, 1, BASE) == "I"
    assert levels(m, 0)["llc"]["peer_hits"] == levels(m, 0)["llc"]["peer_transfers"] == 0


def test_a_store_invalidates_every_other_copy():
    m = machine(cores=3)
    on_core(m, 0, Program().load(BASE))
    on_core(m, 1, Program().load(BASE))
    assert state(m, 0, BASE) == state(m, 1, BASE) == "S"
    on_core(m, 0, Program().store(BASE, b"x"))   # an upgrade of core 0's shared copy
    assert state(m, 0, BASE) == "M" and state(m, 1, BASE) == "I"
    assert levels(m, 0)["l1d"]["peer_upgrades"] == 1
    on_core(m, 2, Program().store(BASE + 8, b"y"))   # an RFO: core 0's modified copy moves
    assert state(m, 2, BASE) == "M" and state(m, 0, BASE) == "I"
    assert levels(m, 2)["llc"]["peer_transfers"] == 1


@pytest.mark.parametrize("key,first", [("cache.llc.peer_hitm_ns", "store"),
                                       ("cache.llc.peer_hit_ns", "load")])
def test_the_transfer_costs_the_profiles_latency(key, first):
    """Core 1 loads a line core 0 stored (HITM) or loaded (HIT), once its work is done (the
    LFENCE: no load issues before) and core 0's ops long are; the load is core 1's last op
    and its data the end of its run, so 100 ns more of the transfer's latency is 100 ns
    more of core 1's cycles."""
    cycles = []
    for extra in (0.0, 100.0):
        m = machine()
        ns = m.profile.get(key) + extra
        m = machine(extra={key: ns})
        p0 = Program().store(BASE, b"abcdefgh") if first == "store" else Program().load(BASE)
        r = m.run([p0, Program().work(5000).lfence().load(BASE)])
        cycles.append(r.cores[1].cycles)
    assert cycles[1] - cycles[0] == round(100.0 * m.freq_ghz)


def test_cores_taking_one_line_at_once_wait_for_each_others_transfers():
    """Three cores' locked ops on one line at cycle 0 (the scheduler takes core 0, 1, 2 in
    turn): core 0 reads it from memory; core 1 finds core 0's copy still being filled and
    gets it one HITM after it arrives; core 2 one HITM after core 1's arrives. Each locked
    op's line arrives long after its own latency, so the cores' ends lie one HITM apart."""
    m = machine(cores=3)
    r = m.run([Program().lock_rmw(BASE, size=8, value=1) for _ in range(3)])
    hitm = m.core_state(0)[MT.PEER]
    c = [x.cycles for x in r.cores]
    assert c[1] - c[0] == c[2] - c[1] == hitm


def _ping_pong(m, a0, a1, n, gap=4000, locked=False):
    """Cores 0 and 1 write a0 and a1 n times each, alternating: core 1 starts half a gap
    later and each waits `gap` cycles of work between its writes, far longer than one
    write's transfer, so each write comes after the other core's last one."""
    progs = [Program(), Program().work(gap // 2)]
    for _ in range(n):
        for p, a in zip(progs, (a0, a1)):
            if locked:
                p.lock_rmw(a, b"\x01" * 8)
            else:
                p.store(a, b"\x01" * 8).mfence()
            p.work(gap)
    return m.run(progs)


def test_a_contended_locked_counter_bounces_its_line_once_per_increment():
    """Each locked op after the first finds the line modified in the other core: 2n - 1
    HITM transfers, n - 1 on core 0 and n on core 1."""
    m, n = machine(), 10
    _ping_pong(m, BASE, BASE, n, locked=True)
    assert levels(m, 0)["llc"]["peer_transfers"] == n - 1
    assert levels(m, 1)["llc"]["peer_transfers"] == n


def test_false_sharing_bounces_the_line_and_separate_lines_do_not():
    m, n = machine(), 8
    _ping_pong(m, BASE, BASE + 32, n)   # two fields of one line
    assert sum(levels(m, k)["llc"]["peer_transfers"] for k in (0, 1)) == 2 * n - 1
    m = machine()
    _ping_pong(m, BASE, BASE + 64, n)   # the same fields a line apart
    assert sum(levels(m, k)["llc"]["peer_transfers"] + levels(m, k)["llc"]["peer_hits"]
               for k in (0, 1)) == 0


def test_an_inclusive_llc_eviction_drops_every_cores_copy():
    """broadwell-ddr4's L3 is inclusive: cut to one set of 20 ways, core 0's 20 loads of
    other lines evict the line core 1 loaded, and core 1's copies go with it."""
    m = machine("broadwell-ddr4", {"cache.llc.size_bytes": 20 * 64})
    on_core(m, 1, Program().load(BASE))
    assert state(m, 1, BASE) == "E"
    p = Program()
    for i in range(1, 21):
        p.load(BASE + 4096 * i)
    on_core(m, 0, p)
    assert cm.lookup(m.S, 2, BASE >> 6) < 0
    assert state(m, 1, BASE) == "I"


def test_a_flush_writes_back_and_drops_another_cores_modified_copy():
    m = machine("cascadelake-optane")
    a = m.regions["pmem0"]["base"] + 0x1000
    on_core(m, 1, Program().store(a, b"\x55" * 64))
    assert state(m, 1, a) == "M"
    before = m.stats()["media"]
    on_core(m, 0, Program().clflush(a).sfence())
    assert state(m, 1, a) == "I" and cm.lookup(m.S, 2, a >> 6) < 0
    assert m.crash().read(a, 64) == b"\x55" * 64   # written back to the media by the flush
    assert m.stats()["media"] != before


def test_one_core_machine_keeps_the_peer_ops_model():
    """With one core the other core is the peer ops' (PEER_WRITE / PEER_READ): a load after
    a peer write is a cache-to-cache transfer, counted as before."""
    m = Machine("skylake-ddr4", NO_PF)
    m.run(Program().load(BASE).peer_write(BASE, b"z").load(BASE))
    assert m.stats()["levels"]["llc"]["peer_transfers"] == 1


# ---------------------------------------------------------------------- the c2c report

def test_c2c_names_the_falsely_shared_line_and_each_cores_offsets():
    n = 8
    m = Machine("skylake-ddr4", NO_PF, cores=2, hot_lines=64)
    _ping_pong(m, BASE + 8, BASE + 40, n)
    (line,) = m.run_profile().c2c()
    assert line.addr == BASE and line.hitm == 2 * n - 1
    assert line.cores[0]["offsets"] == [8] and line.cores[1]["offsets"] == [40]
    assert line.cores[0]["stores"] == line.cores[1]["stores"] == n
    assert line.false_sharing
    m = Machine("skylake-ddr4", NO_PF, cores=2, hot_lines=64)
    _ping_pong(m, BASE + 8, BASE + 64 + 40, n)   # the fields a line apart: nothing shared
    assert m.run_profile().c2c() == []


def test_c2c_of_a_truly_shared_counter_is_not_false_sharing():
    n = 5
    m = Machine("skylake-ddr4", NO_PF, cores=2, hot_lines=64)
    _ping_pong(m, BASE, BASE, n, locked=True)
    (line,) = m.run_profile().c2c()
    assert line.hitm == 2 * n - 1 and not line.false_sharing
    assert line.cores[0]["offsets"] == line.cores[1]["offsets"] == [0]


def test_c2c_text_and_json():
    from emu.studies.profile_cmd import c2c_text
    m = Machine("skylake-ddr4", NO_PF, cores=2, hot_lines=64)
    _ping_pong(m, BASE + 8, BASE + 40, 3)
    p = m.run_profile()
    out = c2c_text("fs", p, 10)
    assert f"{BASE:#x}" in out and "yes" in out and "0x8" in out and "0x28" in out
    (j,) = p.to_json()["c2c"]
    assert j["hitm"] == 5 and j["false_sharing"] and j["cores"]["1"]["offsets"] == [40]
