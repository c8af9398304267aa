"""Machine.save / Machine.load: a machine's whole state in one file, to continue from later.

A snapshot is a zip of numpy .npy members (the state buffer S, the page table, the frames of
functional memory) and header.json: the package version, the state layout's description
and its sha256, the resolved profile with its sources, the machine's arguments, the sites it
has named and a sha256 of each member. A loaded machine continues bit-identically to the
one saved (same cycles, stats and state_hash after the same runs). Loading refuses, with one
SnapshotError naming what differs, a file of another package version or state layout, and
any file that is not a whole, intact snapshot: the state is checked against a machine built
afresh from the saved profile before compiled code (which does not bounds-check) sees it.
"""
import functools
import hashlib
import importlib
import io
import json
import os
import tempfile
import zipfile
from enum import IntEnum
from importlib import metadata

import numpy as np

from emu import state as st
from memmodel import jit
from memmodel import memory as mm
from memmodel.layout import LV, MT
from memmodel.profile import ProfileError, load_profile

FORMAT = "cacheline-emu snapshot"
FORMAT_VERSION = 1
HEADER = "header.json"
ARRAYS = ("S", "pt", "frames")
# the level table's words that fix geometry (the rest are clocks, counts, RNG state)
_LV_FIXED = [LV.SETS, LV.MASK, LV.WAYS, LV.BASE, LV.HIT, LV.POLICY]


class SnapshotError(ValueError):
    """A snapshot that cannot be loaded: the message names the file and what is wrong."""


def package_version():
    return metadata.version("cacheline-emu")


@functools.cache
def _field_enums():
    """{module.Enum: [member names in order]} of the IntEnums of the modules the state's
    fields are declared in (the compiled modules): a renamed, added or moved field of any
    section changes it. Once per process (listing the modules parses the sources)."""
    out = {}
    for path in jit.frozen_sources():
        mod = importlib.import_module(path[:-3].replace("/", "."))
        for name, obj in vars(mod).items():
            if isinstance(obj, type) and issubclass(obj, IntEnum) and obj is not IntEnum:
                out[f"{mod.__name__}.{name}"] = [f"{m.name}={int(m)}" for m in obj]
    return dict(sorted(out.items()))


def layout_description(m):
    """The state layout of machine `m`: every section's offset and shape, and the field
    enums; with its sha256 (`layout_sha256`)."""
    lay = m.layout
    return {"sections": {n: [int(lay.offsets[n]), list(lay.shapes[n])]
                         for n in sorted(lay.shapes)},
            "size": int(len(m.S)), "fields": dict(_field_enums())}


def layout_sha256(desc):
    return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()


def _machine_args(m):
    """The constructor's arguments that rebuild `m`'s layout and parameters."""
    bg = None
    if m.background is not None:
        bg = {n: {"read_gbps": float(r), "write_gbps": float(w)}
              for n, (r, w) in zip(m.media_names, m.background) if r or w}
    return {"regions": [m.regions[n] for n in m.region_names], "functional": bool(m.functional),
            "smap": bool(m.S[st.TP.SMAP]), "node": int(m.S[MT.NODE]),
            "memory_limit_bytes": int(m.memory_limit_bytes), "hot_lines": int(m.S[MT.HOT_CAP]),
            "background": bg, "cores": int(m.cores), "sockets": int(m.layout.sockets)}


def _profile_data(p):
    return {"name": p.name, "values": p.values, "sources": p.sources,
            "transfers": p.transfers, "files": p.files}


def _raw_profile(data):
    """The profile of a header as raw TOML data, each sourced value with its provenance,
    for memmodel.profile.load_profile to check as strictly as a file."""
    raw = json.loads(json.dumps(data["values"]))
    raw.setdefault("profile", {})["name"] = data["name"]
    for key, prov in data["sources"].items():
        *path, leaf = key.split(".")
        node = raw
        for part in path:
            node = node[part]
        entry = {"value": node[leaf]}
        if prov.startswith("assumption: "):
            entry["assumption"] = prov[len("assumption: "):]
        else:
            entry["source"] = prov
        if key in data["transfers"]:
            entry["transferred_from"] = data["transfers"][key]
        node[leaf] = entry
    return raw


def _npy(a):
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def save(m, path):
    """Write machine `m` to `path` (a zip, conventionally .emu.zip): written to a temporary
    file beside it and renamed, so `path` is never half written."""
    path = os.fspath(path)
    blobs = {name: _npy(getattr(m, name)) for name in ARRAYS}
    desc = layout_description(m)
    header = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "version": package_version(),
        "layout_sha256": layout_sha256(desc), "layout": desc,
        "profile": _profile_data(m.profile), "machine": _machine_args(m),
        "site_names": list(m.site_names), "plain_path": bool(m.plain_path),
        "members": {n: hashlib.sha256(b).hexdigest() for n, b in blobs.items()},
    }
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
                z.writestr(HEADER, json.dumps(header, indent=1))
                for name, b in blobs.items():
                    z.writestr(f"{name}.npy", b)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _first_difference(saved, here, where=""):
    """The first dotted key at which two JSON values differ, or None."""
    if isinstance(saved, dict) and isinstance(here, dict):
        for k in sorted(set(saved) | set(here)):
            if k not in saved or k not in here:
                return f"{where}{k} ({'only here' if k in here else 'only in the file'})"
            d = _first_difference(saved[k], here[k], f"{where}{k}.")
            if d:
                return d
        return None
    return None if saved == here else where.rstrip(".")


