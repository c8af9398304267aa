"""Conditional branches, transient execution, speculation barriers and leak detection.

Expected behaviour from Kocher et al., "Spectre Attacks" (2019) §4 (a mispredicted bounds
check runs the body transiently; its loads fill the cache; LFENCE after the check or a
data-dependent index mask stops the leak) and from the ISA (a mispredicted branch costs its
resolution plus the profile's misprediction penalty; transient stores never reach memory).
"""
import pytest

from emu import Machine
from emu.studies import spectre
from emu.studies.cli import main
from isa import LOADED, Program, ProgramError
from isa.ops import COL_SRC, FLAG_DEPENDENT, FLAG_INDEXED, Op
from memmodel.profile import load_profile

NO_PF = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}


@pytest.mark.parametrize("secret", [0x5A, 0x01, 0xFF])
def test_v1_without_barrier_leaks_the_secret_probe_line(secret):
    r = spectre.run_gadget("v1", secret)
    assert r["leaked"] and r["probe_values"] == [secret]
    assert spectre.PROBE + secret * spectre.STRIDE in r["transient_lines"]


@pytest.mark.parametrize("gadget", ["v1-lfence", "v1-nospec"])
def test_barriers_stop_the_leak(gadget):
    r = spectre.run_gadget(gadget, 0x5A)
    assert not r["leaked"] and 0x5A not in r["probe_values"]


def test_nospec_mask_waits_for_the_bound_like_the_branch():
    # array_index_nospec's cmp/sbb read array1_size, the load the branch waits for too; the
    # branch resolves in branch_resolve_cycles after it, the mask in index_mask_cycles
    # (more), so the masked load never issues down the wrong path: nothing is filled
    prof = load_profile("skylake-ddr4").values["instr"]
    assert prof["index_mask_cycles"] > prof["branch_resolve_cycles"]
    r = spectre.run_gadget("v1-nospec", 0x5A)
    assert r["transient_lines"] == [] and not r["leaked"]


def test_no_leak_when_the_bound_is_cached():
    # the branch resolves one cycle after an L1 hit on array1_size, before the dependent
    # probe load can issue (it waits for the secret's own L1 hit)
    m = Machine("skylake-ddr4")
    m.write(spectre.ARRAY1 + spectre.SECRET_OFFSET, bytes([7]))
    m.write(spectre.BOUND, (16).to_bytes(8, "little"))
    p = Program().load(spectre.ARRAY1 + spectre.SECRET_OFFSET, 1).load(spectre.BOUND, 8)
    with p.guarded(spectre.SECRET_OFFSET, 16, dependent=True):
        p.load(spectre.ARRAY1 + spectre.SECRET_OFFSET, 1)
        p.load_indexed(spectre.PROBE, 4096, 1)
    m.run(Program().load(spectre.BOUND, 8))   # warm the bound
    m.run(p)
    assert m.transient_lines() == []


def _slow_bound(m, p, addr=0x200000):
    """A bound that must come from memory, so the branch resolves late."""
    m.write(addr, (16).to_bytes(8, "little"))
    p.clflush(addr).mfence().load(addr, 8)


def test_mispredicted_branch_costs_resolution_plus_penalty():
    m1, m2 = Machine("skylake-ddr4"), Machine("skylake-ddr4")
    right = m1.run(Program().branch(1, 2, 0, predict_in=True)).cycles
    wrong = m2.run(Program().branch(1, 2, 0, predict_in=False)).cycles
    penalty = m1.profile.get("instr.branch_mispredict_cycles")
    resolve = m1.profile.get("instr.branch_resolve_cycles")
    assert resolve == 1 and wrong - right == resolve + penalty   # resolution, then the refetch


def test_branch_runs_the_body_only_in_bounds_and_transient_stores_are_dropped():
    m = Machine("skylake-ddr4")
    p = Program()
    with p.guarded(20, 16):            # out of bounds, predicted in: body runs transiently
        p.store(0x5000, b"X")
    with p.guarded(3, 16):             # in bounds
        p.store(0x6000, b"Y")
    m.run(p)
    assert m.read(0x5000, 1) == b"\0" and m.read(0x6000, 1) == b"Y"
    assert 0x5000 >> 6 not in m.dirty_lines("l1d")


