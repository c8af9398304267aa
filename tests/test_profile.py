"""Profile loader: shipped profiles load with full provenance, `inherit` works, and every
malformed profile raises ProfileError naming the file and the dotted key. No numba here."""
import tomllib
from pathlib import Path

import pytest

from memmodel.profile import ProfileError, load_profile, shipped_profiles

TIMED_SECTIONS = ("core", "cache", "instr", "prefetch", "numa", "software", "media")
BASE = "skylake-ddr4"


def _shipped_file(name):
    return Path(load_profile(name).files[-1])


def _numeric_keys(node, prefix):
    """Dotted keys of every int/float leaf (booleans are flags, not timing numbers)."""
    for key, val in node.items():
        dotted = f"{prefix}.{key}"
        if isinstance(val, dict):
            yield from _numeric_keys(val, dotted)
        elif isinstance(val, (int, float)) and not isinstance(val, bool):
            yield dotted


def _variant(tmp_path, edits=(), append="", name="variant.toml"):
    """Write a copy of the skylake-ddr4 profile with exact text edits (each must match once)."""
    text = _shipped_file(BASE).read_text()
    for old, new in edits:
        assert text.count(old) == 1, f"test edit does not match exactly once: {old!r}"
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text + append)
    return path


def _raises(spec, *needles):
    with pytest.raises(ProfileError) as info:
        load_profile(spec)
    msg = str(info.value)
    for needle in needles:
        assert str(needle) in msg, f"{needle!r} not in error message {msg!r}"
    return msg


# ---------------------------------------------------------------- shipped profiles

def test_shipped_names():
    assert {"skylake-ddr4", "cascadelake-optane", "broadwell-ddr4", "haswell-nvdimm-n"} <= set(shipped_profiles())


@pytest.mark.parametrize("name", shipped_profiles())
def test_shipped_profile_loads(name):
    p = load_profile(name)
    assert p.name == name
    assert Path(p.files[-1]).name == f"{name}.toml"
    assert p.values["profile"]["description"].strip()
    for r in p.values["region"]:
        assert r["media"] in p.values["media"]


@pytest.mark.parametrize("name", shipped_profiles())
def test_every_timing_number_has_provenance(name):
    p = load_profile(name)
    keys = [k for s in TIMED_SECTIONS for k in _numeric_keys(p.values[s], s)]
    assert keys
    missing = [k for k in keys if k not in p.sources]
    assert not missing, f"{name}: no provenance for {missing}"
    for k in keys:
        text = p.sources[k].removeprefix("assumption: ")
        assert text.strip(), f"{name}: empty provenance for {k}"
    assert set(p.sources) == set(keys)


@pytest.mark.parametrize("name", shipped_profiles())
def test_shipped_file_writes_provenance_inline(name):
    """Numbers in the file itself (not only after inheritance) carry source or assumption."""
    raw = tomllib.loads(_shipped_file(name).read_text())
    for section in TIMED_SECTIONS:
        for dotted in _numeric_keys(raw.get(section, {}), section):
            parent = dotted.rsplit(".", 1)[0]
            node = raw
            for part in parent.split("."):
                node = node[part]
            assert dotted.endswith(".value"), f"{name}: bare number at {dotted}"
            assert (node.get("source") or node.get("assumption") or "").strip(), dotted


def test_cascadelake_optane_profile():
    p = load_profile("cascadelake-optane")
    base = load_profile(BASE)
    assert [Path(f).name for f in p.files] == ["skylake-ddr4.toml", "cascadelake-optane.toml"]
    opt = p.values["media"]["optane"]
    assert opt["kind"] == "optane" and opt["persistence"] == "adr" and opt["reads_wait_for_writes"]
    assert opt["buffer_read_latency_ns"] < opt["read_latency_ns"]
    assert p.values["core"]["freq_ghz"] == 2.2
    assert p.values["core"]["rob_entries"] == base.values["core"]["rob_entries"]
    assert p.values["cache"]["l2"] == base.values["cache"]["l2"]
    assert {(r["media"], r["node"]) for r in p.values["region"]} == {
        ("dram", 0), ("dram", 1), ("optane", 0), ("optane", 1)}


