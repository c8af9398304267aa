"""Hostile input that used to crash the interpreter or corrupt memory silently (issue 12).

numba does not bounds-check: a facade call or an op whose address lies outside the
physical address space must be refused before compiled code sees it, and a fault before
an op's first byte must not send a lookup to an unmapped address. Each case runs in a
subprocess, so that a crash fails the test instead of killing the test run.
"""
import subprocess
import sys
import textwrap

import pytest


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
