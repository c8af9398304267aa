"""The snoop filter's extended directory (memmodel._snoopfilter): a non-inclusive LLC's
directory for lines only in the cores' private levels, `cache.llc.directory_ways` ways in
each of the LLC's sets; a full set's oldest entry back-invalidates its line's private copies.

The machine: skylake-ddr4 (12 ways, docs/hardware.md §3.1) with its LLC cut to one set of
its 11 ways (cache.llc.size_bytes = 11 x 64), so every line maps to LLC set 0 and ED set 0,
and the prefetchers off. Lines i = 0, 1, ... are consecutive (BASE + 64 i): each in its own
L1D and L2 set, so the cores' private levels keep every line loaded here. A load fills the
L1D, the L2 and the LLC; the LLC's LRU evicts line i at the fill of line i + 11, and line i
is then in a core's L2 and not in the LLC: it takes an ED entry. Expected values follow by
hand from that."""
import pytest

from emu import Machine
from isa import Program
from memmodel import cache as cm
from memmodel.profile import ProfileError

BASE = 0x200000   # skylake-ddr4's and broadwell-ddr4's first region (DRAM)
NO_PF = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}
ED_WAYS = 12


def machine(profile="skylake-ddr4", extra=None, cores=2, ways=11):
    return Machine(profile, dict(NO_PF, **{"cache.llc.size_bytes": ways * 64}, **(extra or {})),
                   cores=cores)


def line(i):
    return BASE + 64 * i


def loads(lines):
    p = Program()
    for i in lines:
        p.load(line(i))
    return p


def on_core(m, k, program):
    programs = [Program() for _ in range(m.cores)]
    programs[k] = program
    return m.run(programs).cores[k]


def private(m, k, i):
    """Whether core k holds line i in its L1D or L2."""
    S = m.core_state(k)
    return any(cm.lookup(S, lvl, line(i) >> 6) >= 0 for lvl in (0, 1))


def back_invalidations(m, k=None):
    s = m.stats()
    return (s["coherence"] if k is None else s["cores"][k]["coherence"])["sf_back_invalidations"]


def _fill(m):
    """Core 0 loads lines 0-11, core 1 lines 12-22: the fills of lines 11-22 evict lines 0-11
    from the LLC, each held by core 0: the ED set's 12 ways, full, no eviction yet."""
    on_core(m, 0, loads(range(12)))
    on_core(m, 1, loads(range(12, 23)))


def test_the_directory_full_evicts_its_oldest_entry_and_its_copies():
    """N + 1 = 13 lines held privately by two cores and not in the LLC: lines 0-11 (core 0)
    take the 12 ways; core 1's load of line 23 evicts line 12 (core 1's) from the LLC, whose
    entry evicts the oldest, line 0: core 0's copies dropped, once; its next load misses
    the L1D, the L2 and the LLC (the LLC had dropped it), and reads memory."""
    m = machine()
    _fill(m)
    assert back_invalidations(m) == 0
    assert all(private(m, 0, i) for i in range(12))
    on_core(m, 1, loads([23]))
    assert back_invalidations(m) == 1 and back_invalidations(m, 1) == 1
    assert back_invalidations(m, 0) == 0   # counted by the core whose access caused it
    assert not private(m, 0, 0)
    assert all(private(m, 0, i) for i in range(1, 12)) and private(m, 1, 12)
    lv = m.stats()["cores"][0]["levels"]
    assert lv["l1d"]["invalidations"] == lv["l2"]["invalidations"] == 1   # its two copies
    before = m.stats()["cores"][0]["levels"]
    on_core(m, 0, loads([0]))
    after = m.stats()["cores"][0]["levels"]
    for lvl in ("l1d", "l2", "llc"):
        assert after[lvl]["load_misses"] - before[lvl]["load_misses"] == 1, lvl
    # its fill evicts line 13 (core 1's) from the LLC (which held 13-23): the set (lines
    # 1-12, all still held) evicts its oldest, line 1, this time by core 0's access
    assert private(m, 0, 0) and not private(m, 0, 1) and private(m, 0, 2)
    assert back_invalidations(m, 0) == 1 and back_invalidations(m) == 2


def test_a_line_no_core_holds_frees_its_entry():
    """Line 0 flushed (no core holds it any more): the next entry (line 12, evicted by line
    23's fill) takes its way without a back-invalidation; the one after (line 13, line 24's
    fill) finds the set full of needed entries and evicts the oldest, line 1."""
    m = machine()
    _fill(m)
    on_core(m, 0, Program().clflush(line(0)).sfence())
    on_core(m, 1, loads([23]))
    assert back_invalidations(m) == 0
    on_core(m, 1, loads([24]))
    assert back_invalidations(m) == 1
    assert not private(m, 0, 1) and all(private(m, 0, i) for i in range(2, 12))