def test_nvdimm_and_broadwell_profiles():
    h = load_profile("haswell-nvdimm-n")
    nv = h.values["media"]["nvdimm"]
    assert nv["kind"] == "nvdimm-n" and nv["persistence"] == "adr"
    assert {(r["media"], r["node"]) for r in h.values["region"]} == {
        ("dram", 0), ("dram", 1), ("nvdimm", 0), ("nvdimm", 1)}
    for name in ("broadwell-ddr4", "haswell-nvdimm-n"):
        p = load_profile(name)
        assert p.values["cache"]["llc"]["inclusive"] is True
        # no CLFLUSHOPT/CLWB on these cores: the keys exist, priced as CLFLUSH, as assumptions
        for key in ("clflushopt_cycles", "clwb_cycles"):
            assert p.values["instr"][key] == p.values["instr"]["clflush_cycles"]
            assert p.sources[f"instr.{key}"].startswith("assumption: ")


@pytest.mark.parametrize("name", shipped_profiles())
def test_transferred_values_are_marked(name):
    """A value whose text says it was transferred names the machine in transferred_from, and
    no value is marked as transferred from the profile's own machine (a parent's transfer
    inherited by the machine it came from must be overridden there)."""
    p = load_profile(name)
    unmarked = [k for k, text in p.sources.items() if "transferred" in text.lower()
                and k not in p.transfers]
    assert not unmarked, f"{name}: transferred without transferred_from: {unmarked}"
    assert set(p.transfers) <= set(p.sources)
    own = [k for k, machine in p.transfers.items() if f"({name})" in machine
           or f", {name})" in machine]
    assert not own, f"{name}: transferred from itself: {own}"


def test_transfers_of_the_shipped_profiles():
    """Each machine's own flush and fence figures (docs/hardware.md §4.1); what is left
    transferred says from where."""
    hsw, bdw = load_profile("haswell-nvdimm-n"), load_profile("broadwell-ddr4")
    skx, clx = load_profile("skylake-ddr4"), load_profile("cascadelake-optane")
    for key in ("lfence_cycles", "sfence_cycles", "mfence_cycles", "clflush_cycles",
                "lock_rmw_cycles"):
        assert "HaswellEP" in hsw.sources[f"instr.{key}"], key
        assert f"instr.{key}" not in hsw.transfers
    assert hsw.values["instr"]["clflush_cycles"] == 192          # E5-2660 v3: 192.1
    assert skx.values["instr"]["clflush_cycles"] == 236          # 2-socket Xeon 8160: 236.0
    assert skx.values["instr"]["clflushopt_cycles"] == 158       # 158.3
    assert "i7-6850K" in bdw.transfers["instr.clflush_cycles"]
    assert "Cascade Lake" in hsw.transfers["media.nvdimm.write_accept_ns"]
    # skylake-ddr4 transfers the Optane box's DRAM bandwidth; the box itself does not
    assert "cascadelake-optane" in skx.transfers["media.dram.read_bw_gbps"]
    assert "media.dram.read_bw_gbps" not in clx.transfers
    # a transfer inherited from skylake-ddr4 that is no one's own stays marked in the child
    assert clx.transfers["instr.rep_movsb_startup_cycles"] == \
        skx.transfers["instr.rep_movsb_startup_cycles"]


def test_transferred_from_field(tmp_path):
    path = _variant(tmp_path, edits=[(ROB, 'rob_entries = { value = 224, transferred_from = '
                                            '"Broadwell (broadwell-ddr4)", source = "x" }\n')])
    p = load_profile(path)
    assert p.transfers["core.rob_entries"] == "Broadwell (broadwell-ddr4)"
    assert p.sources["core.rob_entries"] == "x"
    # an override is the caller's own value: no longer transferred
    assert "core.rob_entries" not in load_profile(path, {"core.rob_entries": 200}).transfers
    for bad in ('" "', "3", "true"):
        path = _variant(tmp_path, edits=[(ROB, f'rob_entries = {{ value = 224, transferred_from '
                                               f'= {bad}, source = "x" }}\n')])
        _raises(path, str(path), "core.rob_entries.transferred_from")


# ---------------------------------------------------------------- inherit and overrides

