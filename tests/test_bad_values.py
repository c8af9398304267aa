"""Hostile values: every bad profile value, override, profile name or study option is an
error naming what was wrong (ProfileError, or `emu: error:` / argparse's `error:` with exit
status 2 and nothing on stdout), never a traceback or a huge allocation."""
import math
import re
from pathlib import Path

import pytest

from emu import Machine
from emu.studies.cli import main
from isa import Program
from isa.ops import PHYS_LIMIT
from memmodel import profile_schema as schema
from memmodel.media import KINDS
from memmodel.profile import ProfileError, check_regions, load_profile
from memmodel.tables import MAX_WC_BUFFERS

BASE = "skylake-ddr4"
OPTANE = "cascadelake-optane"
SHIPPED = Path(load_profile(BASE).files[-1])
TABLES = {"core": schema.CORE, "cache": schema.CACHE, "llc": schema.LLC_EXTRA,
          "l2": schema.L2_EXTRA,
          "instr": schema.INSTR, "prefetch": schema.PREFETCH, "numa": schema.NUMA,
          "media": schema.MEDIA, "software": {"any key": schema.SOFTWARE_VALUE}, "region": schema.REGION,
          **{f"media kind {k}": keys for k, (_, keys) in KINDS.items()}}


def _raises(needles, spec, overrides=None):
    with pytest.raises(ProfileError) as info:
        load_profile(spec, overrides)
    msg = str(info.value)
    for needle in needles:
        assert needle in msg, f"{needle!r} not in {msg!r}"
    return msg


# ---------------------------------------------------------------- the schema

@pytest.mark.parametrize("table", list(TABLES))
def test_every_number_has_a_finite_range(table):
    for key, (kind, _, *limit) in TABLES[table].items():
        if kind in ("int", "num"):
            lo, hi = limit
            assert math.isfinite(lo) and math.isfinite(hi) and lo < hi, (table, key)


def test_bounds_copied_from_numba_modules_agree():
    """profile.py loads without numba, so it repeats these two limits."""
    assert schema.PHYS_LIMIT == PHYS_LIMIT
    assert schema.CORE["wc_buffers"][3] == MAX_WC_BUFFERS


# ---------------------------------------------------------------- values

OVERRIDES = [   # (profile, key, value, range)
    (BASE, "core.rob_entries", 10**12, "[1, 4096]"),
    (BASE, "core.lfb_entries", 10**12, "[1, 256]"),
    (BASE, "cache.l2.mshr_entries", 0, "[1, 256]"),
    (BASE, "media.dram.wpq_entries", 10**12, "[1, 4096]"),
    (BASE, "core.store_buffer_entries", 2**63, "[1, 4096]"),
    (BASE, "core.wc_buffers", MAX_WC_BUFFERS + 1, "[1, 64]"),
    (BASE, "cache.llc.size_bytes", 1 << 40, "[64, 1073741824]"),
    (BASE, "core.freq_ghz", math.nan, "[0.1, 10]"),
    (BASE, "media.dram.read_latency_ns", math.inf, "[0, 1000000]"),
    (BASE, "media.dram.write_accept_ns", -math.inf, "[0, 1000000]"),
    (BASE, "numa.remote_latency_ns", 1e300, "[0, 1000000]"),
    (BASE, "software.vfs_read_ns", 1e300, "[0, 1000000]"),
    (BASE, "media.dram.read_bw_gbps", 0.0, "[0.001, 10000]"),
    (BASE, "media.dram.write_bw_gbps", math.nan, "[0.001, 10000]"),
    (BASE, "instr.clflush_cycles", -1, "[0, 1000000]"),
    (BASE, "instr.machine_check_cycles", 2**63, "[0, 1000000]"),
    (BASE, "prefetch.stream_entries", 10**9, "[1, 256]"),
    (BASE, "media.dram.channels", 1000, "[1, 64]"),
    (BASE, "core.rob_entries", True, "[1, 4096]"),         # a bool is not a number
    (BASE, "core.rob_entries", 224.0, "[1, 4096]"),        # nor a float an integer
    (BASE, "cache.l1d.hit_cycles", "4", "[1, 1000000]"),
    (OPTANE, "media.optane.xpline_bytes", 4096, "[64, 2048]"),
    (OPTANE, "media.optane.xpbuffer_entries", 10**12, "[1, 1024]"),
    (OPTANE, "media.optane.buffer_read_latency_ns", math.inf, "[0, 1000000]"),
]