def test_a_dirty_copy_is_written_back_when_its_entry_is_evicted():
    """Line 0 stored to (Modified in core 0): its back-invalidation writes its data to
    memory: the media's line writes grow by one, and the bytes are memory's."""
    m = machine()
    on_core(m, 0, Program().store(line(0), b"\x5a" * 8))
    on_core(m, 0, loads(range(1, 12)))
    on_core(m, 1, loads(range(12, 23)))
    before = m.stats()["media"]["dram"]["line_writes"]
    on_core(m, 1, loads([23]))
    assert back_invalidations(m) == 1 and not private(m, 0, 0)
    assert m.stats()["media"]["dram"]["line_writes"] - before == 1


def test_inclusive_llcs_never_back_invalidate_through_the_directory():
    """broadwell-ddr4's L3 is inclusive (its tags are the snoop filter): the same lines over
    one set of its 20 ways evict with the LLC's own back-invalidations, never the ED's;
    a directory_ways for it is refused."""
    m = machine("broadwell-ddr4", ways=20)
    on_core(m, 0, loads(range(20)))
    on_core(m, 1, loads(range(20, 45)))
    assert back_invalidations(m) == 0
    assert not private(m, 0, 0)   # gone with its LLC copy (inclusive)
    with pytest.raises(ProfileError, match="directory_ways"):
        machine("broadwell-ddr4", {"cache.llc.directory_ways": 12}, ways=20)


def test_one_core_has_no_extended_directory():
    """With one core the directory is not modelled (memmodel.sections.cache directory_ways):
    lines 0-23 in one LLC set stay in the core's L1D and L2."""
    m = machine(cores=1)
    m.run(loads(range(24)))
    assert "coherence" not in m.stats()
    assert all(private(m, 0, i) for i in range(24))


@pytest.mark.parametrize("bad", [0, 65, 1.5])
def test_directory_ways_out_of_range_is_refused(bad):
    with pytest.raises(ProfileError, match="directory_ways"):
        machine(extra={"cache.llc.directory_ways": bad})


@pytest.mark.parametrize("profile", ["skylake-ddr4", "cascadelake-optane"])
def test_the_directory_is_deterministic(profile):
    """Two cores loading 30 lines of one LLC set in turn, at once (the scheduler interleaves
    them): 19 leave the LLC while held, so some entries are evicted; two machines end in the
    same state, word for word, with the same counts."""
    seen = []
    for _ in range(2):
        m = machine(profile)
        base = m.regions[m.region_names[0]]["base"]
        progs = [Program(), Program()]
        for i in range(30):
            progs[i % 2].load(base + 64 * i)
        m.run(progs)
        seen.append((m.state_hash(), m.stats()["coherence"]))
    assert seen[0] == seen[1]
    assert seen[0][1]["sf_back_invalidations"] == 19 - ED_WAYS


def private_only(m, k):
    """The lines core k holds in its L1D or L2 that its socket's LLC does not hold."""
    held = {t for level in ("l1d", "l2") for row in m.cache_contents(level, core=k)
            for t in row}
    return held - set(sum(m.cache_contents("llc", core=k), []))


def test_a_fast_string_copys_lines_stay_within_the_directory():
    """A 4 KiB rep movsb (past rep_movsb_nrfo_threshold_bytes, 2 KiB: its stores take their
    lines without the LLC, memmodel._hierarchy own_line) and its 64 source lines, all of one
    LLC set: with the directory, core 0 never holds more lines out of the LLC than the set's
    12 ways, and some entries were evicted; one core (no directory modelled) holds more."""
    m = machine()
    on_core(m, 0, Program().rep_movsb(line(64), line(0), 4096))
    assert len(private_only(m, 0)) <= ED_WAYS
    assert back_invalidations(m) > 0
    one = machine(cores=1)
    one.run(Program().rep_movsb(line(64), line(0), 4096))
    assert len(private_only(one, 0)) > ED_WAYS


def test_each_socket_has_its_own_directory():
    """Two sockets, a core each: core 0 (socket 0) loads lines 0-11, core 1 (socket 1) lines
    12-23: each socket's LLC (one set of 11 ways) evicts one of its own lines, one entry in
    each socket's directory: no back-invalidation. On one socket the same 24 lines leave
    13 lines out of the LLC: one."""
    two = Machine("skylake-ddr4", dict(NO_PF, **{"cache.llc.size_bytes": 11 * 64}), cores=2,
                  sockets=2)
    one = machine()
    for m in (two, one):
        on_core(m, 0, loads(range(12)))
        on_core(m, 1, loads(range(12, 24)))
    assert back_invalidations(two) == 0 and back_invalidations(one) == 1
    assert private_only(two, 0) == {line(0) >> 6} and private_only(two, 1) == {line(12) >> 6}
