"""Each registry is the one list of its names: every name has its module and every module its
name, each hook's dispatch reaches every module once, and the profile loader admits exactly
the registry's names. A registry line without a module, a module without a line, or a
dispatch that misses a module fails here."""
import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from memmodel import media, policies, prefetch
from memmodel.media import KIND_IDS, KINDS, PERSISTENCE, kind_keys
from memmodel.policies import POLICY_IDS
from memmodel.prefetch import PF_NONE, PREFETCHER_IDS
from memmodel.profile import ProfileError, load_profile

POLICY_HOOKS = ("on_hit", "on_fill", "victim")
MEDIA_HOOKS = ("read", "write")


def modules(pkg):
    """The modules of package `pkg` that registry names name (not its private _*.py)."""
    return {m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")}


def dispatched(pkg, hook):
    """The modules whose `hook` the function `hook` of pkg/_dispatch.py calls (a name per
    call, sorted)."""
    tree = ast.parse(Path(pkg.__path__[0], "_dispatch.py").read_text())
    alias = {a.asname or a.name: a.name for n in tree.body if isinstance(n, ast.ImportFrom)
             for a in n.names}
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == hook)
    return sorted(alias.get(c.func.value.id, c.func.value.id) for c in ast.walk(fn)
                  if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                  and c.func.attr == hook and isinstance(c.func.value, ast.Name))


def rejected(key, profile="skylake-ddr4"):
    """The message for a name no registry holds at `key`."""
    with pytest.raises(ProfileError) as e:
        load_profile(profile, {key: "no-such-name"})
    return str(e.value)


def admits(names):
    return "is not one of " + ", ".join(map(repr, names))


def test_every_policy_name_has_its_module_and_every_module_its_name():
    assert modules(policies) == set(POLICY_IDS)
    for i, name in enumerate(POLICY_IDS):
        mod = importlib.import_module(f"memmodel.policies.{name}")
        assert mod.ID == i
        assert all(callable(getattr(mod, hook)) for hook in POLICY_HOOKS)


@pytest.mark.parametrize("hook", POLICY_HOOKS)
def test_each_policy_hook_dispatches_to_every_policy_once(hook):
    assert dispatched(policies, hook) == sorted(POLICY_IDS)


def test_every_prefetcher_name_but_none_has_its_module_and_every_module_its_name():
    assert PREFETCHER_IDS[PF_NONE] == "none"
    named = [n for n in PREFETCHER_IDS if n != "none"]
    assert modules(prefetch) == set(named)
    for name in named:
        mod = importlib.import_module(f"memmodel.prefetch.{name}")
        assert mod.ID == PREFETCHER_IDS.index(name) and callable(mod.train)


def test_the_prefetcher_hook_dispatches_to_every_prefetcher_once():
    assert dispatched(prefetch, "train") == sorted(n for n in PREFETCHER_IDS if n != "none")


def test_every_media_kind_has_its_module_and_every_module_a_kind():
    timing = {mod for mod, _ in KINDS.values()}
    assert modules(media) == timing
    for name in KIND_IDS:
        mod = media.module(name)
        assert all(callable(getattr(mod, f)) for f in MEDIA_HOOKS + ("init_params",))
    for name in timing:   # a module that the dispatch names by its kind's id times that kind
        mod = importlib.import_module(f"memmodel.media.{name}")
        if hasattr(mod, "KIND"):
            assert KINDS[KIND_IDS[mod.KIND]][0] == name


@pytest.mark.parametrize("hook", MEDIA_HOOKS)
def test_each_media_hook_dispatches_to_every_kinds_module_once(hook):
    assert dispatched(media, hook) == sorted({mod for mod, _ in KINDS.values()})


@pytest.mark.parametrize("key, names", [("cache.l2.policy", POLICY_IDS),
                                        ("cache.l2.prefetcher", PREFETCHER_IDS),
                                        ("media.dram.persistence", PERSISTENCE)])
def test_the_profile_admits_exactly_the_registrys_names(key, names):
    assert rejected(key).endswith(admits(names))
    for name in names:
        got = load_profile("skylake-ddr4", {key: name}).get(key)
        # a level's prefetchers are a tuple of names ("none": none)
        assert got == (name if key != "cache.l2.prefetcher" else
                       () if name == "none" else (name,))


def with_kind(name, keys):
    """skylake-ddr4 with its DRAM of kind `name`, given the profile keys `keys` of it."""
    extra = {k: {"value": 64, "assumption": "a test value"} for k in keys}
    return {"profile": {"inherit": "skylake-ddr4"}, "media": {"dram": dict(kind=name, **extra)}}


def test_the_profile_admits_exactly_the_media_kinds_with_exactly_their_keys():
    assert rejected("media.dram.kind").endswith(admits(KIND_IDS))
    for name in KIND_IDS:
        keys = kind_keys(name)
        assert load_profile(with_kind(name, keys)).get("media.dram.kind") == name
        for key in keys:
            with pytest.raises(ProfileError, match=f"media.dram.{key}: missing"):
                load_profile(with_kind(name, set(keys) - {key}))
        with pytest.raises(ProfileError, match="media.dram.other_bytes: unknown key"):
            load_profile(with_kind(name, {*keys, "other_bytes"}))


def test_the_profile_loader_takes_the_registries_without_numba():
    """The registries' homes import nothing compiled: loading every shipped profile (and so
    every policy, prefetcher and media kind name and kind's keys) leaves numba unloaded."""
    code = ("import sys; from memmodel.profile import load_profile, shipped_profiles; "
            "[load_profile(n) for n in shipped_profiles()]; print('numba' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1], check=True)
    assert r.stdout.split() == ["False"]


def test_a_kind_module_declares_its_kinds_and_profile_keys_as_literals(tmp_path):
    """memmodel.media takes a kind's names, keys and own parameter columns from its module's
    source (the module itself loads numba): the literals, wherever they stand, and nothing
    else."""
    from memmodel.media import _declared
    f = tmp_path / "cxl.py"
    f.write_text('from memmodel.jit import inlined\n\nKINDS = ("cxl", "cxl-pmem")\n'
                 'PROFILE_KEYS = {"switch_ns": ("num", True, 0, 1_000)}\nKIND = 7\n'
                 'PARAMS = "SWITCH_LAT"\nROW = None\n')
    assert _declared(f) == {"KINDS": ("cxl", "cxl-pmem"),
                            "PROFILE_KEYS": {"switch_ns": ("num", True, 0, 1000)},
                            "PARAMS": "SWITCH_LAT"}
    assert KINDS["optane"][0] == "optane" and KINDS["nvdimm-n"][0] == "dram"
    f.write_text('KINDS = ("cxl",)\nPARAMS = ""\n')
    with pytest.raises(ValueError, match=r"cxl.py: a media kind's module declares PROFILE_KEYS"):
        _declared(f)
