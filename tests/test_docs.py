"""The documents a clone has: every relative link in README.md and docs/*.md resolves to a file
of the repository (without an anchor), nothing points at files outside it (the shared notes
the docs were made from), a "FILE.md §N" names a section that exists, and every source tag a
profile uses is listed in docs/hardware.md."""
import re
import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
DOCS = ROOT / "docs"
MARKDOWN = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def repo_files():
    """The .py, .md and .toml files of the repository (not hidden or build directories), but
    this one, whose patterns and examples would match themselves."""
    out = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if any(p.startswith(".") or p.endswith(".egg-info") or p == "__pycache__"
               or p == "build" for p in rel.parts):
            continue
        if path.suffix in (".py", ".md", ".toml") and path.is_file() and path != HERE:
            out.append(path)
    return out


def prose(text):
    """Markdown without fenced code blocks and inline code spans."""
    text = re.sub(r"(?ms)^```.*?^```", "", text)
    return re.sub(r"`[^`\n]*`", "", text)


LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")


def relative_links(path):
    return [t for t in LINK.findall(prose(path.read_text()))
            if not re.match(r"[a-z][a-z0-9+.-]*:", t)]   # http:, https:, mailto: ...


@pytest.mark.parametrize("md", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve_to_files_of_the_repository(md):
    bad = []
    for target in relative_links(md):
        resolved = (md.parent / target).resolve()
        if "#" in target:
            bad.append(f"{target}: has an anchor (link the file)")
        elif ROOT not in resolved.parents or not resolved.is_file():
            bad.append(f"{target}: no such file in the repository")
    assert bad == []


def test_the_link_check_sees_links_and_skips_code(tmp_path):
    f = tmp_path / "x.md"
    f.write_text("[a](a.md) and [web](https://example.org) `[c](c.md)`\n```\n[d](d.md)\n```\n")
    assert relative_links(f) == ["a.md"]


# What a clone does not have: the shared notes beside the repository.
OUTSIDE = [
    (re.compile(r"\.\./shared/"), "a path into ../shared/"),
    (re.compile(r"(?<![\w.-])shared/[\w./-]*\.md"), "a path into shared/"),
    (re.compile(r"(?<![\w.-])reference/[\w.-]+\.md"), "a reference/ file"),
    (re.compile(r"(?<![\w/.-])DESIGN\.md"), "the shared design notes"),
    (re.compile(r"(?<![\w/.-])STYLE\.md"), "the shared style notes"),
    (re.compile(r"(?<![\w/.-])microarch\.md"), "the shared microarchitecture notes"),
]
MD_NAME = re.compile(r"(?<![\w/.-])((?:docs/)?[\w-]+\.md)\b")


def test_no_file_points_outside_the_repository():
    bad = []
    for path in repo_files():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for pattern, what in OUTSIDE:
                for m in pattern.finditer(line):
                    bad.append(f"{path.relative_to(ROOT)}:{n}: {m.group(0)} ({what})")
    assert bad == []


def test_every_markdown_file_named_exists():
    """A bare NAME.md in code or docs is docs/NAME.md or a file at the top; docs/NAME.md
    anywhere is a file in docs/."""
    names = {p.name for p in DOCS.glob("*.md")}
    top = {p.name for p in ROOT.glob("*.md")}
    bad = []
    for path in repo_files():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for m in MD_NAME.finditer(line):
                name = m.group(1)
                if name.startswith("docs/"):
                    ok = name[5:] in names
                else:
                    ok = name in names or name in top or (path.parent / name).is_file()
                if not ok:
                    bad.append(f"{path.relative_to(ROOT)}:{n}: {name}")
    assert bad == []


SECTION_REF = re.compile(r"\b(hardware|kernel-paths|scenarios)\.md\)?\s+§(\d+(?:\.\d+)?)")
HEADING = re.compile(r"(?m)^#{2,3} (\d+(?:\.\d+)?)[. ]")


def test_section_references_name_sections_that_exist():
    """"hardware.md §1.5", "docs/kernel-paths.md §4.2", "[scenarios.md](scenarios.md) §3":
    the docs keep the numbering the code cites."""
    sections = {name: set(HEADING.findall((DOCS / f"{name}.md").read_text()))
                for name in ("hardware", "kernel-paths", "scenarios")}
    bad = []
    for path in repo_files():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for name, number in SECTION_REF.findall(line):
                if number not in sections[name]:
                    bad.append(f"{path.relative_to(ROOT)}:{n}: {name}.md §{number}")
    assert bad == []


def provenance_strings(node):
    """Every `source` and `assumption` string of a parsed profile."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("source", "assumption") and isinstance(v, str):
                yield v
            else:
                yield from provenance_strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from provenance_strings(v)


TAG = re.compile(r"\[([A-Z0-9][A-Za-z0-9 -]*)\]")   # [ILX], [SO LFB thread]; not [imc]


def test_every_source_tag_of_a_profile_is_listed_in_hardware_md():
    text = (DOCS / "hardware.md").read_text()
    listed = set(re.findall(r"(?m)^\* \[([^\]]+)\]", text.split("\n## Sources\n", 1)[1]))
    bad = set()
    used = set()
    for toml in sorted((ROOT / "memmodel" / "profiles").glob("*.toml")):
        with open(toml, "rb") as f:
            for s in provenance_strings(tomllib.load(f)):
                for tag in TAG.findall(s):
                    used.add(tag)
                    # "[OPTSTUDY README]": a file of the listed [OPTSTUDY]
                    if tag not in listed and tag.split()[0] not in listed:
                        bad.add(f"{toml.name}: [{tag}]")
    assert used and sorted(bad) == []
