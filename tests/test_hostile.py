"""Hostile input that used to crash the interpreter or corrupt memory silently (issue 12).

numba does not bounds-check: a facade call or an op whose address lies outside the
physical address space must be refused before compiled code sees it, and a fault before
an op's first byte must not send a lookup to an unmapped address. Each case runs in a
subprocess, so that a crash fails the test instead of killing the test run.
"""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from emu import Machine
from isa import Program
from isa.ops import MAX_WORK_CYCLES, Op
from isa.program import ProgramError


def run_child(code):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, f"signal or error {r.returncode}:\n{r.stderr[-3000:]}"
    return r.stdout.strip()


def test_poison_then_an_unmapped_indexed_load_is_a_precise_fault():
    out = run_child("""
        from emu import Machine, UnmappedAccess
        from isa import Program
        m = Machine("skylake-ddr4"); m.write(9619833, b"E"); m.poison(9625861)
        try:
            m.run(Program().load(9619830, 4).load_indexed(9629700, 4096, 1))
        except UnmappedAccess as e:
            print("fault", e.op_index)
        print(m.read(9619833, 1))
    """)
    assert out.splitlines() == ["fault 1", "b'E'"]


@pytest.mark.parametrize("call", [
    "m.read(-(2**62), 8)", "m.read(2**63 - 8, 8)", "m.write(2**63 - 1, b'y')",
    "m.write(-64, b'x' * 64)", "m.read(-64, 64)", "m.poison(-4096)", "m.poison(2**62)",
])
def test_facade_addresses_outside_physical_memory_are_refused(call):
    out = run_child(f"""
        from emu import Machine, UnmappedAccess
        m = Machine("skylake-ddr4")
        before = m.state_hash()
        try:
            {call}
        except UnmappedAccess as e:
            print("refused", "physical address space" in str(e))
        print(m.state_hash() == before)
    """)
    assert out.splitlines() == ["refused True", "True"]


@pytest.mark.parametrize("call, error", [
    ("m.read(0x1000, -1)", "ValueError"), ("m.read(4096.0, 8)", "TypeError"),
    ("m.write(True, b'x')", "TypeError"),
])
def test_facade_sizes_and_types_are_checked(call, error):
    out = run_child(f"""
        from emu import Machine
        m = Machine("skylake-ddr4")
        try:
            {call}
        except Exception as e:
            print(type(e).__name__)
    """)
    assert out == error


# -- bad values at the API: the precise exception, nothing changed, the machine usable ------
BAD_CALLS = [
    # (what, call on Machine m / Program P, exception, words the message must contain)
    ("float address", lambda m: Program().load(4096.0), ProgramError, ["4096.0", "not an integer"]),
    ("float address with a bad size", lambda m: Program().load(4096.5, 100), ProgramError,
     ["4096.5"]),
    ("bool address", lambda m: Program().load(True), ProgramError, ["True"]),
    ("float work cycles", lambda m: Program().work(1.5), ProgramError, ["1.5"]),
    ("work cycles beyond the bound", lambda m: Program().work(2**62), ProgramError,
     [str(2**62), str(MAX_WORK_CYCLES)]),
    ("flush_range kind 99", lambda m: Program().flush_range(0x1000, 64, kind=99), ProgramError,
     ["kind 99"]),
    ("copy length beyond 64 bits", lambda m: Program().rep_movsb(0, 64, 2**64), ProgramError,
     [str(2**64), "64 bits"]),
    ("float batch addresses", lambda m: Program().loads([4096.0, 8192.5]), ProgramError,
     ["float64"]),
    ("store value float", lambda m: Program().store(0x1000, value=1.5), ProgramError, ["1.5"]),
    ("indexed and masked with a base",
     lambda m: Program()._load("load", 0x1000, 8, src=0x800, flags=8 | 16),
     ProgramError, ["masked indexed load masks its index: no base"]),
    ("raw WORK beyond the bound",
     lambda m: Program.from_array([[int(Op.WORK), 0, 0, 0, -1, 2**62, 0]]), ProgramError,
     ["op 0", "work cycles"]),
    ("read size -1", lambda m: m.read(0x1000, -1), ValueError, ["-1"]),
    ("node 5", lambda m: Machine("skylake-ddr4", node=5), ValueError, ["node=5", "0, 1"]),
    ("node 1.0", lambda m: Machine("skylake-ddr4", node=1.0), TypeError, ["node"]),
    ("seed -1", lambda m: Machine("skylake-ddr4", seed=-1), ValueError, ["seed=-1"]),
    ("functional 'yes'", lambda m: Machine("skylake-ddr4", functional="yes"), TypeError,
     ["functional"]),
    ("2**13 WORK ops of 2**40 cycles: beyond the clock limit",
     lambda m: m.run(Program.from_array(np.tile(
         np.array([[int(Op.WORK), 0, 0, 0, -1, MAX_WORK_CYCLES, 0]]), (1 << 13, 1)))),
     ProgramError, ["clock", "limit"]),
]


@pytest.mark.parametrize("what, call, error, words", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_values_are_precise_errors_and_leave_the_machine_usable(what, call, error, words):
    m = Machine("skylake-ddr4")
    m.write(0x1000, b"before")
    before = m.state_hash()
    with pytest.raises(error) as e:
        call(m)
    for w in words:
        assert w in str(e.value), (what, str(e.value))
    assert m.state_hash() == before
    assert m.run(Program().load(0x1000, 6)).cycles > 0 and m.read(0x1000, 6) == b"before"


def test_the_clock_never_wraps():
    """Two WORK ops of 2**40 cycles and a load: the clock is past 2**41, not wrapped (with
    2**62 each, the sum wrapped and the run reported 225 cycles)."""
    m = Machine("skylake-ddr4")
    r = m.run(Program().work(MAX_WORK_CYCLES).work(MAX_WORK_CYCLES).load(0x1000))
    assert 2 * MAX_WORK_CYCLES < r.cycles < 2 * MAX_WORK_CYCLES + 10_000


def test_a_bulk_op_beyond_the_memory_limit_is_refused_before_allocating():
    import resource
    from emu import MemoryLimitFault
    m = Machine("skylake-ddr4", memory_limit_bytes=64 << 20)
    m.write(0x1000, b"kept")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(MemoryLimitFault) as e:
        m.run(Program().load(0x1000, 4).rep_movsb(1 << 30, 2 << 30, 1 << 30))
    assert e.value.op_index == 1
    assert f"{1 << 30} bytes" in str(e.value) and f"{64 << 20} bytes" in str(e.value)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 64 << 10   # KiB: < 64 MiB
    assert m.read(0x1000, 4) == b"kept" and m.run(Program().load(0x1000)).cycles > 0
    with pytest.raises(ValueError, match="limit"):
        m.write(1 << 30, np.zeros(128 << 20, dtype=np.uint8))
    timing_only = Machine("skylake-ddr4", functional=False, memory_limit_bytes=64 << 20)
    assert timing_only.run(Program().rep_movsb(1 << 30, 2 << 30, 1 << 24)).cycles > 0