def test_inherit_from_dict():
    base = load_profile(BASE)
    p = load_profile({"profile": {"inherit": BASE, "description": "faster clock"},
                      "core": {"freq_ghz": {"value": 3.0, "assumption": "test"}}})
    assert p.values["core"]["freq_ghz"] == 3.0
    assert p.sources["core.freq_ghz"] == "assumption: test"
    assert p.values["core"]["rob_entries"] == base.values["core"]["rob_entries"]
    assert p.values["cache"] == base.values["cache"]
    assert p.values["media"] == base.values["media"]
    assert p.sources["core.rob_entries"] == base.sources["core.rob_entries"]
    assert p.files[-1] == "<dict>"


def test_inherit_from_toml_file_by_shipped_name(tmp_path):
    base = load_profile(BASE)
    child = tmp_path / "bigger-llc.toml"
    child.write_text(f'[profile]\ninherit = "{BASE}"\n\n[cache.llc]\n'
                     'size_bytes = { value = 45416448, assumption = "test: 31.5 MiB x 11 ways" }\n')
    p = load_profile(child)
    assert p.name == "bigger-llc"
    assert p.files == [base.files[0], str(child)]
    assert p.values["cache"]["llc"]["size_bytes"] == 45416448
    assert p.values["cache"]["llc"]["ways"] == base.values["cache"]["llc"]["ways"]
    assert p.values["profile"]["description"] == base.values["profile"]["description"]
    assert p.values["region"] == base.values["region"]
    assert p.sources["cache.llc.size_bytes"].startswith("assumption: test")


def test_inherit_from_relative_toml_path(tmp_path):
    _variant(tmp_path, name="base.toml")
    child = tmp_path / "child.toml"
    child.write_text('[profile]\ninherit = "base.toml"\ndescription = "child"\n\n'
                     '[instr]\nmfence_cycles = { value = 40, assumption = "test" }\n')
    p = load_profile(str(child))
    assert p.values["profile"]["description"] == "child"
    assert p.values["instr"]["mfence_cycles"] == 40
    assert p.values["instr"]["sfence_cycles"] == load_profile(BASE).values["instr"]["sfence_cycles"]


def test_error_in_inheriting_file_names_that_file(tmp_path):
    child = tmp_path / "child.toml"
    child.write_text(f'[profile]\ninherit = "{BASE}"\n\n[core]\nbogus_cycles = 1\n')
    msg = _raises(child, str(child), "core.bogus_cycles")
    assert "skylake-ddr4.toml" not in msg


def test_overrides():
    p = load_profile(BASE, overrides={"core.freq_ghz": 3.1, "cache.l1d.policy": "plru"})
    assert p.values["core"]["freq_ghz"] == 3.1
    assert p.values["cache"]["l1d"]["policy"] == "plru"
    assert p.sources["core.freq_ghz"].startswith("assumption: override")
    with pytest.raises(ProfileError, match="core.nope"):
        load_profile(BASE, overrides={"core.nope": 1})


# ---------------------------------------------------------------- errors

SAME_CORE = "; Cascade Lake-SP has the same core (docs/hardware.md §3 gives one column, §8.2)"
L1D_HIT = f'hit_cycles = {{ value = 4, source = "[ILX] SkylakeX NewMemLat: 4 cycles{SAME_CORE}" }}\n'
LLC_HIT = 'hit_cycles = { value = 70, source = "[ILX] i9-7900X 67-75 cycles; [AT11550] 77" }\n'
ROB = f'rob_entries = {{ value = 224, source = "[WC-SKL] reorder buffer 224{SAME_CORE}" }}\n'
LLC_SIZE = 'size_bytes = { value = 40370176,'
READ_BW = 'read_bw_gbps = { value = 105.6,'
DRAM1_NODE = 'media = "dram"\nnode = 1\n'