@pytest.mark.parametrize("prof, key, value, limits", OVERRIDES,
                         ids=[f"{k}={v!r}" for _, k, v, _ in OVERRIDES])
def test_override_out_of_range(prof, key, value, limits):
    _raises([key, repr(value), limits, "with overrides"], prof, {key: value})


def test_an_integer_too_long_to_print_is_still_named():
    _raises(["core.rob_entries", "an integer of", "[1, 4096]"], BASE,
            {"core.rob_entries": 10**5000})


def _file_with(tmp_path, section, key, value):
    """The shipped profile with `key`'s value in [section] replaced by the TOML text `value`."""
    text = SHIPPED.read_text()
    value_re = re.compile(rf"^{key} = \{{ value = [^,]+,", re.MULTILINE)
    m = value_re.search(text, text.index(f"[{section}]\n"))
    path = tmp_path / "variant.toml"
    path.write_text(text[:m.start()] + f"{key} = {{ value = {value}," + text[m.end():])
    return path


IN_FILE = [   # (section, key, TOML value, shown value, range)
    ("core", "rob_entries", "1000000000000", "1000000000000", "[1, 4096]"),
    ("core", "lfb_entries", "9223372036854775808", "9223372036854775808", "[1, 256]"),
    ("core", "freq_ghz", "nan", "nan", "[0.1, 10]"),
    ("media.dram", "read_latency_ns", "inf", "inf", "[0, 1000000]"),
    ("media.dram", "read_latency_ns", "-inf", "-inf", "[0, 1000000]"),
    ("media.dram", "read_latency_ns", "1e300", "1e+300", "[0, 1000000]"),
    ("media.dram", "wpq_entries", "1000000000000", "1000000000000", "[1, 4096]"),
    ("cache.llc", "size_bytes", "1099511627776", "1099511627776", "[64, 1073741824]"),
]


@pytest.mark.parametrize("section, key, text, shown, limits", IN_FILE,
                         ids=[f"{s}.{k}={t}" for s, k, t, _, _ in IN_FILE])
def test_file_value_out_of_range(tmp_path, section, key, text, shown, limits):
    path = _file_with(tmp_path, section, key, text)
    msg = _raises([f"{path}: {section}.{key}: must be", f"got {shown}", limits], path)
    assert "with overrides" not in msg


def test_an_llc_prefetcher_is_a_profile_error():
    _raises(["cache.llc.prefetcher", "l1d and l2 only"], BASE, {"cache.llc.prefetcher": "stream"})


def test_the_machine_after_a_rejected_override_is_still_usable():
    with pytest.raises(ProfileError, match="core.rob_entries"):
        Machine(BASE, {"core.rob_entries": 10**12})
    with pytest.raises(ProfileError, match="core.freq_ghz"):
        Machine(BASE, {"core.freq_ghz": math.nan})
    assert load_profile(BASE).values["core"]["rob_entries"] == 224
    m = Machine(BASE)
    r = m.run(Program().store(0x1000, size=8, value=7).load(0x1000))
    assert r.ops == 2 and r.cycles > 0 and m.read(0x1000, 1) == b"\x07"


@pytest.mark.parametrize("overrides", [[("core.rob_entries", 1)], {1: 2}])
def test_overrides_must_be_a_dict_of_dotted_keys(overrides):
    _raises(["override"], BASE, overrides)


# ---------------------------------------------------------------- regions

