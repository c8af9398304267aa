"""The floors: the studies (emu/studies) sit above the Machine facade, and nothing below them
imports them."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BELOW_STUDIES = ("emu", "memmodel", "isa", "kernels")


def imported_modules(path):
    """The absolute module names a source file imports."""
    tree = ast.parse(path.read_text(), str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def test_nothing_below_the_studies_imports_them():
    studies = ROOT / "emu" / "studies"
    offenders = []
    for top in BELOW_STUDIES:
        for path in (ROOT / top).rglob("*.py"):
            if studies in path.parents:
                continue
            offenders += [f"{path.relative_to(ROOT)}: {m}" for m in imported_modules(path)
                          if m == "emu.studies" or m.startswith("emu.studies.")]
    assert offenders == []


def test_imported_modules_sees_both_import_forms(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import emu.studies.cli\nfrom emu import studies\n")
    assert "emu.studies.cli" in imported_modules(f) and "emu.studies" in imported_modules(f)


def test_memmodel_imports_no_other_package_and_names_none_of_emus_sections():
    """memmodel is the bottom floor: it imports only itself (and numpy/numba), and it does not
    know the core's state sections by name (emu declares them in its own block)."""
    from emu.state import EMU
    emu_sections = set(EMU.slots) | set(EMU.fixed)
    offenders = []
    for path in (ROOT / "memmodel").rglob("*.py"):
        rel = path.relative_to(ROOT)
        offenders += [f"{rel}: imports {m}" for m in imported_modules(path)
                      if m and m.split(".")[0] in ("emu", "isa", "kernels")]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in emu_sections:
                offenders.append(f"{rel}:{node.lineno}: names emu's section {node.value!r}")
    assert offenders == []


def test_only_the_command_line_knows_argparse_and_nothing_imports_it_back():
    """The scenarios, the fio driver, the sweep and the Python API take declared options
    (emu.studies.options), not argparse; no module reads argparse's private attributes, and
    nothing imports the CLI."""
    studies = ROOT / "emu" / "studies"
    declared_only = [*(studies / "scenarios").glob("*.py"), *(studies / "sweep").glob("*.py"),
                     studies / "api.py", studies / "fio.py"]
    for path in studies.rglob("*.py"):
        text, mods = path.read_text(), imported_modules(path)
        where = path.relative_to(ROOT)
        assert "._actions" not in text and "_option_string_actions" not in text, where
        assert "emu.studies.cli" not in mods or path.name == "cli.py", where
        assert "argparse" not in mods or path not in declared_only, where
