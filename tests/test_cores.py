"""Machine(cores=N), stage 1 (memmodel.layout, "Cores"): every section declares whether it is
per core or shared; each core has its own copy of the private ones in its view of the state,
and the shared ones are the same words from every view; one core's machine is what it was."""
import numpy as np
import pytest

from emu import Machine, MemoryLimitFault, UnmappedAccess, timeshift
from emu import state as st
from emu.limits import check_machine_args
from isa import Program
from memmodel import cache as cm
from memmodel import memory as mm
from memmodel.layout import EXACT, LV, LV_AT, MH, MM, PRIVATE, SHARED, SK, Layout

# broadwell-ddr4: 32 KiB L1D and 256 KiB L2 per core, a 55 MiB inclusive L3 the cores share
L1_BLOCKS, L2_BLOCKS = 32768 // 64, 262144 // 64
LLC = 2


@pytest.fixture(scope="module")
def two():
    return Machine("broadwell-ddr4", cores=2)


def _at(m, k, slot):
    """The buffer index of the section core k's header slot names."""
    return k * m.layout.fixed_words + int(m.core_state(k)[slot])


def test_every_section_declares_private_or_shared(two):
    assert set(two.layout.share) == set(two.layout.shapes)
    assert set(two.layout.share.values()) == {PRIVATE, SHARED}
    lay = Layout(MM)
    with pytest.raises(TypeError, match="share"):
        lay.add("reg", 3, EXACT)
    with pytest.raises(ValueError, match="'reg'.*'both'"):
        lay.add("reg", 3, EXACT, share="both")
    with pytest.raises(ValueError, match="'lv' is fixed"):
        lay.add("lv", 3, EXACT, share=SHARED)


def test_every_word_of_every_cores_copy_has_exactly_one_role(two):
    lay, S = two.layout, two.S
    count = np.zeros(len(S), dtype=np.int64)
    for idx, _ in lay.words(S):
        np.add.at(count, np.asarray(idx).reshape(-1), 1)
    in_section = np.zeros(len(S), dtype=bool)
    for name in lay.shapes:
        for idx in lay.indices(name):
            in_section[idx.reshape(-1)] = True
    f = lay.fixed_words   # core 1's fixed sections, from its header slots
    assert in_section[f + st.SC.NOW] and in_section[f + LV_AT]
    assert (count[in_section] == 1).all(), np.flatnonzero(in_section & (count != 1))
    assert (count[~in_section] == 0).all()   # header slots and alignment gaps


def test_private_sections_are_each_cores_own_copy(two):
    S0, S1 = two.core_state(0), two.core_state(1)
    for slot in (MH.TAGS, MH.LFB, MH.WC, MH.CCNT):
        assert _at(two, 0, slot) != _at(two, 1, slot), slot
    before = S0[S0[MH.TAGS]:S0[MH.TAGS] + L1_BLOCKS].copy()
    S1[S1[MH.TAGS]:S1[MH.TAGS] + L1_BLOCKS] = 12345   # core 1's L1D tags
    assert (S0[S0[MH.TAGS]:S0[MH.TAGS] + L1_BLOCKS] == before).all()
    S1[S1[MH.TAGS]:S1[MH.TAGS] + L1_BLOCKS] = cm.INVALID
    # the fixed sections too: each core's clock is its own word
    S1[st.SC.NOW] = 7
    assert S0[st.SC.NOW] == 0
    S1[st.SC.NOW] = 0


def test_shared_sections_are_the_same_words_from_every_view(two):
    for slot in (MH.CHAN, MH.MCNT, MH.REG, MH.CHUNK_DIR, MH.ALLOC, MH.REGION_CTR):
        assert _at(two, 0, slot) == _at(two, 1, slot), slot
    S0, S1 = two.core_state(0), two.core_state(1)
    S0[S0[MH.MCNT]] += 3
    assert S1[S1[MH.MCNT]] == S0[S0[MH.MCNT]]
    S0[S0[MH.MCNT]] -= 3


