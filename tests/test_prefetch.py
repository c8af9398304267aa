"""The prefetchers as Intel's optimization manual describes them (memmodel/prefetch/), and
the instruction address (ip) a LOAD carries for the IP-stride prefetcher. Every expected
set of lines is worked out by hand from the pattern and the rule each module's docstring
quotes."""
import os
import subprocess
import sys

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


# ------------------------------------------------------------------ a level's prefetchers
@pytest.mark.parametrize("given, names", [
    ("none", ()), ("next_line", ("next_line",)),
    ("next_line,ip_stride", ("next_line", "ip_stride")),
    (["streamer", "spatial"], ("streamer", "spatial")), ([], ())])
def test_a_level_names_one_prefetcher_several_or_none(given, names):
    from memmodel.profile import load_profile
    assert load_profile("skylake-ddr4", {"cache.l2.prefetcher": given}).get(
        "cache.l2.prefetcher") == names


@pytest.mark.parametrize("given, why", [
    ("none,stream", "together"), (["spatial", "spatial"], "twice"), ("strider", "not one of"),
    (["stream", "streamer"], "share one table"), (3, "must be a name")])
def test_a_bad_prefetcher_list_is_one_clear_error(given, why):
    from memmodel.profile import ProfileError, load_profile
    with pytest.raises(ProfileError, match=why):
        load_profile("skylake-ddr4", {"cache.l2.prefetcher": given})


# ------------------------------------------------------------------ the patterns
BASE = 0x10000          # a 4 KiB page of dram0 on skylake-ddr4; its first line:
LINE0 = BASE >> 6
# the streamer's reach pinned, so that the hand counts below hold whatever the profile says
REACH = {"prefetch.stream_degree_lines": 2, "prefetch.stream_distance_lines": 20}


def machine(l1d="none", l2="none", **extra):
    return Machine("skylake-ddr4", {"cache.l1d.prefetcher": l1d, "cache.l2.prefetcher": l2,
                                    **REACH, **extra})


def lines(m, level):
    return {line for s in m.cache_contents(level) for line in s}


def test_the_streamer_follows_a_descending_stream_within_its_page():
    # misses on lines 63, 62, 61 of the page: 62 confirms a descending stream (63 - 1) and
    # issues 2 lines below it, 61 and 60; 61 (in L2 now, an L1 miss still) issues 59, 58
    m = machine(l2="streamer")
    m.run(Program().load(BASE + 63 * 64).load(BASE + 62 * 64).load(BASE + 61 * 64))
    assert m.stats()["levels"]["l2"]["prefetch_fills"] == 4
    assert {LINE0 + k for k in (58, 59, 60, 61)} <= lines(m, "l2")
    assert LINE0 + 57 not in lines(m, "l2")


def test_the_ascending_only_stream_ignores_the_same_descending_stream():
    m = machine(l2="stream")
    m.run(Program().load(BASE + 63 * 64).load(BASE + 62 * 64).load(BASE + 61 * 64))
    assert m.stats()["levels"]["l2"]["prefetch_fills"] == 0


def test_a_descending_stream_stops_at_the_start_of_its_page():
    # 2, 1: a descending stream; from 1 only line 0 is left in the page; 0 then has none
    m = machine(l2="streamer")
    m.run(Program().load(BASE + 2 * 64).load(BASE + 64).load(BASE))
    assert m.stats()["levels"]["l2"]["prefetch_fills"] == 1
    assert LINE0 - 1 not in lines(m, "l2")


def test_the_streamer_runs_ascending_streams_as_the_stream_prefetcher_does():
    rng = np.random.default_rng(3)
    addrs = BASE + np.sort(rng.integers(0, 1 << 16, 3000)) // 64 * 64

    def run(name):
        m = machine(l2=name)
        return m.run(Program().loads(addrs)).cycles, m.stats()
    assert run("streamer") == run("stream")


def test_the_spatial_prefetcher_completes_the_128_byte_pair_of_an_l2_miss():
    # line 1 misses the L2: its pair line 0 comes too; line 0 then misses L1 only (no
    # trigger); line 2 misses the L2: line 3 comes
    m = machine(l2="spatial")
    m.run(Program().load(BASE + 64))
    assert m.stats()["levels"]["l2"]["prefetch_fills"] == 1 and LINE0 in lines(m, "l2")
    m.run(Program().load(BASE).load(BASE + 128))
    assert m.stats()["levels"]["l2"]["prefetch_fills"] == 2
    assert {LINE0 + k for k in range(4)} <= lines(m, "l2")
    assert LINE0 + 4 not in lines(m, "l2")


IP = 0x401000


def test_the_ip_stride_prefetcher_follows_one_loads_forward_stride():
    # 6 loads 256 B apart by one instruction: the third (a, a+s, a+2s) prefetches the
    # fourth's line; the fourth to sixth hit prefetched lines, each training on and
    # prefetching the next: 4 prefetches, 3 misses, 3 useful
    m = machine(l1d="ip_stride")
    m.run(Program().loads(BASE + 256 * np.arange(6), ips=IP))
    l1 = m.stats()["levels"]["l1d"]
    assert (l1["prefetch_fills"], l1["load_misses"], l1["prefetch_useful"]) == (4, 3, 3)
    assert (BASE + 6 * 256) >> 6 in lines(m, "l1d")


