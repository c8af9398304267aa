"""The page-counter study (docs/scenarios.md §6): struct page_counter's layouts before and
after commit 802f1d522d5f, and what the c2c report shows of them. The offsets come from the
header's field order (every field 8 bytes on 64-bit); the coherence outcomes from MESI
(memmodel._coherence's docstring): a read of a line another core modified is a HITM, a
read of a line another core holds clean is not."""
import pytest

from emu import Machine
from emu.studies.scenarios import page_counter as study
from isa import Program
from isa.ops import COL_ADDR, COL_OP, Op
from kernels import memcontrol
from kernels import page_counter as pc

NO_PF = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}
BASE = 0x200000   # skylake-ddr4's first region (DRAM)


def test_the_layouts_are_the_headers_before_and_after_the_commit():
    before, after = pc.OFFSETS["before"], pc.OFFSETS["after"]
    # v5.11-rc1: usage, min, low, high, max, parent, ...; the commit moves parent last
    assert (before["usage"], before["max"], before["parent"], before["watermark"]) == \
        (0, 32, 40, 96)
    assert (after["usage"], after["max"], after["emin"], after["watermark"], after["parent"]) == \
        (0, 32, 40, 88, 104)
    assert pc.SIZE_BYTES == 112
    # in a line-aligned counter, parent shares usage's line before and not after
    assert before["parent"] // 64 == before["usage"] // 64
    assert after["parent"] // 64 != after["usage"] // 64
    with pytest.raises(ValueError, match="layout 'middle'"):
        pc.PageCounter(BASE, "middle")


def test_a_charge_walks_every_level_with_one_locked_add_on_usage_each():
    """page_counter_try_charge of v5.11 on a 3-level hierarchy: per level a locked add on
    usage, then reads of max, parent, min, min_usage, low, low_usage (not at the root:
    propagate_protected_usage returns once parent is NULL), watermark and parent."""
    leaf = memcontrol.hierarchy(BASE, 3, "after")
    chain = list(leaf.memory.chain())
    assert [c.addr for c in chain] == [
        BASE + memcontrol.MEMORY_AT + memcontrol.MEMCG_BYTES * k for k in (2, 1, 0)]
    ops = pc.page_counter_try_charge(Program(), leaf.memory, 32).ops
    mem = ops[ops[:, COL_OP] != Op.SITE]
    locked = mem[mem[:, COL_OP] == Op.LOCK_RMW][:, COL_ADDR].tolist()
    assert locked == [c.addr for c in chain]                      # usage at byte 0
    loads = mem[mem[:, COL_OP] == Op.LOAD][:, COL_ADDR].tolist()
    a = chain[0].addr
    assert loads[:8] == [a + 32, a + 104, a + 8, a + 48, a + 16, a + 72, a + 88, a + 104]
    r = chain[2].addr                                             # the root's
    assert loads[16:] == [r + 32, r + 104, r + 88, r + 104]
    assert len(mem) == 3 + 8 + 8 + 4


def _parent_read_after_a_charge(layout):
    """Core 0 charges a one-level hierarchy; core 1, long after, reads the counter's parent
    pointer as parent_mem_cgroup does."""
    m = Machine("skylake-ddr4", NO_PF, cores=2, hot_lines=64)
    leaf = memcontrol.hierarchy(BASE, 1, layout)
    p0 = pc.page_counter_try_charge(Program(), leaf.memory, 32)
    p1 = Program().work(20000).lfence()
    memcontrol.parent_mem_cgroup(p1, leaf)
    m.run([p0, p1])
    return leaf, m.run_profile().c2c()


def test_before_a_parent_read_after_another_cores_charge_is_a_hitm_at_byte_40():
    """Core 0's locked add leaves usage's line Modified in its cache; before the commit
    parent is in that line, so core 1's read of it is one HITM, at byte 40."""
    leaf, lines = _parent_read_after_a_charge("before")
    (line,) = lines
    assert line.addr == leaf.memory.addr and line.hitm == 1
    assert line.cores[1]["hitm"] == 1 and line.cores[1]["offsets"] == [40]
    assert line.false_sharing   # core 0 wrote usage (byte 0), core 1 read parent (byte 40)