def _read(path):
    """(header, {member: array}) of the file at `path`, its members checked against the
    header's digests; SnapshotError for anything that is not a whole snapshot."""
    try:
        with zipfile.ZipFile(path) as z:
            try:
                header = json.loads(z.read(HEADER))
            except KeyError:
                raise SnapshotError(f"{path}: not an emulator snapshot (no {HEADER})") from None
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                raise SnapshotError(f"{path}: not an emulator snapshot ({HEADER} names no "
                                    f"{FORMAT!r})")
            if header.get("format_version") != FORMAT_VERSION:
                raise SnapshotError(f"{path}: snapshot format {header.get('format_version')!r}"
                                    f", this emulator reads format {FORMAT_VERSION}")
            blobs = {n: z.read(f"{n}.npy") for n in ARRAYS}
    except SnapshotError:
        raise
    except FileNotFoundError:
        raise SnapshotError(f"{path}: no such file") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, KeyError, EOFError, OSError,
            UnicodeDecodeError, json.JSONDecodeError, ValueError) as e:
        raise SnapshotError(f"{path}: not a whole emulator snapshot ({e})") from None
    try:
        digests = header["members"]
        for n, b in blobs.items():
            if hashlib.sha256(b).hexdigest() != digests[n]:
                raise SnapshotError(f"{path}: member {n}.npy does not match its digest in "
                                    f"{HEADER} (the file is corrupt)")
        arrays = {n: np.load(io.BytesIO(b), allow_pickle=False) for n, b in blobs.items()}
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError, EOFError) as e:
        raise SnapshotError(f"{path}: not a whole emulator snapshot ({e!r})") from None
    return header, arrays


def load(cls, path):
    """The machine saved at `path` (save()), as a new `cls`."""
    path = os.fspath(path)
    header, arrays = _read(path)
    if header.get("version") != package_version():
        raise SnapshotError(f"{path}: made by cacheline-emu {header.get('version')}, this is "
                            f"{package_version()}: snapshots are not carried across versions")
    try:
        prof = header["profile"]
        profile = load_profile(_raw_profile(prof))
        profile.name, profile.files = prof["name"], list(prof["files"])
        args = header["machine"]
        m = cls(profile, **args)
        sites = [str(s) for s in header["site_names"]]
        shape = tuple(header["layout"]["sections"]["site_ctr"][1])
    except SnapshotError:
        raise
    except (ProfileError, KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise SnapshotError(f"{path}: its profile or machine does not build: {e}") from None
    if shape != m.layout.shapes["site_ctr"]:
        m.S = m.layout.resized(m.S, "site_ctr", shape)
    desc = layout_description(m)
    if layout_sha256(desc) != header.get("layout_sha256") or desc != header.get("layout"):
        what = _first_difference(header.get("layout"), desc) or "its sha256"
        raise SnapshotError(f"{path}: made with another state layout than this emulator's "
                            f"(differs at {what}): snapshots are not carried across layouts")
    _check_arrays(path, m, arrays)
    S = m.layout.build()   # aligned, with this layout's header
    S[:] = arrays["S"]
    m.S, m.pt, m.frames = S, arrays["pt"].copy(), arrays["frames"].copy()
    m.site_names = sites
    m._site_ids = {n: i for i, n in enumerate(sites)}
    m.plain_path = bool(header["plain_path"])
    return m


def _check_arrays(path, m, arrays):
    """The saved arrays against the machine built afresh from the saved profile: the same
    types and shapes, and the words compiled code indexes by (section offsets, the core's
    and memory side's parameters, cache geometry, regions) equal."""
    S = arrays["S"]
    for name, a in arrays.items():
        ref = getattr(m, name)
        if a.dtype != ref.dtype or a.ndim != ref.ndim or (
                name == "S" and a.shape != ref.shape) or a.shape[1:] != ref.shape[1:]:
            raise SnapshotError(f"{path}: {name}.npy is {a.dtype}{list(a.shape)}, a machine of "
                                f"its profile has {ref.dtype}{list(ref.shape)}")
    for b in m.layout.blocks:
        for name, slot in b.slots.items():
            if S[slot] != m.S[slot]:
                raise SnapshotError(f"{path}: the state's header places section {name} at "
                                    f"{int(S[slot])}, not {int(m.S[slot])} (the file is corrupt)")
    lay = m.layout
    for name in ("tp", "mt", "mp", "reg"):
        off, n = lay.offsets[name], int(np.prod(lay.shapes[name]))
        if not np.array_equal(S[off:off + n], m.S[off:off + n]):
            raise SnapshotError(f"{path}: state section {name} differs from its profile's "
                                "(the file is corrupt)")
    lv = lay.offsets["lv"]
    rows = S[lv:lv + int(np.prod(lay.shapes["lv"]))].reshape(lay.shapes["lv"])
    if not np.array_equal(rows[:, _LV_FIXED], lay.view(m.S, "lv")[:, _LV_FIXED]):
        raise SnapshotError(f"{path}: the cache geometry in the state differs from its "
                            "profile's (the file is corrupt)")
    pt, frames = arrays["pt"], arrays["frames"]
    refs = np.concatenate([pt[:, :mm.CHUNK_PAGES].reshape(-1), pt[:, mm.DURABLE0:].reshape(-1)])
    cdir = S[lay.offsets["chunk_dir"]:][:int(np.prod(lay.shapes["chunk_dir"]))]
    alloc = S[lay.offsets["alloc"]:][:len(mm.ALLOC)]
    if (refs.size and (refs.min() < -1 or refs.max() >= len(frames))) or (
            cdir.size and (cdir.min() < -1 or cdir.max() >= len(pt))) or not (
            0 <= alloc[mm.ALLOC.CHUNKS] <= len(pt) and 0 <= alloc[mm.ALLOC.FRAMES] <= len(frames)):
        raise SnapshotError(f"{path}: the page table or chunk directory names rows outside "
                            "the saved arrays (the file is corrupt)")