def test_the_llc_is_one_copy_and_the_l2_one_per_core(two):
    S0, S1 = two.core_state(0), two.core_state(1)
    lv0, lv1 = two.layout.view(S0, "lv"), two.layout.view(S1, "lv")
    f = two.layout.fixed_words
    # each core's L2 lies after its own L1D; core 1's L1D and L2 after core 0's
    assert lv0[1, LV.BASE] == lv1[1, LV.BASE] == L1_BLOCKS
    assert _at(two, 1, MH.TAGS) - _at(two, 0, MH.TAGS) == L1_BLOCKS + L2_BLOCKS
    for slot in (MH.TAGS, MH.REPL, MH.READY, MH.FLAGS):   # one BASE for the four sections
        llc0 = _at(two, 0, slot) + lv0[LLC, LV.BASE]
        assert llc0 == f + _at(two, 1, slot) - f + lv1[LLC, LV.BASE], slot
        assert llc0 == two.layout.offsets[slot.name.lower()] + 2 * (L1_BLOCKS + L2_BLOCKS)


def test_a_line_core_0_loads_is_in_the_shared_llc_seen_from_core_1():
    m = Machine("broadwell-ddr4", cores=2)
    addr = m.regions[m.region_names[0]]["base"] + 0x40000
    m.run(Program().load(addr))
    line = addr >> 6
    S1 = m.core_state(1)
    assert cm.lookup(m.S, 0, line) >= 0 and cm.lookup(m.S, LLC, line) >= 0
    assert cm.lookup(S1, 0, line) < 0 and cm.lookup(S1, 1, line) < 0
    # inclusive: the L3 has it, the same block from both views (its index is from the view's
    # own tags section)
    assert (_at(m, 1, MH.TAGS) + cm.lookup(S1, LLC, line)
            == _at(m, 0, MH.TAGS) + cm.lookup(m.S, LLC, line))


def test_memory_growth_and_a_resized_state_keep_the_views_consistent():
    m = Machine("broadwell-ddr4", cores=2)
    base = m.regions[m.region_names[0]]["base"]
    S1 = m.core_state(1)
    S1[S1[st.EH.BPRED]] = 3   # a mark in core 1's branch predictor
    data = np.arange(64 * 4096, dtype=np.uint8) * 7
    m.write(base + (3 << 30), data)   # new chunks and frames
    p = Program()
    for i in range(40):   # more sites than the table's 16 rows: a new, larger state
        p.site(f"f{i}").load(base + 64 * i)
    m.run(p)
    assert m.layout.shapes["site_ctr"][0] >= 41
    S0, S1 = m.core_state(0), m.core_state(1)
    assert S1[S1[st.EH.BPRED]] == 3
    for slot in (MH.ALLOC, MH.CHUNK_DIR):
        assert _at(m, 0, slot) == _at(m, 1, slot)
    got = mm.read_bytes(S1, m.pt, m.frames, base + (3 << 30), len(data))
    assert got.tobytes() == data.tobytes()
    assert m.stats()["cores"][1]["sites"]["f3"]["ops"] == 0


def test_counters_are_per_core_and_summed_and_reset_on_every_core(two):
    S1 = two.core_state(1)
    ccnt1 = two.layout.view(S1, "ccnt")
    ccnt1[0, cm.COUNTER_NAMES.index("load_hits")] = 5
    s = two.stats()
    own0 = s["cores"][0]["levels"]["l1d"]["load_hits"]
    assert s["cores"][1]["levels"]["l1d"]["load_hits"] == 5
    assert s["levels"]["l1d"]["load_hits"] == own0 + 5
    h = two.state_hash()
    ccnt1[0, cm.COUNTER_NAMES.index("load_hits")] = 6
    assert two.state_hash() != h   # the hash covers core 1's words
    two.reset_stats()
    assert (two.layout.view(S1, "ccnt") == 0).all()


def test_a_time_shift_moves_every_cores_clock():
    m = Machine("broadwell-ddr4", cores=2)
    m.core_state(1)[st.SC.NOW] = 100
    timeshift.shift(m, {"cycles": 10})
    assert m.core_state(0)[st.SC.NOW] == 10 and m.core_state(1)[st.SC.NOW] == 110


def test_a_two_core_machine_saves_and_loads(tmp_path):
    m = Machine("broadwell-ddr4", cores=2)
    m.core_state(1)[st.SC.NOW] = 42
    m.save(tmp_path / "m.emu.zip")
    m2 = Machine.load(tmp_path / "m.emu.zip")
    assert m2.cores == 2 and m2.core_state(1)[st.SC.NOW] == 42
    assert m2.state_hash() == m.state_hash()


