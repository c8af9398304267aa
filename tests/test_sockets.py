"""Machine(cores=N, sockets=S) (memmodel._coherence, memmodel.layout "Sockets"): the cores
socket-major, cores/S a socket, each socket its own LLC, each core on its socket's NUMA node,
and a miss snooping the other socket's caches too. Expected latencies are the profile's
(cache.llc.remote_hitm_ns, peer_hitm_ns, remote_hit_ns) in cycles, round(ns * freq_ghz),
as memmodel.tables converts every ns; expected states follow the protocol's definition
(memmodel._coherence's docstring)."""
import pytest

from emu import Machine
from isa import Program
from tests.test_coherence import state   # core k's MESI state of a line

BASE = 0x200000   # skylake-ddr4's dram0 (node 0); dram1 is node 1
NO_PF = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}
LLC = 2


def machine(cores=2, sockets=2, extra=None, **kw):
    return Machine("skylake-ddr4", dict(NO_PF, **(extra or {})), cores=cores, sockets=sockets,
                   **kw)


def cycles_of(m, key):
    """A profile latency in cycles, as the machine converts it (memmodel.tables)."""
    return int(round(m.profile.get(key) * m.freq_ghz))


def on_core(m, k, program):
    programs = [Program() for _ in range(m.cores)]
    programs[k] = program
    return m.run(programs).cores[k]


def in_llc(m, k, addr):
    """Whether core k's socket's LLC holds addr's line."""
    return (addr >> 6) in sum(m.cache_contents("llc", core=k), [])


def remote(m, k):
    return m.stats()["cores"][k]["remote"]


# ------------------------------------------------------------------ lock handoff
def test_locked_ops_at_once_pay_a_remote_hitm_across_sockets_and_a_peer_hitm_within():
    """Four cores, two a socket (0, 1 on socket 0; 2, 3 on socket 1), each a locked op on one
    line at cycle 0; the scheduler takes them in core order. Core 0 reads the line from
    memory; each next core finds it modified in the one before, its copy still being filled,
    and gets it one transfer after it arrives (as tests/test_coherence.py's three cores):
    core 1 from core 0 (same socket: peer_hitm_ns), core 2 from core 1 (the other socket:
    remote_hitm_ns), core 3 from core 2 (same socket)."""
    m = machine(cores=4)
    r = m.run([Program().lock_rmw(BASE, size=8, value=1) for _ in range(4)])
    c = [x.cycles for x in r.cores]
    peer, rmt = cycles_of(m, "cache.llc.peer_hitm_ns"), cycles_of(m, "cache.llc.remote_hitm_ns")
    assert rmt > peer
    assert [c[1] - c[0], c[2] - c[1], c[3] - c[2]] == [peer, rmt, peer]
    assert [remote(m, k)["remote_hitm"] for k in range(4)] == [0, 0, 1, 0]
    assert [m.stats()["cores"][k]["levels"]["llc"]["peer_transfers"] for k in range(4)] == \
        [0, 1, 1, 1]


