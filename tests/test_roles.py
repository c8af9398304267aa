"""Every word of the state declares one role where it is declared (memmodel.layout), and the
readers of roles know every role: a word without one, or a role fast-forward does not
classify, fails here instead of turning fast-forward off."""
import numpy as np
import pytest

from emu import Machine, fastforward
from emu.state import SC, SC_ROLES
from memmodel.layout import EXACT, MM, MS, MS_ROLES, SHARED, SK, Layout, Role

PROFILES = ["skylake-ddr4", "cascadelake-optane", "haswell-nvdimm-n"]
KINDS = ("clock", "ring", "head", "counter", "total", "mark", "derived", "exact")


@pytest.fixture(scope="module", params=PROFILES)
def machine(request):
    return Machine(request.param, hot_lines=16)


def test_every_word_of_every_section_has_exactly_one_role(machine):
    lay, S = machine.layout, machine.S
    count = np.zeros(len(S), dtype=np.int64)
    for idx, role in lay.words(S):
        assert isinstance(role, Role) and role.kind in KINDS, role
        np.add.at(count, np.asarray(idx).reshape(-1), 1)
    in_section = np.zeros(len(S), dtype=bool)
    for name, shape in lay.shapes.items():
        in_section[lay.offsets[name]:lay.offsets[name] + int(np.prod(shape))] = True
    assert (count[in_section] == 1).all(), np.flatnonzero(in_section & (count != 1))
    assert (count[~in_section] == 0).all()   # header slots and alignment gaps


def test_the_scalar_tables_name_every_field():
    assert set(SC_ROLES) == set(SC) and set(MS_ROLES) == set(MS)


def test_a_fields_table_missing_a_field_is_refused():
    lay = Layout(MM)
    lay.add("mglob", 3, {0: EXACT, 1: EXACT}, share=SHARED)
    S = lay.build()
    with pytest.raises(ValueError, match="mglob"):
        lay.words(S)


def test_fast_forward_classifies_every_role_and_reads_the_layout(machine):
    assert set(fastforward.CLASSIFIED) == set(KINDS)
    lay, S = machine.layout, machine.S
    ff = fastforward._Layout(machine)
    kinds = {}
    for idx, role in lay.words(S):
        for w in np.asarray(idx).reshape(-1).tolist():
            kinds[w] = role
    counted = set(ff.counter.tolist())
    # the counters the stats report, and the hot-line table's counts
    for name in ("ccnt", "mcnt", "region_ctr", "site_ctr", "hot_region"):
        off = lay.offsets[name]
        assert set(range(off, off + lay.view(S, name).size)) <= counted, name
    # every word is exactly one of: counted, on a clock, in a ring, a ring's head, exact
    ring_words = {w for _, _, parts in ff.rings for idx, _ in parts
                  for w in idx.reshape(-1).tolist()}
    clock_words = {w for idx in ff.clocks.values() for w in idx.tolist()}
    heads = {h for h, _, _ in ff.rings}
    exact = set(np.flatnonzero(ff.exact).tolist())
    for w, role in kinds.items():
        what = fastforward.CLASSIFIED[role.kind]
        got = [w in counted, w in clock_words, w in ring_words, w in heads, w in exact]
        want = {"counts": 0, "moves": 1, "turns": 2 if role.kind == "ring" else 3,
                "exact": 4}[what]
        assert got == [i == want for i in range(5)], (w, role, got)
    # the scalars the core keeps its clocks and ring heads in
    assert kinds[SC.NOW].clock == "cycles"
    assert kinds[lay.offsets["socket"] + SK.MEM_STAMP].clock == "mem"
    assert SC.ROB_HEAD in heads and MS.PEND_HEAD in heads



def test_each_clock_but_fp_has_one_own_word(machine):
    own = {}
    for idx, role in machine.layout.words(machine.S):
        if role.kind == "clock" and role.own:
            own.setdefault(role.clock, []).extend(np.asarray(idx).reshape(-1).tolist())
    levels = [f"lru{i}" for i in range(len(machine.level_names))]
    assert {c: len(w) for c, w in own.items()} == dict.fromkeys(
        ["cycles", "uops", "loads", "mem", "stream"] + levels, 1)
    assert own["cycles"] == [SC.NOW]