GIB = 1 << 30
REGIONS = {   # name -> (regions, needles)
    "base beyond the address space": ([{"base": PHYS_LIMIT, "size_bytes": 4096}],
                                      ["regions[0].base", str(PHYS_LIMIT)]),
    "end beyond the address space": ([{"base": PHYS_LIMIT - 4096, "size_bytes": 8192}],
                                     ["regions[0] 'r0': ends at", hex(PHYS_LIMIT + 4096)]),
    "base 2**63": ([{"base": 2**63, "size_bytes": 4096}], ["regions[0].base", str(2**63)]),
    "negative base": ([{"base": -4096, "size_bytes": 4096}], ["regions[0].base", "-4096"]),
    "one region too large": ([{"base": 0, "size_bytes": 1 << 50}],
                             ["regions[0].size_bytes", str(1 << 50), "[4096, 70368744177664]"]),
    "too much in all": ([{"base": i << 46, "size_bytes": 1 << 46} for i in range(2)],
                        ["regions: the regions map", "0x800000000000"]),
    "node 2**40": ([{"base": 0, "size_bytes": GIB, "node": 1 << 40}],
                   ["regions[0].node", "[0, 1023]"]),
}


@pytest.mark.parametrize("case", list(REGIONS))
def test_bad_region(case):
    regions, needles = REGIONS[case]
    full = [{"name": f"r{i}", "media": "dram", "node": 0, **r} for i, r in enumerate(regions)]
    with pytest.raises(ProfileError) as info:
        check_regions(full, ("dram",), "regions")
    for needle in needles:
        assert needle in str(info.value)


def test_a_profile_region_beyond_the_address_space(tmp_path):
    path = tmp_path / "far.toml"
    path.write_text(SHIPPED.read_text().replace("base = 68719476736", f"base = {PHYS_LIMIT}"))
    _raises([str(path), "region[1].base", str(PHYS_LIMIT)], path)


# ---------------------------------------------------------------- profile names and inherit

@pytest.mark.parametrize("spec, needle", [
    ("..", "no shipped profile named '..'"), (".", "no shipped profile named '.'"),
    ("../x", "../x: no such profile file"), ("a/b", "a/b: no such profile file"),
    # a name never resolves through profiles/: with a separator it is a path from here
    ("../profiles/skylake-ddr4", "no such profile file"),
    ("skylake-ddr4/", "no such profile file"),
])
def test_profile_names_stay_in_the_profiles_folder(spec, needle, tmp_path, monkeypatch):
    # from an empty folder, so no file around the checkout can answer to the path
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    _raises([needle], spec)


def test_a_path_without_suffix_is_read_as_a_path(tmp_path):
    (tmp_path / "sub").mkdir()
    mine = tmp_path / "sub" / "mine"
    mine.write_text(SHIPPED.read_text())
    assert load_profile(str(mine)).values == load_profile(BASE).values
    _raises([str(tmp_path), "cannot read"], str(tmp_path / "sub") + "/")


@pytest.mark.parametrize("parent", ["../base.toml", "sub/../base.toml", "../../etc/passwd",
                                    "ABSOLUTE"])
def test_inherit_stays_beside_the_file(tmp_path, parent):
    (tmp_path / "base.toml").write_text(SHIPPED.read_text())     # it exists: refused by name
    child = tmp_path / "sub" / "child.toml"
    child.parent.mkdir()
    parent = str(tmp_path / "base.toml") if parent == "ABSOLUTE" else parent
    child.write_text(f'[profile]\ninherit = "{parent}"\ndescription = "child"\n')
    _raises([str(child), "profile.inherit", parent, "without '..'"], child)


def test_inherit_from_a_subfolder(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "base.toml").write_text(SHIPPED.read_text())
    child = tmp_path / "child.toml"
    child.write_text('[profile]\ninherit = "lib/base.toml"\ndescription = "child"\n')
    assert load_profile(child).files == [str(tmp_path / "lib" / "base.toml"), str(child)]


def test_inherit_of_an_unlisted_name():
    _raises(["no shipped profile named '..'"], {"profile": {"inherit": "..", "description": "x"}})


def test_a_profile_section_that_is_not_a_table(tmp_path):
    path = tmp_path / "odd.toml"
    path.write_text("profile = 3\n")
    _raises([str(path), "profile: must be a table"], path)
    _raises(["<dict>: profile: must be a table"], {"profile": 3})


