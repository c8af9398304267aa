"""Spectre v1 with a trained branch predictor (Kocher et al., "Spectre Attacks", 2019, §4:
the victim is called in bounds to train the bounds check's prediction, then out of bounds),
a nested check, and array_index_nospec on a loaded index.

Expected: a trained "in bounds" guess runs the body down the wrong path while the flushed
bound is read, so the probe line of the secret is filled (leak); a second check on a
flushed value inside keeps that path going (leak); the index masked by array_index_nospec
reads array1[0] out of bounds (no leak); an untrained site guesses "out" and runs nothing.
"""
import pytest

from emu.studies import spectre
from emu.studies.cli import main

SECRET = 0x5A


@pytest.mark.parametrize("gadget", ["v1-trained", "v1-nested", "v1-loaded"])
def test_a_trained_gadget_leaks_the_secret(gadget):
    r = spectre.run_gadget(gadget, SECRET)
    assert r["leaked"] and r["probe_values"] == [SECRET]
    assert spectre.PROBE + SECRET * spectre.STRIDE in r["transient_lines"]


def test_the_nested_check_loads_its_bound_down_the_wrong_path():
    # array1_cap was flushed: the inner check's load fills it transiently, and the inner
    # check, waiting for it, is still pending when the secret's probe load issues
    r = spectre.run_gadget("v1-nested", SECRET)
    assert spectre.CAP in r["transient_lines"]


def test_array_index_nospec_on_the_loaded_index_stops_the_leak():
    # out of bounds the mask is 0: the body reads array1[0] (= 1), and its probe line is
    # what the attacker sees, not the secret's
    r = spectre.run_gadget("v1-nospec-loaded", SECRET)
    assert not r["leaked"] and r["probe_values"] == [1]


@pytest.mark.parametrize("init", [0, 1])
def test_an_untrained_predictor_does_not_run_the_body(init):
    # counters 0 (strongly) or 1 (weakly, the profiles' start) guess "out": the attack
    # pays the misprediction after the bound's miss, and nothing runs down a wrong path
    over = {"core.branch_counter_init": init}
    for gadget in ("v1-trained", "v1-nested"):
        r = spectre.run_gadget(gadget, SECRET, overrides=over, train_calls=0)
        assert not r["leaked"] and r["transient_lines"] == []


def test_training_calls_needed():
    # one counter per site from 1: one in-bounds call makes it 2, "in"; from 0 it is 1
    bimodal = {"core.branch_history_bits": 0}
    assert spectre.run_gadget("v1-trained", SECRET, overrides=bimodal, train_calls=1)["leaked"]
    r = spectre.run_gadget("v1-trained", SECRET, overrides={"core.branch_counter_init": 0,
                                                            **bimodal}, train_calls=1)
    assert not r["leaked"]
    # with h bits of history (gshare) the k-th call's counter is indexed by its k-1 ones
    # before it: calls 1..h each train a counter of their own, the history is all ones
    # from call h+1 on, whose counter the attack uses: h + 1 calls make it 2
    h = 4
    over = {"core.branch_history_bits": h}
    assert not spectre.run_gadget("v1-trained", SECRET, overrides=over, train_calls=h)["leaked"]
    assert spectre.run_gadget("v1-trained", SECRET, overrides=over, train_calls=h + 1)["leaked"]


def test_trained_gadgets_cost_their_extra_uops():
    # in bounds and warm every guess is right and every load hits L1D: a call costs its
    # uops at uops_per_cycle 4, as v1 (1.007, docs/machine.md); the nested check adds a
    # load and a branch, the loaded index a load, array_index_nospec cmp/sbb/and
    upc = 4
    r = spectre.run_gadget("v1-trained", SECRET)
    assert r["cycles_per_call"] == pytest.approx(r["v1_cycles_per_call"], abs=0.01)
    r = spectre.run_gadget("v1-nested", SECRET)
    assert r["mitigation_cycles_per_call"] == pytest.approx(2 / upc, abs=0.02)
    r = spectre.run_gadget("v1-nospec-loaded", SECRET)
    assert r["baseline"] == "v1-loaded"
    assert r["mitigation_cycles_per_call"] == pytest.approx(3 / upc, abs=0.02)


def test_cli_trained_gadgets(capsys):
    assert main(["spectre", "v1-nested", "--secret", "0x33"]) == 0
    out = capsys.readouterr().out
    assert "secret leaked: YES" in out and f"trained  {spectre.TRAIN_CALLS} calls" in out
    assert main(["spectre", "v1-nospec-loaded", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"leaked": false' in out and '"baseline": "v1-loaded"' in out
    assert main(["spectre", "v1-trained", "--train", "0"]) == 0
    assert "secret leaked: no" in capsys.readouterr().out
    assert main(["spectre", "v1-trained", "--train", "-1"]) == 2
    assert main(["spectre", "v1", "--train", "3"]) == 2


@pytest.mark.parametrize("cores", [1, 2])
def test_a_transient_load_reads_its_cores_pending_store(cores):
    # v1-loaded whose caller stores the attack's x just before the call: on two cores the
    # store is still in the store buffer (x86-TSO's pending ring) when the wrong path loads
    # the slot, and a store "temporarily held in a processor's store buffer ... can satisfy
    # the processor's own loads" (Intel SDM vol. 3A §8.2.3.5, "Intra-Processor Forwarding Is
    # Allowed"), a mechanism that does not wait for the load's branch: the secret leaks as
    # on one core, where the store writes memory at once. Reading memory
    # instead would index array1 with the slot's old 0 and probe array1[0]'s value, 1.
    m = spectre._machine("skylake-ddr4", None, SECRET)
    if cores > 1:
        m = spectre.Machine("skylake-ddr4", cores=cores)
        m.write(spectre.ARRAY1, bytes(range(1, spectre.ARRAY1_SIZE + 1)))
        m.write(spectre.ARRAY1 + spectre.SECRET_OFFSET, bytes([SECRET]))
        m.write(spectre.BOUND, spectre.ARRAY1_SIZE.to_bytes(8, "little"))
        m.write(spectre.XPTR, b"".join(k.to_bytes(8, "little") for k in range(4)))
    slot = spectre.XPTR + 8 * spectre.XPTR_ATTACK
    m.write(slot, bytes(8))
    q = spectre.Program()
    q.site("victim").load(spectre.ARRAY1 + spectre.SECRET_OFFSET, 1).load(slot, 8)
    for k in range(spectre.TRAIN_CALLS):
        spectre.gadget_ops(q.site("training"), "v1-loaded", k % spectre.COST_INDICES)
    for v in range(256):
        q.site("attacker_flush").clflush(spectre.PROBE + v * spectre.STRIDE)
    q.clflush(spectre.BOUND).mfence()
    q.site("caller").store(slot, value=spectre.SECRET_OFFSET, size=8)
    spectre.gadget_ops(q.site("gadget"), "v1-loaded", spectre.SECRET_OFFSET)
    m.run(q if cores == 1 else [q, spectre.Program().work(1)])
    lines = [ln * 64 for ln in m.transient_lines()]
    assert spectre.PROBE + SECRET * spectre.STRIDE in lines
    assert spectre.PROBE + 1 * spectre.STRIDE not in lines
