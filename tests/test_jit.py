"""The compiled cache is never stale, and the intrinsics have exact Python twins.

numba keys a cached function on its own file only; the core freezes constants of other
modules (offsets, opcodes, flags, registry ids). memmodel.jit drops the cached objects when
the code of any module the compiled functions depend on changes.
"""
import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from memmodel import jit

ROOT = Path(jit.__file__).resolve().parent.parent


@pytest.fixture
def tree(tmp_path):
    for d in jit.PACKAGES:
        shutil.copytree(ROOT / d, tmp_path / d, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def edit(path, old, new):
    s = path.read_text()
    assert old in s, f"{old!r} not in {path}"
    path.write_text(s.replace(old, new, 1))


@pytest.mark.parametrize("path, old, new", [
    ("emu/state.py", '_SC = ("NOW UOP_FRAC', '_SC = ("UOP_FRAC NOW'),
    ("isa/ops.py", "FLAG_EXTABLE = 2", "FLAG_EXTABLE = 128"),
    ("memmodel/policies/__init__.py", '"lru", "plru"', '"plru", "lru"'),
    ("memmodel/layout.py", '"TAGS REPL READY', '"REPL TAGS READY'),
    # a media kind's ids come from the kinds its module declares, read from its source
    ("memmodel/media/dram.py", 'KINDS = ("dram", "nvdimm-n")', 'KINDS = ("nvdimm-n", "dram")'),
])
def test_a_constant_the_core_freezes_changes_the_digest(tree, path, old, new):
    before = jit.digest(tree)
    edit(tree / path, old, new)
    assert jit.digest(tree) != before


@pytest.mark.parametrize("path, old, new", [
    ("emu/machine.py", "import time", "import time  # facade only"),
    ("emu/_core.py", '"""The compiled run loop', '"""The compiled run loop (edited)'),
    ("emu/state.py", "# site_ctr[site, counter]", "# site_ctr[site, counter], edited"),
])
def test_docstrings_comments_and_the_facade_leave_the_digest(tree, path, old, new):
    before = jit.digest(tree)
    edit(tree / path, old, new)
    assert jit.digest(tree) == before


@pytest.mark.parametrize("path, old, new", [
    ("memmodel/sections/cache.py", "lv[i, LV.HIT] = lvl[\"hit_cycles\"]",
     "lv[i, LV.HIT] = lvl[\"hit_cycles\"] + 1"),
    ("memmodel/sections/media.py", "GOLDEN = (5 ** 0.5 - 1) / 2", "GOLDEN = 0.5"),
    ("memmodel/sections/memory.py", "2 * len(pt)", "3 * len(pt)"),
    ("memmodel/sections/hotlines.py", "rows[:, HL.TAG0:] = -1", "rows[:, HL.TAG0:] = -2"),
    ("emu/state_setup.py", "S[SC.KERNEL] = 1", "S[SC.KERNEL] = 0"),
    ("memmodel/build.py", "S = layout.build()", "S = layout.build()\n    S[0] = S[0]"),
])
def test_the_python_only_set_up_is_not_frozen(tree, path, old, new):
    """Setting the sections up from the profile, growing memory and reading the caches back
    are Python only: editing their code does not recompile the core."""
    assert path not in jit.frozen_sources(tree)
    before = jit.digest(tree)
    edit(tree / path, old, new)
    assert jit.digest(tree) == before


def test_every_module_with_compiled_code_is_frozen(tree):
    frozen = jit.frozen_sources(tree)
    for f in sorted(tree.rglob("*.py")):
        if jit._is_compiled(ast.parse(f.read_text())):
            assert str(f.relative_to(tree)) in frozen


STATE = "S_NOW, S_END = range(2)\n"
CORE = textwrap.dedent("""\
    from emu.state import S_NOW
    from memmodel.jit import compiled


    @compiled
    def run(S):
        S[S_NOW] = 7
""")
PROBE = ("import numpy as np; from emu import state; from emu.core import run; "
         "S = np.zeros(2, np.int64); run(S); print(int(S[state.S_NOW]))")


def _package(tmp_path, modules):
    """A package of memmodel/jit.py and the given emu modules {name: source} in tmp_path;
    the environment without NUMBA_ settings."""
    (tmp_path / "memmodel").mkdir()
    (tmp_path / "emu").mkdir()
    shutil.copy(ROOT / "memmodel" / "jit.py", tmp_path / "memmodel" / "jit.py")
    for f in ("memmodel/__init__.py", "emu/__init__.py"):
        (tmp_path / f).write_text("")
    for name, source in modules.items():
        (tmp_path / "emu" / f"{name}.py").write_text(source)
    return {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}


@pytest.mark.parametrize("user_cache_dir", [False, True])
def test_a_reordered_constants_module_never_runs_a_stale_core(tmp_path, user_cache_dir):
    """The stale-core trap memmodel/jit.py guards against: reorder the fields of a module that
    only holds constants; the cached core must not keep writing the old offset."""
    env = _package(tmp_path, {"state": STATE, "core": CORE})
    if user_cache_dir:
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")

    def probe():
        r = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return int(r.stdout)

    assert probe() == 7
    assert probe() == 7   # from the cache
    (tmp_path / "emu" / "state.py").write_text("S_END, S_NOW = range(2)\n")
    assert probe() == 7


def test_drop_stale_cache_removes_only_on_change(tree):
    obj = tree / "memmodel" / "__pycache__" / "x.nbc"
    obj.parent.mkdir(exist_ok=True)
    obj.write_bytes(b"old")
    if jit.config.CACHE_DIR:
        pytest.skip("NUMBA_CACHE_DIR is set: the objects live elsewhere")
    assert jit.drop_stale_cache(tree)
    assert not obj.exists()
    obj.write_bytes(b"new")
    assert not jit.drop_stale_cache(tree)
    assert obj.exists()
    # a file touched but not changed: its stat differs, the digest does not
    os.utime(tree / "emu" / "state.py", ns=(1, 1))
    assert not jit.drop_stale_cache(tree)
    assert obj.exists()
    # a change of the same size (a reordered field list) is one
    edit(tree / "emu" / "state.py", '_SC = ("NOW UOP_FRAC', '_SC = ("UOP_FRAC NOW')
    assert jit.drop_stale_cache(tree)
    assert not obj.exists()


@njit
def _tz(x):
    return jit.trailing_zeros(x)


@njit
def _bits(b):
    return jit.as_float(b)


@pytest.mark.parametrize("x", [0, 1, 2, 3, 4096, 6 << 20, -1, -(2**63), 2**62])
def test_trailing_zeros_twin(x):
    assert jit._py_trailing_zeros(x) == _tz(np.int64(x))


@pytest.mark.parametrize("f", [0.0, 1.0, -2.5, 1 / 36864, 1e300])
def test_as_float_twin(f):
    b = np.float64(f).view(np.int64)
    assert jit._py_as_float(b) == _bits(b) == f


@njit
def _eq(arr, i, x):
    return jit.equal4(arr, jit.ix(i), x), jit.equal8(arr, jit.ix(i), x)


@njit
def _min8(arr, i):
    return jit.min8(arr, jit.ix(i))


@pytest.mark.parametrize("x", [5, -1, 3, 42, -(2**63)])
@pytest.mark.parametrize("i", [0, 1, 3])
def test_equal_masks_and_twins(i, x):
    """Bit k of equalN(arr, i, x) is arr[i + k] == x, compiled and in its Python twin,
    against the words compared one by one."""
    arr = np.array([5, -1, 3, 5, 7, 5, 9, -1, 5, 2, 3, -(2**63)], dtype=np.int64)
    want = [sum(1 << k for k in range(n) if arr[i + k] == x) for n in (4, 8)]
    assert list(_eq(arr, i, np.int64(x))) == want
    assert [jit._py_equal_mask(n)(arr, i, x) for n in (4, 8)] == want


@pytest.mark.parametrize("i", [0, 1, 3, 4])
def test_min8_and_twin(i):
    arr = np.array([5, -1, 3, 5, 7, 5, 9, -1, 5, 2, 3, -(2**63)], dtype=np.int64)
    want = min(int(v) for v in arr[i:i + 8])
    assert _min8(arr, i) == jit._py_min8(arr, i) == want


PHASE = textwrap.dedent("""\
    from numba import int64
    from memmodel.jit import STATE, apart, compiled, inlined


    @apart(STATE, int64)
    def heavy(S, i):
        S[i] += 5
        return S[i] * 2


    @inlined
    def helper(S, i):
        return heavy(S, i) + 1


    @compiled
    def first(S):
        return helper(S, 0)


    @compiled
    def second(S):
        return helper(S, 1)
""")
CALLS = ("import numpy as np; from emu import phase; S = np.zeros(2, np.int64); "
         "print(phase.{}(S), S.tolist())")


def test_an_apart_function_is_called_not_copied_and_links_from_the_cache(tmp_path):
    """A caller's module holds only a declaration of an apart function, and a caller loaded
    from the cache still finds it: also one compiled against a helper that was itself loaded
    from the cache (whose list of functions to link numba would lose), in a process that
    compiles nothing. S[i] += 5, then returns 2 * S[i] + 1: 11."""
    env = _package(tmp_path, {"phase": PHASE})
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")

    def probe(code, **extra):
        r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=dict(env, **extra),
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout.split("\n")[0]

    assert probe(CALLS.format("first")) == "11 [5, 0]"
    # the lines of second's LLVM module that name heavy, compiled against the cached helper
    lines = probe("from emu import phase; import numpy as np; phase.second(np.zeros(2, np.int64));"
                  "ir = next(iter(phase.second.inspect_llvm().values()));"
                  "print([s.split('(')[0] for s in ir.splitlines() if 'heavy' in s])")
    calls = [s for s in ast.literal_eval(lines) if not s.startswith("declare")]
    assert len(calls) == 1 and "call i32 @cacheline_emu.emu.phase.heavy" in calls[0], lines
    assert "declare i32 @cacheline_emu.emu.phase.heavy" in lines, lines
    assert probe(CALLS.format("second")) == "11 [0, 5]"   # loaded, helper and all
    assert probe("import numpy as np; from emu import phase;"
                 "print(phase.heavy(np.zeros(2, np.int64), 1))") == "10"   # from Python
    assert probe(CALLS.format("second"), NUMBA_DISABLE_JIT="1") == "11 [0, 5]"
