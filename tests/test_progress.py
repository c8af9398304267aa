"""The progress bar (emu/studies/progress.py): shown on a terminal's stderr only, never with
--json or --quiet or without tqdm, and never changing what stdout gets."""
import json
import os
import re
import sys
import time

import numpy as np
import pytest

from emu import studies
from emu.studies import progress
from emu.studies.cli import main
from isa.traces import iter_trace

pytest.importorskip("tqdm")

LINES = 3000   # several chunks at chunk_lines=700


class FakeTty:
    """A stderr that says it is a terminal and keeps what is written to it."""

    def __init__(self):
        self.parts = []

    def isatty(self):
        return True

    def write(self, text):
        self.parts.append(text)
        return len(text)

    def flush(self):
        pass

    @property
    def text(self):
        return "".join(self.parts)


@pytest.fixture
def din(tmp_path):
    f = tmp_path / "bar.din"
    f.write_text("".join(f"0 {0x10000 + 64 * (i % 512):x}\n" for i in range(LINES)))
    return str(f)


def fake_tty(monkeypatch):
    """A terminal stderr, and the bar drawn at once rather than after DELAY_S. Set in the
    test itself: pytest puts its own capture back on sys.stderr after fixtures are set up."""
    fake = FakeTty()
    monkeypatch.setattr(sys, "stderr", fake)
    monkeypatch.setattr(progress, "DELAY_S", 0)
    return fake


def run(capsys, *argv):
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_trace_bar_on_a_terminal_and_stdout_unchanged(capsys, monkeypatch, din):
    plain = run(capsys, "trace", din)   # pytest's stderr is no terminal: no bar
    fake = fake_tty(monkeypatch)
    assert run(capsys, "trace", din) == plain
    assert "bar.din" in fake.text and "/24.0k" in fake.text   # of the file's 24000 bytes


@pytest.mark.parametrize("flag", ["--json", "--quiet"])
def test_json_and_quiet_show_no_bar(capsys, monkeypatch, din, flag):
    tty = fake_tty(monkeypatch)
    run(capsys, "trace", din)
    assert "bar.din" in tty.text
    tty.parts.clear()
    run(capsys, "trace", din, flag)
    assert tty.text == ""


def test_without_tqdm_the_output_is_the_same(capsys, monkeypatch, din):
    tty = fake_tty(monkeypatch)
    with_tqdm = run(capsys, "trace", din)
    assert "bar.din" in tty.text
    tty.parts.clear()
    monkeypatch.setitem(sys.modules, "tqdm", None)   # `import tqdm` raises ImportError
    assert run(capsys, "trace", din) == with_tqdm
    assert tty.text == ""


def test_a_scenarios_json_is_the_same_with_the_bar(capsys, monkeypatch):
    plain = run(capsys, "run", "vhost-tx", "--packets", "64", "--json")
    fake = fake_tty(monkeypatch)
    # --json silences the bar; the Python API's progress=True shows it anyway
    assert studies.run("vhost-tx", packets=64, progress=True) == json.loads(plain)
    assert "vhost-tx" in fake.text


def test_bytes_read_end_at_the_file_size(din, tmp_path):
    chunks = list(iter_trace(din, chunk_lines=700))
    assert len(chunks) > 1
    read = [c.bytes_read for c in chunks]
    assert read == sorted(read) and read[-1] == os.path.getsize(din)
    npy = tmp_path / "t.npy"
    np.save(npy, np.array([[0, 0x10000 + 64 * i] for i in range(LINES)], dtype=np.int64))
    read = [c.bytes_read for c in iter_trace(str(npy), chunk_lines=700)]
    assert len(read) > 1 and read == sorted(read) and read[-1] == os.path.getsize(npy)


def test_compare_shows_a_bar_over_profiles_and_the_same_table(capsys, monkeypatch):
    argv = ("compare", "vhost-tx", "--profiles", "skylake-ddr4,cascadelake-optane", "--packets", "64")
    plain = run(capsys, *argv)
    fake = fake_tty(monkeypatch)
    assert run(capsys, *argv) == plain
    assert "vhost-tx profiles" in fake.text
    fake.parts.clear()
    run(capsys, *argv, "--quiet")
    assert fake.text == ""


def test_sensitivity_shows_a_bar_over_its_keys_and_the_same_json(capsys, monkeypatch):
    argv = ("run", "vhost-tx", "--packets", "64", "--sensitivity", "core.freq_ghz")
    plain = run(capsys, *argv)
    fake = fake_tty(monkeypatch)
    assert run(capsys, *argv) == plain
    assert "vhost-tx sensitivity" in fake.text


def test_map_trace_pass_has_its_own_bar(capsys, monkeypatch, din):
    plain = run(capsys, "trace", din, "--map-trace")
    fake = fake_tty(monkeypatch)
    assert run(capsys, "trace", din, "--map-trace") == plain
    assert "mapping pages" in fake.text and "bar.din" in fake.text
    drawn = [line for line in fake.text.replace("\n", "\r").split("\r") if "/24.0k" in line]
    assert any("mapping pages" in line for line in drawn)   # both passes over the file's
    assert any("bar.din" in line for line in drawn)         # 24000 bytes
    fake.parts.clear()
    run(capsys, "trace", din)   # a din trace is not mapped by default: no first pass
    assert "bar.din" in fake.text and "mapping pages" not in fake.text
    fake.parts.clear()
    run(capsys, "trace", din, "--map-trace", "--quiet")
    assert fake.text == ""


def test_the_bar_moves_within_a_long_item(monkeypatch):
    """Within the first item (no estimate yet) the bar is redrawn with its elapsed time;
    within the second, advanced by time over the first's duration, short of the item's end;
    at each item's end it stands at the items done."""
    fake = fake_tty(monkeypatch)
    monkeypatch.setattr(progress, "TICK_S", 0.05)
    seen = []
    bar = progress.progress(["a", "b"], "items", enabled=True)
    for i, item in enumerate(bar):
        drawn = len(fake.parts)
        time.sleep(0.6)
        seen.append((bar.bar.n, len(fake.parts) - drawn))
    assert bar.bar.disable   # closed at the end
    (n0, redraws0), (n1, redraws1) = seen
    assert n0 == 0 and redraws0 >= 3           # item 1: elapsed time redrawn, no advance
    assert 1 < n1 <= 1 + progress.AHEAD and redraws1 >= 3
    assert "items" in fake.text


def test_a_long_single_variant_run_moves_and_its_result_is_the_same(capsys, monkeypatch):
    """A study of one long variant: the bar moves while it runs, and the result is the one
    without a bar, word for word."""
    plain = run(capsys, "run", "dax-memcpy", "--scale", "0.001", "--json")
    fake = fake_tty(monkeypatch)
    monkeypatch.setattr(progress, "TICK_S", 0.05)
    assert studies.run("dax-memcpy", scale=0.001, progress=True) == json.loads(plain)
    # drawn within its variants (a part of one done), not only as each of its 4 ends
    assert re.search(r"dax-memcpy:.*\| \d\.[1-9]/4 ", fake.text)