def test_the_cores_are_one_to_the_profiles_cores_per_socket():
    with pytest.raises(ValueError, match="cores=29.*28 core"):
        Machine("skylake-ddr4", cores=29)
    with pytest.raises(ValueError, match="cores=0"):
        Machine("skylake-ddr4", cores=0)
    for bad in (2.0, True, "2"):
        with pytest.raises(TypeError, match="cores"):
            Machine("skylake-ddr4", cores=bad)
    # a profile without core.cores_per_socket has one core
    with pytest.raises(ValueError, match="cores=2.*1 core"):
        check_machine_args([], functional=True, smap=False, node=0, seed=0,
                           memory_limit_bytes=0, hot_lines=0, cores=2, cores_per_socket=1)


# ---------------------------------------------------------------- one program per core
def _mixed(base):
    """Ops of most kinds, some looking ahead (LFENCE's refill, a flush's RFOs ahead)."""
    p = Program()
    for i in range(30):
        p.load(base + 64 * i).store(base + 4096 + 64 * i, b"abcdefgh")
        if i % 7 == 0:
            p.clflush(base + 64 * i).lfence().work(20).sfence()
        if i % 5 == 0:
            p.load(base + 64 * i, dependent=True).clwb(base + 4096).mfence()
    return p


def test_a_program_run_op_by_op_by_the_scheduler_is_the_program_run_at_once():
    base = 0x100000
    a, b = Machine("skylake-ddr4"), Machine("skylake-ddr4")
    ra = a.run(_mixed(base))
    rb = b.run([_mixed(base)])
    assert rb.cores[0].cycles == ra.cycles and rb.cycles == ra.cycles
    assert a.state_hash() == b.state_hash()


def test_the_core_whose_clock_is_earliest_runs_next():
    """Both cores store to one address: the store later in simulated time is the one memory
    keeps, whichever core's program holds it; at equal clocks core 0 goes first."""
    addr = 0x200000
    for late, expect in ((1, b"core1..."), (0, b"core0..."), (None, b"core1...")):
        m = Machine("skylake-ddr4", cores=2)
        if late is not None:
            m.core_state(late)[st.SC.NOW] = 100000
        r = m.run([Program().store(addr, b"core0..."), Program().store(addr, b"core1...")])
        assert m.read(addr, 8) == expect, late
        assert r.ops == 2 and [c.ops for c in r.cores] == [1, 1]


def test_each_core_counts_its_own_accesses_and_the_run_is_deterministic():
    hashes = []
    for _ in range(2):
        m = Machine("skylake-ddr4", cores=2)
        p1 = Program()
        for i in range(10):   # ten lines no one has touched: ten L1D load misses
            p1.load(0x300000 + 64 * 97 * i)
        r = m.run([Program().work(500), p1])
        s = m.stats()["cores"]
        assert s[0]["levels"]["l1d"]["load_misses"] == 0
        assert s[1]["levels"]["l1d"]["load_misses"] == 10
        assert r.cycles == max(c.cycles for c in r.cores) and r.cores[0].cycles >= 500
        hashes.append(m.state_hash())
    assert hashes[0] == hashes[1]


def test_one_program_per_core_is_asked():
    m = Machine("skylake-ddr4", cores=2)
    with pytest.raises(ValueError, match="1 programs on a machine of 2 core"):
        m.run([Program()])
    with pytest.raises(TypeError, match="Programs"):
        m.run([Program(), "x"])
    with pytest.raises(ValueError, match="repeat"):
        m.run([Program(), Program()], repeat=2)


def test_a_fault_names_the_core_and_op():
    m = Machine("skylake-ddr4", cores=2)
    with pytest.raises(UnmappedAccess, match="core 1's LOAD") as e:
        m.run([Program().load(0x1000), Program().work(5).load(1 << 40)])
    assert e.value.op_index == 1 and e.value.addr == 1 << 40   # in core 1's program