def test_after_the_same_read_finds_parent_clean_no_hitm():
    """After the commit parent is in the second line, which core 0 only read (Exclusive):
    core 1's read is a clean snoop hit, no HITM anywhere."""
    leaf, lines = _parent_read_after_a_charge("after")
    assert sum(s.hitm for s in lines) == 0
    assert all(s.addr != leaf.memory.addr for s in lines)   # usage's line: core 0's alone


def test_the_study_c2c_shows_the_contended_parent_line_before_and_not_after():
    """Two cores running the study's batches: before, the line of the leaf's usage and
    parent has HITMs, and both cores' accesses that left their L1D include parent's byte
    40; after, parent's line has no HITM, and byte 40 of usage's line (emin, which nothing
    reads) is never reached."""
    got = {}
    for layout in pc.LAYOUTS:
        m, leaf = study.build("skylake-ddr4", NO_PF, layout, cores=2, depth=2, hot_lines=256)
        m.run(study.programs(m, leaf, 3, len(study.STAT_FLUSHES)))
        got[layout] = leaf, {s.addr: s for s in m.run_profile().c2c(n=100)}
    leaf, lines = got["before"]
    line = lines[leaf.memory.addr]
    assert line.hitm > 0
    assert all(40 in line.cores[k]["offsets"] for k in (0, 1))
    leaf, lines = got["after"]
    parent_line = leaf.memory.field("parent") // 64 * 64
    assert parent_line != leaf.memory.addr
    assert parent_line not in lines or lines[parent_line].hitm == 0
    assert lines[leaf.memory.addr].hitm > 0          # usage itself stays truly shared
    assert all(40 not in c["offsets"] for c in lines[leaf.memory.addr].cores.values())


def test_bad_hierarchies_are_refused():
    with pytest.raises(ValueError, match="depth 0"):
        memcontrol.hierarchy(BASE, 0, "after")
    with pytest.raises(ValueError, match="counter_offset 12"):
        memcontrol.hierarchy(BASE, 2, "after", counter_offset=12)


def test_the_study_runs_both_layouts_and_compares_the_published_change(capsys):
    from emu.studies.cli import main
    assert main(["run", "page-counter", "--cores", "2", "--iterations", "2"]) == 0
    out = capsys.readouterr().out
    assert "layout=before" in out and "layout=after" in out
    assert "n/a: the figures are for profile cascadelake-optane, cores=48" in out
    assert "published +4.4%" in out        # 192078 / 183960 of the patch mail's A-P50


@pytest.mark.parametrize("argv, message", [
    # cascadelake-optane: 2 sockets of 24 cores (core.sockets, core.cores_per_socket)
    (["--cores", "30"], "option cores: 30 is not 1 socket(s) of at most 24 cores each"),
    (["--cores", "50", "--sockets", "2"], "option cores: 50 is not 2 socket(s) of at most 24"),
    (["--cores", "5", "--sockets", "2"], "option cores: 5 is not 2 socket(s)"),
    (["--sockets", "3"], "invalid choice: 3"),
    (["--counter-offset", "12"], "invalid choice: 12"),
])
def test_bad_options_are_one_error_naming_them(capsys, argv, message):
    from emu.studies.cli import main
    assert main(["run", "page-counter", *argv]) == 2
    assert message in capsys.readouterr().err


def test_two_sockets_take_remote_hitms_and_compare_the_published_setup():
    # 4 processes on 2 sockets: the hot lines move between the sockets too (the other
    # socket's cores charge the same counters), which one socket never does; the published
    # per-process rates are compared only on their own setup, 48 processes on 2 sockets
    from emu.studies.scenarios import page_counter as pc
    one = pc.run_variant("cascadelake-optane", {}, "layout=before", 4, 3, 3, 10, 0)
    two = pc.run_variant("cascadelake-optane", {}, "layout=before", 4, 3, 3, 10, 0, sockets=2)
    assert one["remote_hitm_per_batch"] == 0 < two["remote_hitm_per_batch"]
    assert two["remote_hitm_per_batch"] <= two["hitm_per_batch"]
    assert two["per_process_ops"] < one["per_process_ops"]   # 114 ns a remote HITM, not 49