# ---------------------------------------------------------------- the command line

def cli_error(capsys, *argv):
    """stderr of a command that must fail cleanly: exit status 2, an `emu: error:` line, no
    stdout, no traceback."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    assert "emu: error: " in err and "Traceback" not in err
    return err


@pytest.fixture
def din(tmp_path):
    f = tmp_path / "t.din"
    f.write_text("0 10000\n0 10040\n")
    return str(f)


def test_set_given_twice(capsys, din):
    err = cli_error(capsys, "trace", din, "--set", "cache.l1d.ways=8", "--set",
                    "cache.l1d.ways=4")
    assert "--set cache.l1d.ways given twice" in err
    err = cli_error(capsys, "run", "vhost-tx", "--set", "core.freq_ghz=3", "--set",
                    "core.freq_ghz=3")
    assert "--set core.freq_ghz given twice" in err


@pytest.mark.parametrize("value, shown", [("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"),
                                          ("1e300", "1e+300"), ("1000000000000", "1000000000000"),
                                          (str(2**63), str(2**63)), ("true", "True")])
def test_set_out_of_range(capsys, din, value, shown):
    err = cli_error(capsys, "trace", din, "--set", f"core.rob_entries={value}")
    assert err.startswith("emu: error: ")
    assert "core.rob_entries" in err and f"got {shown}" in err and "[1, 4096]" in err


@pytest.mark.parametrize("spec", ["../x", "a/b", "..", "../profiles/skylake-ddr4"])
def test_cli_profile_names(capsys, din, spec):
    assert spec in cli_error(capsys, "trace", din, "--profile", spec)


STUDY_OPTIONS = [   # (argv, what the error names)
    (["dax-memcpy", "--scale", "nan"], "--scale"),
    (["dax-memcpy", "--scale", "inf"], "--scale"),
    (["dax-memcpy", "--scale", "0"], "--scale"),
    (["dax-memcpy", "--scale", "-1"], "--scale"),
    (["dax-memcpy", "--scale", "2"], "--scale"),
    (["dax-memcpy", "--profile", BASE], "a persistent and a volatile region"),
    (["dax-write-usercopy", "--ios", "1", "--file-size", str(10**13)], "--file-size"),
    (["dax-read-copy-mc", "--ios", "1", "--file-size", str(2**50)], "--file-size"),
    (["dax-write-usercopy", "--jobs", str(10**8)], "--jobs"),
    (["dax-write-usercopy", "--ios", "1", "--jobs", "100", "--set",
      "numa.remote_bw_gbps=0.01"], "--jobs"),
    (["dax-read-copy-mc", "--ios", "1", "--jobs", "1000", "--set",
      "numa.remote_bw_gbps=0.01"], "--jobs"),   # media bandwidth is no longer divided
    (["dax-write-usercopy", "--bs", str(2**31)], "--bs"),
    (["dax-write-usercopy", "--ios", str(10**7)], "--ios"),
    (["dax-read-copy-mc", "--ios", "100000"], "--ios"),
    (["dax-read-copy-mc", "--ios", "1", "--poison", str(10**11)], "--poison"),
    (["dax-read-copy-mc", "--poison", "-1"], "--poison"),
    (["vhost-tx", "--packets", str(10**7)], "--packets"),
    (["vhost-tx", "--pkt-bytes", str(10**5)], "--pkt-bytes"),
    (["vhost-tx", "--pkt-bytes", "0"], "--pkt-bytes"),
    (["dmapool-test", "--rounds", str(10**6)], "--rounds"),
    (["dmapool-test", "--rounds", "many"], "--rounds"),
    (["dmapool-test", "--set", "cache.llc.prefetcher=stream"], "cache.llc.prefetcher"),
]


@pytest.mark.parametrize("argv, needle", STUDY_OPTIONS, ids=[" ".join(a) for a, _ in STUDY_OPTIONS])
def test_study_option_out_of_range(capsys, argv, needle):
    assert needle in cli_error(capsys, "run", *argv)