def test_the_memory_limit_names_the_core_and_op_and_grows_memory_below_it():
    # 1 MiB is 256 frames: 600 stores, each to a page of its own, need more; 100 do not
    def pages(n):
        p = Program()
        for k in range(n):
            p.store(0x100000 + 4096 * k, b"\1" * 8)
        return p
    m = Machine("skylake-ddr4", cores=2, memory_limit_bytes=1 << 20)
    m.run([Program().load(0x1000), pages(100)])
    assert m.read(0x100000 + 4096 * 99, 1) == b"\1"
    with pytest.raises(MemoryLimitFault, match="core 1's STORE of 8 bytes") as e:
        m.run([Program().load(0x1000), pages(600)])
    assert 0 < e.value.op_index < 600


# ---------------------------------------------------------------- the words the cores share
def _on_core(m, k, program):
    """Run `program` on core k alone (the other cores' programs empty)."""
    programs = [Program() for _ in range(m.cores)]
    programs[k] = program
    m.run(programs)


def _loads(addrs):
    p = Program()
    for a in addrs:
        p.load(a)
    return p


def test_two_cores_filling_one_llc_set_evict_in_the_lru_order_of_their_combined_use():
    """A one-set LLC of 20 ways (LRU by use stamps above 16 ways), no prefetchers: each
    load below misses the loading core's L1D and L2, so the LLC sees every access."""
    m = Machine("broadwell-ddr4", {"cache.llc.size_bytes": 20 * 64,
                                   "cache.l1d.prefetcher": "none",
                                   "cache.l2.prefetcher": "none"}, cores=2)
    base = m.regions[m.region_names[0]]["base"]
    line = [(base >> 6) + 3 * i for i in range(24)]
    addr = [ln << 6 for ln in line]
    _on_core(m, 0, _loads(addr[0:10]))
    _on_core(m, 1, _loads(addr[10:20]))   # the set is full: least recently used first, L0
    _on_core(m, 1, _loads([addr[3]]))     # an LLC hit for core 1: L3 is used last
    for i in range(20, 24):               # core 0, 1, 0, 1 fill: out go L0, L1, L2, then L4
        _on_core(m, i % 2, _loads([addr[i]]))
    want = sorted([line[3]] + line[5:24])
    assert m.cache_contents("llc") == [want]


def test_the_cores_media_accesses_take_one_use_stamp():
    """Three LLC misses on core 0 and two on core 1 (no prefetchers): five uses of the
    media, numbered by one stamp the socket holds."""
    m = Machine("broadwell-ddr4", {"cache.l1d.prefetcher": "none",
                                   "cache.l2.prefetcher": "none"}, cores=2)
    base = m.regions[m.region_names[0]]["base"]
    sock = m.layout.offsets["socket"]
    before = int(m.S[sock + SK.MEM_STAMP])
    _on_core(m, 0, _loads([base + 4096 * i for i in range(3)]))
    _on_core(m, 1, _loads([base + 4096 * i for i in range(3, 5)]))
    assert m.S[sock + SK.MEM_STAMP] - before == 5
    # the same word from core 1's view
    assert m.core_state(1)[int(m.core_state(1)[MH.SOCKET]) + SK.MEM_STAMP] == \
        m.S[sock + SK.MEM_STAMP]


def test_two_cores_clwb_and_sfence_make_each_ones_own_bytes_durable():
    """Each core writes back its own line (CLWB, no fence yet), then each fences: under ADR
    each line becomes durable with the bytes its core stored (docs/hardware.md §1.5), as
    the cores' pending write-backs are snapshot apart."""
    m = Machine("cascadelake-optane", cores=2)
    a = m.regions["pmem0"]["base"] + 0x10000
    b = a + 0x2000
    old, mine = b"\x11" * 64, [b"\x22" * 64, b"\x33" * 64]
    m.write(a, old)
    m.write(b, old)
    _on_core(m, 0, Program().store(a, mine[0]).clwb(a))
    _on_core(m, 1, Program().store(b, mine[1]).clwb(b))
    assert m.crash().read(a, 64) == m.crash().read(b, 64) == old   # no fence yet
    _on_core(m, 0, Program().sfence())
    assert m.crash().read(a, 64) == mine[0]
    _on_core(m, 1, Program().sfence())
    assert m.crash().read(a, 64) == mine[0] and m.crash().read(b, 64) == mine[1]
