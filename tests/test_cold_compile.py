"""The cold compile's figure has one source, emu/cold_compile.json, which
`benchmarks/compile_time.py --record` writes: the first-run notice reads it, and README.md
and docs/performance.md quote it in whole seconds, as the notice prints it."""
import importlib.util
import json
import re
from pathlib import Path

import pytest

from emu import machine as machine_mod

ROOT = Path(__file__).resolve().parent.parent
QUOTE = re.compile(r"about (\d+) s \(`emu/cold_compile\.json`")


def recorded():
    return json.loads((ROOT / "emu" / "cold_compile.json").read_text())


def compile_time():
    spec = importlib.util.spec_from_file_location(
        "compile_time", ROOT / "benchmarks" / "compile_time.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_record_is_the_package_file_the_notice_reads():
    assert Path(machine_mod.COLD_COMPILE_FILE) == ROOT / "emu" / "cold_compile.json"
    assert machine_mod.COLD_COMPILE_SECONDS == round(recorded()["seconds"])


def test_the_record_says_where_and_when():
    r = recorded()
    assert r["host"] and r["numba"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", r["date"])


@pytest.mark.parametrize("doc", ["README.md", "docs/performance.md"])
def test_the_docs_quote_the_recorded_figure(doc):
    quoted = QUOTE.findall((ROOT / doc).read_text())
    assert quoted, f"{doc} quotes no figure from emu/cold_compile.json"
    assert {int(q) for q in quoted} == {round(recorded()["seconds"])}, \
        f"{doc} quotes another figure than emu/cold_compile.json's: re-read the file"


def test_performance_md_names_the_records_host_and_date():
    text, r = (ROOT / "docs" / "performance.md").read_text(), recorded()
    assert r["host"] in text and r["date"] in text


def test_a_record_written_is_read_back_as_the_notice_rounds_it(tmp_path):
    path = tmp_path / "cold_compile.json"
    rec = compile_time().record(73.44, str(path))
    assert rec["seconds"] == 73.4                      # a tenth kept in the file
    assert machine_mod._cold_compile_seconds(str(path)) == 73
    assert json.loads(path.read_text()) == rec


@pytest.mark.parametrize("content", ["", "[]", "{}", '{"seconds": -3}', '{"seconds": "60"}',
                                     '{"seconds": true}', '{"seconds": Infinity}',
                                     '{"seconds": NaN}'])
def test_a_broken_record_is_one_clear_error(tmp_path, content):
    path = tmp_path / "cold_compile.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="no cold-compile figure.*--record writes it"):
        machine_mod._cold_compile_seconds(str(path))


def test_a_missing_record_is_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no cold-compile figure"):
        machine_mod._cold_compile_seconds(str(tmp_path / "absent.json"))
