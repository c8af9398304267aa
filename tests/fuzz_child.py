"""Random programs and facade calls against a Machine, in a child process of tests/test_fuzz.py.

`python tests/fuzz_child.py EXAMPLES SEED` runs EXAMPLES hypothesis examples. Every
example builds a machine (user, supervisor and persistent regions with unmapped gaps
between them), poisons lines, makes random facade calls and runs random programs with
every op kind and flag, in both privilege modes. Allowed outcomes are results and the
documented exceptions (EmuFault, ProgramError, ValueError, TypeError); after any of them
the machine must still run a program and read memory. A crash of the interpreter (what
numba's unchecked indexing turns a bad index into) kills this process with a signal,
which the parent reports; any other exception fails with its traceback and the program.
"""
import sys

import numpy as np
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from emu import EmuFault, Machine
from isa import Program
from isa.ops import (
    FLAG_DEPENDENT,
    FLAG_EXTABLE,
    FLAG_MCSAFE,
    FLAG_ZERO_TAIL,
    FLUSH_KINDS,
    N_COLS,
    PHYS_LIMIT,
)
from isa.program import ProgramError

KiB, MiB = 1 << 10, 1 << 20
REGIONS = [   # gaps between them are unmapped
    dict(name="user", base=1 * MiB, size_bytes=1 * MiB, media="dram", node=0, privilege="user"),
    dict(name="kern", base=4 * MiB, size_bytes=4 * MiB, media="dram", node=0,
         privilege="supervisor"),
    dict(name="remote", base=8 * MiB, size_bytes=1 * MiB, media="dram", node=1,
         privilege="supervisor"),
    dict(name="pmem", base=16 * MiB, size_bytes=2 * MiB, media="optane", node=0,
         privilege="supervisor"),
]
EDGES = [r["base"] for r in REGIONS] + [r["base"] + r["size_bytes"] for r in REGIONS]
EXPECTED = (EmuFault, ProgramError, ValueError, TypeError)

# Addresses: near region edges (inside and out), anywhere in a region, in the gaps, and
# hostile ones (negative, at the end of the physical address space, beyond it).
addresses = st.one_of(
    st.builds(lambda e, d: max(e + d, 0), st.sampled_from(EDGES), st.integers(-256, 256)),
    st.sampled_from(REGIONS).flatmap(
        lambda r: st.integers(r["base"], r["base"] + r["size_bytes"] - 1)),
    st.integers(0, 20 * MiB),
    st.sampled_from([0, PHYS_LIMIT - 64, PHYS_LIMIT - 1, PHYS_LIMIT, 2**62, 2**63 - 1]),
)
hostile = st.one_of(addresses, st.integers(-(2**63), 2**63 - 1))
lengths = st.one_of(st.integers(0, 300), st.integers(0, 64 * KiB),
                    st.sampled_from([2**40, PHYS_LIMIT, 2**62]))
copy_flags = st.sampled_from([0, FLAG_EXTABLE, FLAG_MCSAFE, FLAG_EXTABLE | FLAG_MCSAFE,
                              FLAG_EXTABLE | FLAG_ZERO_TAIL, FLAG_DEPENDENT])
load_flags = st.sampled_from([0, FLAG_EXTABLE, FLAG_MCSAFE, FLAG_DEPENDENT])