def test_transient_load_of_an_unmapped_address_does_not_fault():
    m = Machine("skylake-ddr4")
    p = Program()
    _slow_bound(m, p)
    with p.guarded(1 << 50, 16, dependent=True):
        p.load(1 << 50, 8)
    m.run(p)   # architecturally skipped, transiently dropped: no exception
    assert m.transient_lines() == []


def test_window_is_bounded_by_the_reorder_buffer():
    m = Machine("skylake-ddr4", NO_PF)
    rob = m.profile.get("core.rob_entries")
    p = Program()
    _slow_bound(m, p)
    with p.guarded(99, 16, dependent=True):
        for k in range(rob + 50):      # independent loads of distinct, uncached pages
            p.load(0x1000000 + k * 4096, 8)
    m.run(p)
    assert len(m.transient_lines()) == rob


def test_window_closes_when_the_branch_resolves():
    m = Machine("skylake-ddr4", NO_PF)
    p = Program()
    _slow_bound(m, p)
    with p.guarded(99, 16, dependent=True):
        p.work(10_000)                 # the body reaches its load only after resolution
        p.load(0x1000000, 8)
    m.run(p)
    assert m.transient_lines() == []


def test_architectural_use_clears_the_transient_mark():
    m = Machine("skylake-ddr4")
    m.write(spectre.ARRAY1 + spectre.SECRET_OFFSET, bytes([9]))
    m.write(spectre.BOUND, (16).to_bytes(8, "little"))
    m.run(spectre.gadget_program("v1"))
    probe = spectre.PROBE + 9 * spectre.STRIDE
    assert probe in [ln * 64 for ln in m.transient_lines()]
    m.run(Program().load(probe, 8))
    assert probe not in [ln * 64 for ln in m.transient_lines()]
    assert m.cached(probe) == "l1d"


def test_lfence_waits_for_loads_in_flight():
    m1, m2 = Machine("skylake-ddr4"), Machine("skylake-ddr4")
    base = m1.run(Program().load(0x9000, 8).work(1)).cycles
    fenced = m2.run(Program().load(0x9000, 8).lfence().work(1)).cycles
    assert fenced > base   # the work waits for the miss


def test_validator_rejects_bad_speculation_ops():
    with pytest.raises(ProgramError, match="branch body beyond"):
        Program().branch(1, 2, 5).validate()
    with pytest.raises(ProgramError, match="indexed load"):
        Program().store(0, b"a").load_indexed(0x1000, 64).validate()
    with pytest.raises(ProgramError, match="flag not allowed"):
        ops = Program().sfence().ops.copy()
        ops[0, 6] = FLAG_DEPENDENT
        Program.from_array(ops)
    with pytest.raises(ProgramError, match="masked load"):
        Program().load_masked(0x100, 0x200).validate()
    with pytest.raises(ProgramError, match="negative"):
        Program().branch(-1, 2, 0)
    assert Program().branch(1, 2, 0).ops[0, 0] == Op.BRANCH


def test_a_masked_indexed_load_masks_its_index():
    """array_index_nospec on a loaded index: load_indexed(masked=True) loads at base +
    (value & mask) * scale: in bounds the value, out of bounds index 0."""
    for value, line in ((5, 0x1000000 + 5 * 4096), (20, 0x1000000)):
        m = Machine("skylake-ddr4")
        m.write(0x100, bytes([value]))
        p = Program().load(0x100, 1).index_mask(LOADED, 16).load_indexed(
            0x1000000, 4096, 1, masked=True)
        m.run(p)
        assert m.cached(line) == "l1d"
        assert m.cached(0x1000000 + value * 4096) == ("l1d" if value < 16 else None)


def test_a_masked_indexed_load_has_no_base():
    with pytest.raises(ProgramError, match=r"op 0 \(load_masked at 0x140\): a masked indexed"):
        Program().load_masked(0x140, 0x100, 1, flags=FLAG_INDEXED)
    ops = Program().load(0x100, 1).load_indexed(0x1000, 64, 1, masked=True).ops.copy()
    Program.from_array(ops)
    ops[1, COL_SRC] = 0x1000
    with pytest.raises(ProgramError, match=r"op 1 \(LOAD addr=0x1000\): masked load"):
        Program.from_array(ops)


