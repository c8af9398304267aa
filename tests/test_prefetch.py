"""The prefetchers as Intel's optimization manual describes them (memmodel/prefetch/), and
the instruction address (ip) a LOAD carries for the IP-stride prefetcher. Every expected
set of lines is worked out by hand from the pattern and the rule each module's docstring
quotes."""
import numpy as np
import pytest

from emu import Machine
from isa import Program, ProgramError
from isa.ops import COL_SRC

NO_PF = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}


# ------------------------------------------------------------------ the ip of a load
def test_a_load_and_a_store_carry_their_ip_in_the_source_column():
    p = Program().load(0x1000, ip=0x401000).store(0x2000, b"ab", ip=0x401008).load(0x3000)
    assert [int(x) for x in p.ops[:, COL_SRC]] == [0x401000, 0x401008, 0]
    q = Program().loads([0x1000, 0x2000], ips=[7, 9]).stores([0x40, 0x80], ips=5)
    assert [int(x) for x in q.ops[:, COL_SRC]] == [7, 9, 5, 5]
    p.validate(), q.validate()


@pytest.mark.parametrize("build", [
    lambda: Program().load(0x1000, ip=-8),
    lambda: Program().store(0x1000, b"a", ip=-1),
    lambda: Program().loads([0x1000, 0x2000], ips=[1, -1]),
    lambda: Program().loads([0x1000, 0x2000], ips=[1, 2, 3]),
    lambda: Program().loads([0x1000], ips=[1.5]),
])
def test_a_bad_ip_is_one_clear_error(build):
    with pytest.raises(ProgramError):
        build()


def test_a_masked_loads_source_column_stays_its_base():
    p = Program().index_mask(1, 4).load_masked(0x1040, 0x1000)
    p.validate()
    assert int(p.ops[1, COL_SRC]) == 0x1000


def test_an_ip_changes_nothing_without_the_ip_stride_prefetcher():
    addrs = 0x10000 + np.arange(0, 64 * 4096, 320, dtype=np.int64)

    def run(ips):
        m = Machine("skylake-ddr4", {"cache.l1d.prefetcher": "next_line"})
        return m.run(Program().loads(addrs, ips=ips)).cycles, m.stats()
    assert run(None) == run(0x401000)