def _op(draw, p):
    kind = draw(st.integers(0, 20))
    a = draw(addresses)
    if kind <= 3:
        p.load(a, draw(st.integers(1, 64)), flags=draw(load_flags))
    elif kind == 4:
        p.load(a, draw(st.integers(1, 8)))
        p.load_indexed(draw(addresses), draw(st.integers(0, 4096)), draw(st.integers(1, 64)))
    elif kind == 5:
        p.index_mask(draw(st.integers(0, 100)), draw(st.integers(0, 100)))
        p.load_masked(a, max(a - draw(st.integers(0, 4096)), 0), draw(st.integers(1, 64)))
    elif kind <= 7:
        p.store(a, size=draw(st.integers(1, 64)), value=draw(st.integers(0, 2**64 - 1)),
                flags=draw(st.sampled_from([0, FLAG_EXTABLE])))
    elif kind == 8:
        n = draw(st.sampled_from([4, 8, 16, 32, 64]))
        p.movnt(a - a % n, size=n)
    elif kind == 9:
        getattr(p, draw(st.sampled_from(["clflush", "clflushopt", "clwb"])))(a)
    elif kind == 10:
        getattr(p, draw(st.sampled_from(["sfence", "lfence", "mfence", "stac", "clac"])))()
    elif kind <= 13:
        copy = draw(st.sampled_from(["rep_movsb", "nt_copy", "careful_copy"]))
        getattr(p, copy)(a, draw(addresses), draw(lengths), flags=draw(copy_flags))
    elif kind == 14:
        p.flush_range(a, draw(lengths), kind=draw(st.sampled_from(FLUSH_KINDS)))
    elif kind == 15:
        p.peer_write(a, size=draw(st.integers(1, 64)), value=draw(st.integers(0, 255)))
    elif kind == 16:
        p.peer_read(a, draw(st.integers(1, 64)))
    elif kind == 17:
        p.work(draw(st.one_of(st.integers(0, 1000), st.just(2**40))),
               dependent=draw(st.booleans()))
    elif kind == 18:
        with p.guarded(draw(st.integers(0, 100)), draw(st.integers(0, 100)),
                       predict_in=draw(st.booleans())):
            p.load(a, 8)
            p.load_indexed(draw(addresses), 64, 1)
    elif kind == 19:
        p.site(draw(st.sampled_from(["f", "g", "(none)"])))
    else:
        p.store(a, bytes(draw(st.integers(1, 64))))


@st.composite
def programs(draw):
    p = Program()
    for _ in range(draw(st.integers(1, 12))):
        try:
            _op(draw, p)
        except ProgramError:   # a builder refusal is an allowed outcome: keep building
            pass
    return p


@st.composite
def raw_programs(draw):
    """Op arrays with arbitrary values: the validator must refuse what the core cannot run."""
    n = draw(st.integers(1, 6))
    cols = st.one_of(st.integers(-2, 80), addresses, st.integers(-(2**63), 2**63 - 1))
    return np.array([[draw(cols) for _ in range(N_COLS)] for _ in range(n)], dtype=np.int64)


facade_calls = st.lists(st.tuples(
    st.sampled_from(["read", "write", "poison", "heal", "cached", "crash_read"]),
    hostile, st.one_of(st.integers(-2, 300), st.sampled_from([2**40, 2**62]))), max_size=6)


def _call(m, name, a, n):
    if name == "read":
        m.read(a, n)
    elif name == "write":
        m.write(a, b"\xab" * max(min(n, 4096), 0))
    elif name == "poison":
        m.poison(a)
    elif name == "heal":
        m.poison(a, on=False)
    elif name == "cached":
        m.cached(a)
    else:
        m.crash().read(a, max(min(n, 4096), 0))


def _outcome(f, *args):
    try:
        f(*args)
    except EXPECTED as e:
        return type(e).__name__
    return "ok"


def _still_usable(m):
    m.mode = "kernel"
    for a in (4 * MiB, 1 * MiB):
        m.poison(a, on=False)
    m.run(Program().stac().store(4 * MiB, b"ok").load(4 * MiB, 2).load(1 * MiB, 8).clac())
    assert m.read(4 * MiB, 2) == b"ok"


@given(seed=st.integers(0, 3), smap=st.booleans(), calls=facade_calls,
       runs=st.lists(st.tuples(st.sampled_from(["kernel", "user"]), st.booleans(),
                               st.one_of(programs(), raw_programs())), min_size=1, max_size=3),
       poison=st.lists(addresses, max_size=3))
def fuzz(seed, smap, calls, runs, poison):
    m = Machine("cascadelake-optane", regions=REGIONS, smap=smap, seed=seed)
    for a in poison:
        _outcome(m.poison, a)
    for call in calls:
        _outcome(_call, m, *call)
    for mode, ac, prog in runs:
        m.mode = mode
        if isinstance(prog, np.ndarray):
            _outcome(lambda ops: m.run(Program.from_array(ops)), prog)
        else:
            if ac:
                prog = Program().stac().extend(prog)
            _outcome(m.run, prog)
        m.stats()
    _still_usable(m)


if __name__ == "__main__":
    examples, run_seed = int(sys.argv[1]), int(sys.argv[2])
    seed(run_seed)(settings(max_examples=examples, deadline=None, database=None,
                            suppress_health_check=list(HealthCheck))(fuzz))()
    print("examples", examples)