def _handoffs(m, n, gap=4000, lock=(lambda p, a: p.lock_rmw(a, b"\x01" * 8))):
    """Cores 0 and 1 take a lock n times each, alternating: core 1 starts half a gap later
    and each works `gap` cycles between its takes, far longer than a transfer, so each take
    finds the line modified in the other core: 2n - 1 handoffs, n of them core 1's."""
    progs = [Program(), Program().work(gap // 2)]
    for _ in range(n):
        for p in progs:
            lock(p, BASE)
            p.work(gap)
    return m.run(progs)


@pytest.mark.parametrize("sockets,key", [(2, "cache.llc.remote_hitm_ns"),
                                         (1, "cache.llc.peer_hitm_ns")])
def test_a_lock_handed_between_sockets_costs_remote_hitm_per_handoff(sockets, key):
    """Each of core 1's n takes waits for the line's transfer (a locked op waits for it and
    younger ops for the locked op), so 100 ns more of the transfer's latency is n times
    the cycles of 100 ns more of core 1's run: across sockets remote_hitm_ns moves it,
    within one peer_hitm_ns does (and the other key not at all)."""
    n = 6
    runs = {}
    for k in ("cache.llc.remote_hitm_ns", "cache.llc.peer_hitm_ns"):
        for extra in (0.0, 100.0):
            m = machine(sockets=sockets)
            m = machine(sockets=sockets, extra={k: m.profile.get(k) + extra})
            runs[k, extra] = (_handoffs(m, n).cores[1].cycles, m)
    for k in ("cache.llc.remote_hitm_ns", "cache.llc.peer_hitm_ns"):
        (c0, m0), (c1, m1) = runs[k, 0.0], runs[k, 100.0]
        step = cycles_of(m1, k) - cycles_of(m0, k)   # round() of each, as the machine has
        assert c1 - c0 == (n * step if k == key else 0), k
    m = runs[key, 0.0][1]
    counts = [m.stats()["cores"][k]["levels"]["llc"]["peer_transfers"] for k in (0, 1)]
    assert counts == [n - 1, n]
    if sockets == 2:
        assert [remote(m, k)["remote_hitm"] for k in (0, 1)] == [n - 1, n]
        assert m.stats()["remote"] == {"remote_hitm": 2 * n - 1, "remote_hits": 0}
    else:
        assert "remote" not in m.stats()


def test_each_handoff_across_sockets_costs_remote_minus_peer_hitm_more_than_within():
    """The same handoffs on one socket and on two: core 1's work and locked ops are the
    same, its every take a transfer from core 0 and its line never from memory, so its run
    is longer on two sockets by n times (remote_hitm - peer_hitm) cycles."""
    n = 6
    one, two = machine(sockets=1), machine(sockets=2)
    c1 = _handoffs(one, n).cores[1].cycles
    c2 = _handoffs(two, n).cores[1].cycles
    rmt, peer = cycles_of(two, "cache.llc.remote_hitm_ns"), cycles_of(two, "cache.llc.peer_hitm_ns")
    assert c2 - c1 == n * (rmt - peer)


def test_a_qspinlock_handed_between_sockets_is_a_remote_hitm_per_take():
    """kernels/qspinlock.py's spin_lock (a LOCK CMPXCHG) and spin_unlock (a store) on two
    sockets: every take after the first finds the line modified in the other socket's
    core, as every unlock leaves it there."""
    from kernels.qspinlock import spin_lock, spin_unlock
    n = 4
    m = machine(hot_lines=1 << 10)

    def take(p, a):
        spin_lock(p, a)
        spin_unlock(p, a)
    _handoffs(m, n, lock=take)
    assert [remote(m, k)["remote_hitm"] for k in (0, 1)] == [n - 1, n]


# ------------------------------------------------------------------ NUMA node per core
def test_a_cores_node_is_its_socket():
    """Core 0 (socket 0) reading dram0 (node 0) and core 1 (socket 1) reading dram1 (node
    1) are both local: the same cycles. Core 1 reading dram0 is remote, as one socket's
    machine on node 1 (Machine(node=1)) reading it is: the same cycles."""
    dram1 = Machine("skylake-ddr4").regions["dram1"]["base"]
    m = machine()
    local0 = on_core(m, 0, Program().load(BASE)).cycles
    local1 = on_core(m, 1, Program().load(dram1)).cycles
    remote1 = on_core(m, 1, Program().load(BASE + 4096)).cycles
    assert local0 == local1
    one = Machine("skylake-ddr4", dict(NO_PF), node=1)
    one.run(Program().load(dram1))   # the same history: one local line first
    assert remote1 == one.run(Program().load(BASE + 4096)).cycles > local0


# ------------------------------------------------------------------ one LLC per socket
def test_each_socket_has_its_own_llc():
    """A line core 0 (socket 0) loaded is in socket 0's LLC and not in socket 1's; cores of
    one socket see one LLC."""
    m = machine(cores=4)
    on_core(m, 0, Program().load(BASE))
    assert in_llc(m, 0, BASE) and in_llc(m, 1, BASE)
    assert not in_llc(m, 2, BASE) and not in_llc(m, 3, BASE)
    assert m.cached(BASE, core=0) == "l1d" and m.cached(BASE, core=1) == "llc"
    assert m.cached(BASE, core=2) is None


def test_a_clean_line_from_the_other_socket_is_a_remote_hit():
    """Core 1 (socket 1) reads a line core 0 holds alone and clean: the other socket's
    cache sends it (remote_hit_ns: 100 ns more of it, 100 ns more of core 1's load); both
    end Shared."""
    cyc = []
    for extra in (0.0, 100.0):
        m = machine()
        m = machine(extra={"cache.llc.remote_hit_ns": m.profile.get("cache.llc.remote_hit_ns")
                           + extra})
        r = m.run([Program().load(BASE), Program().work(5000).lfence().load(BASE)])
        cyc.append((r.cores[1].cycles, cycles_of(m, "cache.llc.remote_hit_ns")))
        assert state(m, 0, BASE) == state(m, 1, BASE) == "S"
        assert remote(m, 1) == {"remote_hitm": 0, "remote_hits": 1}
    assert cyc[1][0] - cyc[0][0] == cyc[1][1] - cyc[0][1]


def test_an_rfo_invalidates_the_copies_on_both_sockets():
    """Cores 0, 1 (socket 0) and 2 (socket 1) read a line: all Shared. Core 3 (socket 1)
    stores to it: every other copy, the other socket's LLC's included, is invalidated."""
    m = machine(cores=4)
    for k in (0, 1, 2):
        on_core(m, k, Program().load(BASE))
    assert [state(m, k, BASE) for k in range(4)] == ["S", "S", "S", "I"]
    assert in_llc(m, 0, BASE) and in_llc(m, 2, BASE)
    on_core(m, 3, Program().store(BASE, b"x" * 8))
    assert [state(m, k, BASE) for k in range(4)] == ["I", "I", "I", "M"]
    assert not in_llc(m, 0, BASE)
    # a read for ownership that had to invalidate the other socket's copies: a remote one
    assert remote(m, 3) == {"remote_hitm": 0, "remote_hits": 1}


def test_a_read_of_a_line_modified_on_the_other_socket_leaves_both_shared():
    m = machine()
    on_core(m, 0, Program().store(BASE, b"12345678"))
    on_core(m, 1, Program().load(BASE))
    assert state(m, 0, BASE) == state(m, 1, BASE) == "S"
    assert remote(m, 1) == {"remote_hitm": 1, "remote_hits": 0}
    assert m.read(BASE, 8) == b"12345678"


def test_a_flush_on_one_socket_drops_the_other_sockets_modified_copy():
    m = machine()
    on_core(m, 1, Program().store(BASE, b"abcdefgh"))
    on_core(m, 0, Program().clflush(BASE).mfence())
    assert state(m, 1, BASE) == "I" and not in_llc(m, 1, BASE)
    assert m.read(BASE, 8) == b"abcdefgh"


# ------------------------------------------------------------------ c2c
def test_c2c_counts_remote_and_local_hitm():
    """Four cores, two a socket, each a locked op on one line at once (the first test):
    three HITMs, one of them remote (core 2's)."""
    m = machine(cores=4, hot_lines=1 << 10)
    m.run([Program().lock_rmw(BASE, size=8, value=1) for _ in range(4)])
    line, = m.run_profile().c2c(1)
    assert (line.hitm, line.rmt_hitm, line.lcl_hitm) == (3, 1, 2)
    assert line.cores[2]["rmt_hitm"] == 1 and line.cores[1]["rmt_hitm"] == 0
    j = m.run_profile().to_json()["c2c"][0]
    assert (j["hitm"], j["lcl_hitm"], j["rmt_hitm"]) == (3, 2, 1)


def test_c2c_text_has_lcl_and_rmt_hitm_columns():
    from emu.studies.profile_cmd import c2c_text
    m = machine(hot_lines=1 << 10)
    _handoffs(m, 3)
    text = c2c_text("x", m.run_profile(), 5)
    head = next(ln for ln in text.splitlines() if "Rmt HITM" in ln)
    assert "Lcl HITM" in head
    row = next(ln for ln in text.splitlines() if f"{BASE:#x}" in ln)
    assert row.split()[3:6] == ["5", "0", "5"]   # HITM, Lcl HITM, Rmt HITM


# ------------------------------------------------------------------ determinism, input
def test_the_same_programs_twice_give_the_same_results_and_state():
    def once():
        m = machine(cores=4, extra={})
        progs = [Program().lock_rmw(BASE, size=8, value=k).load(BASE + 64 * k).store(
            BASE + 4096, b"z" * 8).mfence() for k in range(4)]
        r = m.run(progs)
        return [c.cycles for c in r.cores], m.stats()["remote"], m.state_hash()
    assert once() == once()


@pytest.mark.parametrize("kw,match", [
    ({"sockets": 0}, r"sockets=0.*2 socket"),
    ({"sockets": 3, "cores": 3}, r"sockets=3.*2 socket"),
    ({"sockets": 2, "cores": 3}, r"cores=3, sockets=2.*multiple"),
    ({"sockets": 2}, r"cores=1, sockets=2.*multiple"),
    ({"sockets": 2, "cores": 58}, r"cores=58, sockets=2.*28 core"),
    ({"sockets": 2, "cores": 2, "node": 1}, r"node=1, sockets=2"),
])
def test_bad_sockets_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        Machine("skylake-ddr4", **kw)


def test_sockets_must_be_an_integer_and_the_profile_must_have_them():
    with pytest.raises(TypeError, match="sockets"):
        Machine("skylake-ddr4", cores=2, sockets=2.0)
    from memmodel.profile import load_raw
    raw = load_raw("skylake-ddr4")[0]
    del raw["core"]["sockets"]
    with pytest.raises(ValueError, match=r"sockets=2.*1 socket"):
        Machine(raw, cores=2, sockets=2)
    raw = load_raw("skylake-ddr4")[0]
    del raw["cache"]["llc"]["remote_hit_ns"]
    with pytest.raises(ValueError, match="remote_hit_ns"):
        Machine(raw, cores=2, sockets=2)
    Machine(raw, cores=2)   # one socket needs no remote latency


def test_every_word_of_every_socket_has_exactly_one_role():
    """As tests/test_cores.py's check, with two sockets: the second socket's LLC blocks and
    the socket section's added words included; the second socket's LLC words have the
    roles of the first's."""
    import numpy as np
    m = machine(cores=4)
    lay, S = m.layout, m.S
    count = np.zeros(len(S), dtype=np.int64)
    role = {}
    for idx, r in lay.words(S):
        for i in np.asarray(idx).reshape(-1):
            role[int(i)] = r
        np.add.at(count, np.asarray(idx).reshape(-1), 1)
    in_section = np.zeros(len(S), dtype=bool)
    for name in lay.shapes:
        for idx in lay.indices(name):
            in_section[idx.reshape(-1)] = True
    assert (count[in_section] == 1).all(), np.flatnonzero(in_section & (count != 1))
    assert (count[~in_section] == 0).all()
    for name in ("tags", "repl", "ready", "flags"):
        t0, t1 = lay.indices(name)[-2:]   # the two sockets' LLC blocks
        assert len(t0) == len(t1) > 0
        assert [role[int(i)] for i in t0] == [role[int(i)] for i in t1], name


def test_a_snapshot_of_two_sockets_continues_identically(tmp_path):
    m = machine(cores=4)
    m.run([Program().lock_rmw(BASE, size=8, value=k).store(BASE + 64 * k, b"s" * 8)
           for k in range(4)])
    m.save(tmp_path / "m.zip")
    m2 = Machine.load(tmp_path / "m.zip")
    assert m2.layout.sockets == 2 and m2.state_hash() == m.state_hash()
    progs = [Program().load(BASE + 64 * ((k + 1) % 4)).lock_rmw(BASE, size=8, value=9)
             for k in range(4)]
    r, r2 = m.run(progs), m2.run(progs)
    assert [c.cycles for c in r.cores] == [c.cycles for c in r2.cores]
    assert m.state_hash() == m2.state_hash() and m.stats() == m2.stats()


def test_an_inclusive_llc_eviction_drops_its_own_sockets_copies_only():
    """broadwell-ddr4's L3 is inclusive; cut to one set of 20 ways a socket. Cores 1 (socket
    0) and 2 (socket 1) load a line; core 0's 20 loads of other lines evict it from socket
    0's L3, and core 1's copies go with it; core 2's stay, in socket 1's L3 too."""
    m = Machine("broadwell-ddr4", dict(NO_PF, **{"cache.llc.size_bytes": 20 * 64}), cores=4,
                sockets=2)
    on_core(m, 1, Program().load(BASE))
    on_core(m, 2, Program().load(BASE))
    assert state(m, 1, BASE) == state(m, 2, BASE) == "S"
    p = Program()
    for i in range(1, 21):
        p.load(BASE + 4096 * i)
    on_core(m, 0, p)
    assert not in_llc(m, 0, BASE) and state(m, 1, BASE) == "I"
    assert in_llc(m, 2, BASE) and state(m, 2, BASE) == "S"


def test_a_clwb_on_one_socket_writes_back_the_other_sockets_modified_line():
    """As tests/test_coherence.py's flush, across sockets: core 1 (socket 1) stores to a
    persistent line; core 0's CLWB and SFENCE make it durable (cascadelake-optane, ADR) and
    leave core 1's copy clean."""
    m = Machine("cascadelake-optane", dict(NO_PF), cores=2, sockets=2)
    a = m.regions["pmem0"]["base"] + 0x1000
    on_core(m, 1, Program().store(a, b"\x55" * 64))
    assert state(m, 1, a) == "M" and m.crash().read(a, 64) != b"\x55" * 64
    on_core(m, 0, Program().clwb(a).sfence())
    assert state(m, 1, a) == "E"
    assert m.crash().read(a, 64) == b"\x55" * 64