def test_cli_spectre(capsys):
    assert main(["spectre", "v1", "--secret", "0x33"]) == 0
    out = capsys.readouterr().out
    assert "secret leaked: YES" in out and "0x33" in out
    assert "mitigation cost" in out and "v1-lfence" not in out
    assert main(["spectre", "v1-lfence", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"leaked": false' in out and '"mitigation_cycles_per_call"' in out
    assert main(["spectre", "v1-nospec"]) == 0
    out = capsys.readouterr().out
    assert "in the gadget site" in out and "cost " in out and "v1-nospec" in out
    assert main(["spectre", "v1", "--secret", "300"]) == 2


@pytest.fixture(scope="module")
def per_call():
    return {g: spectre.cycles_per_call(g) for g in spectre.GADGETS}


def test_in_bounds_calls_hit_l1d_and_the_cost_is_deterministic(per_call):
    # the warm loop's loads all hit L1D (x over 0..3: the 4 KiB-aligned probe lines,
    # array1 and the bound share one set, 6 lines in 8 ways), so a cost is the barrier's
    m = spectre._machine("skylake-ddr4", None)
    p = spectre.calls_program("v1-lfence")
    m.run(p)
    m.reset_stats()
    m.run(p)
    assert m.stats()["levels"]["l1d"]["misses"] == 0
    assert spectre.cycles_per_call("v1-lfence") == per_call["v1-lfence"]
    assert spectre.mitigation_cost("v1-nospec") == spectre.mitigation_cost("v1-nospec")


def test_in_bounds_v1_is_bounded_by_issue(per_call):
    # load, branch (fused cmp + jcc), load, load: 4 uops; the calls are independent, so
    # they overlap and only the rename width limits them
    upc = Machine("skylake-ddr4").profile.get("core.uops_per_cycle")
    assert 4 / upc <= per_call["v1"] < 4 / upc + 0.05


def test_lfence_costs_at_least_its_profile_cycles_per_call(per_call):
    # SDM: LFENCE executes once every older instruction completed, and nothing younger
    # before it completes: each call's LFENCE waits for the previous call's array1[x]
    # and then array2[...] (two dependent L1D hits; the bound load overlaps them), then
    # takes lfence_cycles, and the load after it executes lfence_refill_cycles later (the
    # uops past an LFENCE issue once it retires); the calls no longer overlap
    prof = Machine("skylake-ddr4").profile
    lfence, hit = prof.get("instr.lfence_cycles"), prof.get("cache.l1d.hit_cycles")
    refill = prof.get("instr.lfence_refill_cycles")
    assert per_call["v1-lfence"] - per_call["v1"] >= lfence
    assert round(per_call["v1-lfence"]) == 2 * hit + lfence + refill


def test_nospec_costs_its_three_uops_and_less_than_lfence(per_call):
    # cmp, sbb, and take 3 issue slots; their 3-cycle latency before the masked load is
    # hidden by the next calls, which do not depend on it (no fence)
    upc = Machine("skylake-ddr4").profile.get("core.uops_per_cycle")
    assert per_call["v1-nospec"] - per_call["v1"] >= 3 / upc
    assert per_call["v1-nospec"] < per_call["v1-lfence"]


def test_attack_reports_the_gadget_site_and_the_cost():
    r = spectre.run_gadget("v1-lfence")
    assert 0 < r["gadget_cycles"] < r["cycles"]
    assert r["calls"] == spectre.COST_CALLS
    assert r["mitigation_cycles_per_call"] == pytest.approx(
        r["cycles_per_call"] - r["v1_cycles_per_call"])
    assert r["cycles_per_call"] == spectre.cycles_per_call("v1-lfence")
    v1 = spectre.run_gadget("v1")
    assert v1["mitigation_cycles_per_call"] == 0 and v1["v1_cycles_per_call"] == v1["cycles_per_call"]
