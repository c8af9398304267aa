"""Machine.save / Machine.load (emu/snapshot.py): a loaded machine continues exactly as the
one saved would have; every file it cannot trust is refused with one SnapshotError."""
import io
import json
import os
import zipfile

import numpy as np
import pytest

from emu import Machine
from emu import snapshot as snap
from emu.snapshot import SnapshotError
from isa.program import Program


def _program(base, n_sites):
    """Loads, stores, a copy and a flush over `n_sites` sites (more than a new machine's
    site table holds, so that the table has grown)."""
    p = Program()
    for k in range(n_sites):
        p.site(f"site{k}")
        for i in range(40):
            p.load(base + (k * 40 + i) * 448)
            p.store(0x4000000 + (k * 40 + i) * 64, bytes([k]) * 8)
    p.site("copy")
    p.rep_movsb(0x8000000, base, 8192)
    p.clflush(0x8000000).sfence()
    return p


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(the machine after run A, the path it was saved to)."""
    m = Machine("skylake-ddr4", hot_lines=64, smap=False, node=0)
    m.write(0x100000, bytes(range(256)) * 64)
    m.run(_program(0x100000, 20))
    m.run(Program().load(0x2000000).store(0x2000040, b"\7" * 8), repeat=5)
    path = tmp_path_factory.mktemp("snap") / "warm.emu.zip"
    m.save(path)
    return m, path


def test_loaded_machine_continues_as_the_original(saved):
    m, path = saved
    loaded = Machine.load(path)
    assert loaded.state_hash() == m.state_hash()
    assert loaded.site_names == m.site_names
    b = _program(0x300000, 24)
    r_orig, r_loaded = m.run(b), loaded.run(b)
    assert r_loaded.cycles == r_orig.cycles
    assert loaded.stats() == m.stats()
    assert loaded.state_hash() == m.state_hash()
    assert loaded.read(0x4000000, 4096) == m.read(0x4000000, 4096)
    assert loaded.run_profile() == m.run_profile()   # its hot lines included


def test_one_snapshot_serves_many_variants(saved):
    """Two loads of one file are independent machines: a run on one leaves the other."""
    _, path = saved
    a, b = Machine.load(path), Machine.load(path)
    before = b.state_hash()
    a.run(_program(0x500000, 2))
    assert b.state_hash() == before


def _rewrite(src, dst, header=None, members=None):
    """A copy of snapshot `src` with header fields and members replaced."""
    with zipfile.ZipFile(src) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    h = json.loads(parts[snap.HEADER])
    h.update(header or {})
    parts[snap.HEADER] = json.dumps(h).encode()
    parts.update(members or {})
    with zipfile.ZipFile(dst, "w") as z:
        for n, b in parts.items():
            z.writestr(n, b)
    return dst


def _header(path):
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read(snap.HEADER))


def test_refused_across_versions(saved, tmp_path):
    _, path = saved
    bad = _rewrite(path, tmp_path / "old.emu.zip", {"version": "0.0.1"})
    with pytest.raises(SnapshotError, match=r"made by cacheline-emu 0\.0\.1, this is "):
        Machine.load(bad)


def test_refused_across_layouts(saved, tmp_path):
    """A snapshot of an emulator whose core declares its fields otherwise (here: one field
    of the pipeline's scalars renamed) is refused, naming the enum that differs."""
    _, path = saved
    layout = _header(path)["layout"]
    sc = layout["fields"]["emu.state.SC"]
    sc[0] = "RENAMED=" + sc[0].split("=")[1]
    bad = _rewrite(path, tmp_path / "other.emu.zip",
                   {"layout": layout, "layout_sha256": snap.layout_sha256(layout)})
    with pytest.raises(SnapshotError, match=r"another state layout .*fields\.emu\.state\.SC"):
        Machine.load(bad)


def test_refused_when_a_section_moved(saved, tmp_path):
    _, path = saved
    layout = _header(path)["layout"]
    layout["sections"]["tags"][0] += 8
    bad = _rewrite(path, tmp_path / "moved.emu.zip",
                   {"layout": layout, "layout_sha256": snap.layout_sha256(layout)})
    with pytest.raises(SnapshotError, match=r"another state layout .*sections\.tags"):
        Machine.load(bad)


def _npy(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_corrupt_member_refused(saved, tmp_path):
    """A state that is not the one the header's digest names."""
    m, path = saved
    S = m.S.copy()
    S[-1] ^= 1
    bad = _rewrite(path, tmp_path / "flipped.emu.zip", members={"S.npy": _npy(S)})
    with pytest.raises(SnapshotError, match=r"S\.npy does not match its digest"):
        Machine.load(bad)


def test_state_inconsistent_with_its_profile_refused(saved, tmp_path):
    """A state whose core parameters (a digest made to match) disagree with its profile:
    compiled code indexes by them, so it never sees it."""
    import hashlib

    from emu import state as st
    m, path = saved
    S = m.S.copy()
    S[st.TP.ROB] += 1
    blob = _npy(S)
    members = dict(_header(path)["members"], S=hashlib.sha256(blob).hexdigest())
    bad = _rewrite(path, tmp_path / "tp.emu.zip", {"members": members}, {"S.npy": blob})
    with pytest.raises(SnapshotError, match=r"state section tp differs from its profile"):
        Machine.load(bad)


def test_bad_profile_refused(saved, tmp_path):
    """The saved profile is checked as strictly as a profile file."""
    _, path = saved
    prof = _header(path)["profile"]
    prof["values"]["core"]["rob_entries"] = -3
    bad = _rewrite(path, tmp_path / "prof.emu.zip", {"profile": prof})
    with pytest.raises(SnapshotError, match=r"core\.rob_entries: must be >= 1"):
        Machine.load(bad)


@pytest.mark.parametrize("damage", ["truncated", "not a zip", "no header", "bad json",
                                    "other format", "missing"])
def test_damaged_files_refused(saved, tmp_path, damage):
    _, path = saved
    bad = tmp_path / "bad.emu.zip"
    data = path.read_bytes()
    if damage == "truncated":
        bad.write_bytes(data[:len(data) // 2])
    elif damage == "not a zip":
        bad.write_text("hello\n")
    elif damage == "no header":
        with zipfile.ZipFile(bad, "w") as z:
            z.writestr("S.npy", _npy(np.zeros(3, np.int64)))
    elif damage == "bad json":
        with zipfile.ZipFile(bad, "w") as z:
            z.writestr(snap.HEADER, "{not json")
    elif damage == "other format":
        with zipfile.ZipFile(bad, "w") as z:
            z.writestr(snap.HEADER, json.dumps({"format": "something else"}))
    with pytest.raises(SnapshotError) as e:
        Machine.load(bad)
    msg = str(e.value)
    assert msg.startswith(str(bad)) and "\n" not in msg


def test_no_half_written_file(saved, tmp_path, monkeypatch):
    """A save that fails part-way leaves the old file as it was and no temporary file."""
    m, path = saved
    target = tmp_path / "keep.emu.zip"
    target.write_bytes(path.read_bytes())
    before = target.read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(zipfile.ZipFile, "writestr", boom)
    with pytest.raises(OSError, match="disk full"):
        m.save(target)
    assert target.read_bytes() == before
    assert os.listdir(tmp_path) == ["keep.emu.zip"]