ERROR_CASES = {
    "unknown section": (dict(append="\n[turbo]\nboost = 1\n"), "turbo"),
    "unknown key": (dict(edits=[("[core]\n", '[core]\nbogus_cycles = { value = 1, source = "x" }\n')]),
                    "core.bogus_cycles"),
    "missing key": (dict(edits=[(ROB, "")]), "core.rob_entries"),
    "bare number": (dict(edits=[(ROB, "rob_entries = 224\n")]), "core.rob_entries"),
    "no provenance text": (dict(edits=[(ROB, 'rob_entries = { value = 224, source = " " }\n')]),
                           "core.rob_entries"),
    "wrong type, number": (dict(edits=[('ways = { value = 8,', 'ways = { value = "8",')]),
                           "cache.l1d.ways"),
    "wrong type, flag": (dict(edits=[("inclusive = false", 'inclusive = "no"')]), "cache.llc.inclusive"),
    "below minimum, int": (dict(edits=[(ROB, 'rob_entries = { value = 0, source = "x" }\n')]),
                           "core.rob_entries"),
    "below minimum, float": (dict(edits=[(READ_BW, "read_bw_gbps = { value = 0.0,")]),
                             "media.dram.read_bw_gbps"),
    "bad policy": (dict(edits=[(L1D_HIT + 'policy = "lru"', L1D_HIT + 'policy = "mru"')]),
                   "cache.l1d.policy"),
    "bad media kind": (dict(edits=[('kind = "dram"', 'kind = "sram"')]), "media.dram.kind"),
    "llc not whole sets": (dict(edits=[(LLC_SIZE, "size_bytes = { value = 40370240,")]),
                           "cache.llc.size_bytes"),
    "plru with 11 ways": (dict(edits=[(LLC_HIT + 'policy = "lru"', LLC_HIT + 'policy = "plru"')]),
                          "cache.llc.policy"),
    "region with unknown media": (dict(edits=[('base = 0\nsize_bytes = 68719476736\nmedia = "dram"',
                                               'base = 0\nsize_bytes = 68719476736\nmedia = "optane"')]),
                                  "region[0].media"),
    "overlapping regions": (dict(edits=[("base = 68719476736", "base = 68719472640")]), "dram0", "dram1"),
    "region with bad privilege": (dict(edits=[(DRAM1_NODE, DRAM1_NODE + 'privilege = "User"\n')]),
                                  "region[1].privilege: 'User' is not one of 'user', 'supervisor'"),
    "region with unknown key": (dict(edits=[(DRAM1_NODE, DRAM1_NODE + "sise_bytes = 4096\n")]),
                                "region[1].sise_bytes: unknown key"),
    "misaligned region": (dict(edits=[("base = 68719476736", "base = 68719477760")]),
                          "region[1].base: 0x1000000400 is not a multiple of 4096"),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_error_names_file_and_key(tmp_path, case):
    variant, *needles = ERROR_CASES[case]
    path = _variant(tmp_path, **variant)
    _raises(path, str(path), *needles)


def test_inherit_cycle(tmp_path):
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text('[profile]\ninherit = "b.toml"\ndescription = "a"\n')
    b.write_text('[profile]\ninherit = "a.toml"\ndescription = "b"\n')
    _raises(a, "inherit cycle", str(a), str(b))


def test_invalid_toml(tmp_path):
    path = _variant(tmp_path, append="\n[core\nfreq_ghz = 3\n")
    _raises(path, str(path), "not valid TOML")


def test_missing_file(tmp_path):
    path = tmp_path / "nowhere.toml"
    _raises(path, str(path), "no such profile file")


def test_unknown_shipped_name():
    _raises("no-such-machine", "no-such-machine", BASE)


def test_unknown_shipped_parent(tmp_path):
    path = tmp_path / "orphan.toml"
    path.write_text('[profile]\ninherit = "no-such-machine"\ndescription = "x"\n')
    _raises(path, "no-such-machine")


def test_software_entries_are_sourced_and_any_key_is_kept(tmp_path):
    """Declared costs (docs/design.md) live in [software]; each needs its provenance too. The
    keys are the studies' (tests/test_costs.py): memmodel keeps any, and one left out is
    not missing here."""
    _raises(_variant(tmp_path, [("vfs_read_ns = { value = 100, ", "vfs_read_ns = { v = 100, ")]),
            "software.vfs_read_ns")
    _raises(_variant(tmp_path, [("[software]\n", "[software]\nmine_ns = 5\n")], name="c.toml"),
            "software.mine_ns: a timing number needs a provenance")
    path = _variant(tmp_path, [("[software]\n", "[software]\nmine_ns = { value = 5, source = "
                                "\"t\" }\n"), ("fs_write_iter_ns = {", "# fs_write_iter_ns = {")],
                    name="b.toml")
    software = load_profile(path).values["software"]
    assert software["mine_ns"] == 5.0 and "fs_write_iter_ns" not in software