def test_the_ip_stride_prefetcher_follows_a_backward_stride():
    m = machine(l1d="ip_stride")
    m.run(Program().loads(BASE + 3072 - 512 * np.arange(5), ips=IP))
    l1 = m.stats()["levels"]["l1d"]
    assert (l1["prefetch_fills"], l1["load_misses"], l1["prefetch_useful"]) == (3, 3, 2)
    assert (BASE + 512) >> 6 in lines(m, "l1d")


@pytest.mark.parametrize("stride, fills", [(2048, 1), (2112, 0)])
def test_the_ip_stride_prefetcher_detects_strides_up_to_2_kib(stride, fills):
    # 3 loads: the third's next address lies in its own page in both cases
    m = machine(l1d="ip_stride")
    m.run(Program().loads(BASE + stride * np.arange(3), ips=IP))
    assert m.stats()["levels"]["l1d"]["prefetch_fills"] == fills


def test_the_ip_stride_prefetcher_tells_loads_apart_by_their_ip():
    # two loads interleaved, strides +192 and -320: each alone is a regular stride (each
    # prefetches once, at its third access); without ips they train nothing
    a = BASE + 192 * np.arange(3)
    b = BASE + 0x800 - 320 * np.arange(3)
    addrs = np.ravel(np.column_stack([a, b]))
    m = machine(l1d="ip_stride")
    m.run(Program().loads(addrs, ips=np.tile([IP, IP + 8], 3)))
    assert m.stats()["levels"]["l1d"]["prefetch_fills"] == 2
    m = machine(l1d="ip_stride")
    m.run(Program().loads(addrs))
    assert m.stats()["levels"]["l1d"]["prefetch_fills"] == 0


def _walk(p, addrs):
    for a in addrs:
        p.load(int(a))        # one line of Python: one load instruction in a loop
    return p


def test_a_programs_line_ips_give_a_loop_one_ip_and_other_lines_others():
    p = _walk(Program(line_ips=True), BASE + 64 * np.arange(3))
    p.load(BASE)
    p.store(BASE, b"x")
    ips = [int(x) for x in p.ops[:, COL_SRC]]
    assert ips[0] == ips[1] == ips[2] != 0 and len({ips[0], ips[3], ips[4]}) == 3
    assert Program(line_ips=True).load(BASE, ip=IP).ops[0, COL_SRC] == IP   # given wins
    assert int(_walk(Program(), [BASE]).ops[0, COL_SRC]) == 0               # off: none


def test_a_line_ip_is_the_same_in_another_process():
    # no hash seed or order of use: a program's result must not depend on the process
    code = ("import sys; sys.path.insert(0, {root!r}); sys.path.insert(0, {here!r}); "
            "from test_prefetch import _walk; from isa import Program; "
            "from isa.ops import COL_SRC; "
            "print(int(_walk(Program(line_ips=True), [4096]).ops[0, COL_SRC]))")
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONHASHSEED="123")
    out = subprocess.run([sys.executable, "-c", code.format(root=os.path.dirname(here),
                                                            here=here)],
                         capture_output=True, text=True, env=env, check=True).stdout
    assert int(out) == int(_walk(Program(line_ips=True), [4096]).ops[0, COL_SRC])


def test_line_ips_train_the_ip_stride_prefetcher_as_one_given_ip_does():
    addrs = BASE + 3072 - 512 * np.arange(5)
    counts = []
    for p in (_walk(Program(line_ips=True), addrs), Program().loads(addrs, ips=IP)):
        m = machine(l1d="ip_stride")
        m.run(p)
        l1 = m.stats()["levels"]["l1d"]
        counts.append((l1["prefetch_fills"], l1["load_misses"], l1["prefetch_useful"]))
    assert counts == [(3, 3, 2)] * 2      # the backward-stride case's hand count above


def test_repeat_with_every_prefetcher_is_n_runs():
    """emu.fastforward sees the new tables as the rest of the state: a strided body by two
    loads with ips, up and down a page, repeated, is bit-identical to its runs one by one."""
    from tests.test_fastforward import _plain, _same
    p = Program()
    for k in range(24):
        p.load(BASE + 320 * k, ip=IP)
        p.load(BASE + 0x3000 - 192 * k, ip=IP + 8)
        p.store(BASE + 0x5000 + 64 * k, b"abcdefgh")
    over = {"cache.l1d.prefetcher": "next_line,ip_stride",
            "cache.l2.prefetcher": "streamer,spatial"}
    plain, fast = Machine("skylake-ddr4", over), Machine("skylake-ddr4", over)
    r = fast.run(p, repeat=40)
    assert r.cycles == _plain(plain, p, 40)
    _same(plain, fast)
