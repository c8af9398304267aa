"""Declared costs (emu.studies.costs): each scenario declares the [software] keys it reads; a
profile loaded through emu.studies has exactly their union, and a bare memmodel load checks
only the table's shape."""
import ast
from pathlib import Path

import pytest

from emu.studies import costs
from emu.studies.scenarios import registry
from memmodel.profile import ProfileError
from memmodel.profile import load_profile as load_model_profile

ROOT = Path(__file__).resolve().parents[1]
BASE = "skylake-ddr4"


def _variant(tmp_path, old, new):
    text = Path(load_model_profile(BASE).files[-1]).read_text()
    assert text.count(old) == 1
    path = tmp_path / "variant.toml"
    path.write_text(text.replace(old, new))
    return path


def _software_keys_read(path):
    """The [software] keys a source file reads: string subscripts of a name bound to
    values["software"] (`sw = values["software"]`, `v["software"][...]`), an f-string's
    fixed parts joined with each direction (fio's f"vfs_{rw}_ns")."""
    tree = ast.parse(path.read_text())
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
            pairs = zip(getattr(node.targets[0], "elts", []), node.value.elts)
        elif isinstance(node, ast.Assign):
            pairs = [(node.targets[0], node.value)]
        else:
            continue
        for target, value in pairs:
            if isinstance(value, ast.Subscript) and getattr(value.slice, "value", None) == \
                    "software" and isinstance(target, ast.Name):
                bound.add(target.id)
    keys = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Subscript):
            continue
        base = node.value
        if not ((isinstance(base, ast.Name) and base.id in bound) or (
                isinstance(base, ast.Subscript) and getattr(base.slice, "value", None) == "software")):
            continue
        key = node.slice
        if isinstance(key, ast.Constant):
            keys.add(key.value)
        elif isinstance(key, ast.JoinedStr):
            for rw in ("read", "write"):
                keys.add("".join(p.value if isinstance(p, ast.Constant) else rw
                                 for p in key.values))
    return keys


def test_every_software_key_the_code_reads_is_declared_and_no_other():
    """The keys read in the studies and the kernels, found in their source, are the union of
    the scenarios' COSTS."""
    read = set()
    for top in ("emu", "kernels"):
        for path in (ROOT / top).rglob("*.py"):
            read |= _software_keys_read(path)
    assert read == set(costs.declared())
    assert {"vhost_net_tx_ns", "dma_pool_call_ns", "vfs_read_ns", "fs_write_iter_ns"} <= read


def test_each_scenario_declares_what_it_reads():
    assert set(registry()["vhost-tx"].COSTS) == {"vhost_net_tx_ns", "tun_xdp_ns"}
    assert set(registry()["dmapool-test"].COSTS) == {"dma_pool_call_ns"}
    assert "dma_pool_call_ns" not in registry()["dax-write-usercopy"].COSTS


def test_an_unknown_key_is_kept_by_memmodel_and_named_by_the_studies(tmp_path):
    path = _variant(tmp_path, "[software]\n",
                    "[software]\nvfs_raed_ns = { value = 3, source = \"a typo\" }\n")
    assert load_model_profile(path).values["software"]["vfs_raed_ns"] == 3.0
    with pytest.raises(ProfileError, match=r"software\.vfs_raed_ns: unknown declared cost"):
        costs.load_profile(path)


def test_a_missing_key_names_the_scenario_that_declares_it(tmp_path):
    path = _variant(tmp_path, "tun_xdp_ns = {", "# tun_xdp_ns = {")
    assert "tun_xdp_ns" not in load_model_profile(path).values["software"]
    with pytest.raises(ProfileError, match=r"software\.tun_xdp_ns: missing \(a declared cost "
                                           r"of vhost-tx\)"):
        costs.load_profile(path)


def test_every_shipped_profile_has_the_declared_costs():
    from memmodel.profile import shipped_profiles
    for name in shipped_profiles():
        assert set(costs.load_profile(name).values["software"]) == set(costs.declared())
