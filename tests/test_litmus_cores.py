"""The litmus tests of tests/litmus.py on Machine(cores=N), against x86-TSO's enumerator.

Each test's threads become one program per core (a store, load, fence or locked op per op),
run many times under random timing: start offsets and WORK between ops, the locations
packed in one line or spread over lines and pages, each line cached by some cores and
flushed by others first, the cores brought together by a WAIT barrier. As tests/reference_tso.py says how the emulator is to be checked:
every final state must be one x86-TSO allows (tso_outcomes: the forbidden ones never come),
and over the runs every relaxed outcome (allowed by x86-TSO, not by SC) must come, or the
perturbations do not reach the store buffer's window and the first check proves little.
The expected side is the enumerator only; the emulator's outcomes are never compared with
themselves.
"""
import numpy as np
import pytest

from emu import Machine
from isa import Program
from litmus import TESTS
from reference_tso import relaxed_outcomes, tso_outcomes

# perturbed runs per test; a test with relaxed outcomes takes RUNS_RELAXED per relaxed
# outcome, to reach each of them (every run is checked against the enumerator either way)
RUNS, RUNS_RELAXED = 40, 200
MAX_START = 300      # cycles of WORK before a core's first op: about a store's miss to DRAM,
#                      so that one core's stores are still buffered while another's ops run
MAX_GAP = 300        # cycles of WORK between two ops
GAPS = (0.1, 0.7)    # the share of ops with a gap before them, one of these a run: dense runs
#                      overlap the cores' ops, gapped ones open windows between two drains
BASE = 0x100000
FLAG = 0x80000   # the setup's barrier: its own line and page


def _places(test, rng):
    """Each location's address: packed in one line, or a line (and a page) each."""
    locs = test.locations()
    if rng.random() < 0.3:
        return {x: BASE + 8 * i for i, x in enumerate(locs)}
    return {x: BASE + 4096 * i + 64 * int(rng.integers(0, 64)) for i, x in enumerate(locs)}


def _program(ops, at, rng):
    """One thread's ops as a Program: WORK at the start and between ops, at random."""
    p = Program().work(int(rng.integers(0, MAX_START)))
    gaps = GAPS[int(rng.integers(0, len(GAPS)))]
    last = None   # the register the last recording op wrote: what plus_recorded adds
    for op in ops:
        if rng.random() < gaps:
            p.work(int(rng.integers(0, MAX_GAP)))
        if op.kind == "st":
            if op.src is not None and op.src != last:
                raise AssertionError(f"store adds {op.src!r}, not the last register written")
            p.store(at[op.addr], size=8, value=op.value, plus_recorded=op.src is not None)
        elif op.kind == "ld":
            p.load(at[op.addr], 8, record=op.reg)
        elif op.kind == "mfence":
            p.mfence()
        elif op.kind == "sfence":
            p.sfence()
        elif op.kind == "xchg":
            p.lock_rmw(at[op.addr], size=8, value=op.value, record=op.reg)
        elif op.kind == "lock_xadd":
            p.lock_xadd(at[op.addr], op.value, 8, record=op.reg)
        else:
            raise AssertionError(f"no program op for litmus op {op.kind!r}")
        if op.reg is not None:
            last = op.reg
    return p


def _setup(m, at, gen, rng):
    """Programs that leave each location's line cached by some cores, flushed by others,
    then meet at a barrier (core 0 stores `gen` to FLAG and waits for it to drain, the
    others wait for it): a core's clock goes on from its last run, and the barrier brings
    the cores' clocks within a PAUSE of each other before the test's programs start."""
    progs = [Program() for _ in range(m.cores)]
    for p in progs:
        for a in at.values():
            r = rng.random()
            if r < 0.5:
                p.load(a, 8)
            elif r < 0.75:
                p.clflush(a)
    progs[0].store(FLAG, size=8, value=gen).mfence()
    for p in progs[1:]:
        p.wait(FLAG, gen, 8)
    return progs


def _run_once(m, test, gen, rng):
    at = _places(test, rng)
    for x, a in at.items():
        m.write(a, int(test.init.get(x, 0)).to_bytes(8, "little"))
    m.run(_setup(m, at, gen, rng))
    progs = [_program(ops, at, rng) for ops in test.threads]
    res = m.run(progs + [Program() for _ in range(m.cores - len(progs))])
    state = {f"{t}:{reg}": v for t, r in enumerate(res.cores) for reg, v in r.values.items()}
    state.update({x: int.from_bytes(m.read(a, 8), "little") for x, a in at.items()})
    return tuple(sorted(state.items()))


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_litmus_outcomes_are_x86_tso_and_reach_the_relaxed_ones(test):
    rng = np.random.default_rng(sum(map(ord, test.name)))
    allowed, relaxed = tso_outcomes(test), relaxed_outcomes(test)
    runs = RUNS_RELAXED * len(relaxed) if relaxed else RUNS
    # two cores at least: a one-thread test's stores too wait in a store buffer (with one
    # core they would write memory at once), and its loads must forward from it
    m = Machine("skylake-ddr4", cores=max(2, len(test.threads)))
    seen = {}
    for run in range(runs):
        outcome = _run_once(m, test, run + 1, rng)
        assert outcome in allowed, f"{test.name} run {run}: {dict(outcome)} is not x86-TSO"
        seen[outcome] = seen.get(outcome, 0) + 1
    missing = relaxed - set(seen)
    assert not missing, (f"{test.name}: relaxed outcomes never reached in {runs} runs: "
                         f"{[dict(o) for o in missing]}; seen {seen}")
