"""Latency profiles: strict TOML loading, `inherit`, overrides and sources.

A profile is a TOML file. Every number that shapes timing is written as an inline table
with its provenance, `{ value = 4, source = "[ILX] NewMemLat" }`, or, where no source gives
it, `{ value = 2, assumption = "why this value" }`. A value measured on another machine than the
profile's also names that machine, `transferred_from = "Xeon 8260 (cascadelake-optane)"`, its
text saying why it applies (docs/hardware.md "Transferred values"). Strings and booleans are
plain.
Unknown sections or keys, missing keys, wrong types and out-of-range values raise
ProfileError naming the file and the key.
"""
import copy
import math
import os
import stat
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from memmodel import profile_schema as schema
from memmodel.media import kind_keys


class ProfileError(ValueError):
    """A profile that cannot be used; the message names file, key and problem."""


@dataclass
class Profile:
    """A resolved profile: plain values, the source of each, and the chain of files."""
    name: str
    values: dict
    sources: dict = field(default_factory=dict)
    files: list = field(default_factory=list)
    transfers: dict = field(default_factory=dict)   # key -> machine it was measured on

    def get(self, dotted):
        node = self.values
        for part in dotted.split("."):
            node = node[part]
        return node


def sockets(values):
    """The sockets of the machine whose checked profile values are `values` (core.sockets;
    1 without it): the one place that says how many a profile has."""
    return values["core"].get("sockets", 1)


def shipped_profiles():
    """Names of the profiles shipped in memmodel/profiles/."""
    root = resources.files("memmodel") / "profiles"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def _is_name(spec):
    """Whether `spec` names a shipped profile rather than a file: no .toml suffix and no
    path separator. Anything else is a path, read as given (it must exist)."""
    return not spec.endswith(".toml") and "/" not in spec and "\\" not in spec


def _shipped_path(name):
    # a listed name only: "..", "." or a name with a separator never leaves profiles/
    if name not in shipped_profiles():
        raise ProfileError(f"no shipped profile named {name!r}; shipped: {', '.join(shipped_profiles())}")
    return Path(str(resources.files("memmodel") / "profiles" / f"{name}.toml"))


#: The largest TOML file read (a profile, a --media table): profiles are a few KiB.
MAX_TOML_BYTES = 1 << 20
#: The deepest nesting of tables and arrays in a profile's data (a profile needs 4:
#: media.NAME.key.value); deeper data would exhaust the parser's and copy's recursion.
MAX_TOML_DEPTH = 32


def read_toml(path, what="profile file"):
    """The TOML data of the regular file `path` of at most MAX_TOML_BYTES, nested at most
    MAX_TOML_DEPTH deep; anything else is a ProfileError naming the file (`what` says what
    it is for). Opened non-blocking (a FIFO cannot hang the open) and checked on the open
    descriptor, so the file checked is the file read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such {what}") from None
    except OSError as e:
        raise ProfileError(f"{path}: cannot read the {what}: {e.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ProfileError(f"{path}: cannot read the {what}: not a regular file")
        if info.st_size > MAX_TOML_BYTES:
            raise ProfileError(f"{path}: cannot read the {what}: {info.st_size} bytes, more "
                               f"than the limit of {MAX_TOML_BYTES}")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_TOML_BYTES + 1)   # + 1: a file that grew since fstat
    except OSError as e:
        raise ProfileError(f"{path}: cannot read the {what}: {e.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_TOML_BYTES:
        raise ProfileError(f"{path}: cannot read the {what}: more than the limit of "
                           f"{MAX_TOML_BYTES} bytes")
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ProfileError(f"{path}: not valid TOML: {e}") from None
    except RecursionError:
        raise ProfileError(f"{path}: not valid TOML: nested too deeply") from None
    check_depth(raw, path)
    return raw


def check_depth(data, where):
    """ProfileError if dicts and lists in `data` nest deeper than MAX_TOML_DEPTH (counted
    without recursion, so any depth is refused cleanly)."""
    level = [data]
    for _ in range(MAX_TOML_DEPTH):   # after each pass: the containers one level deeper
        level = [v for x in level for v in (x.values() if isinstance(x, dict) else x)
                 if isinstance(v, (dict, list))]
        if not level:
            return
    raise ProfileError(f"{where}: tables or arrays nested more than {MAX_TOML_DEPTH} deep")


def _head(raw, where):
    """The [profile] table of raw TOML data."""
    head = raw.get("profile", {})
    if not isinstance(head, dict):
        raise ProfileError(f"{where}: profile: must be a table")
    return head


def _merge(base, over):
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and "value" not in v:
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _with_parent(raw, here, chain):
    """`raw` merged over the profile it inherits from (recursively). `here` is the file
    being read or None for a dict. A parent is a shipped name or a file beside `here` (or a
    dict's working directory) or below it: a relative path without "..", so that a profile
    cannot pull in files from elsewhere. Returns (raw, the parent files, root first)."""
    where = here or "<dict>"
    parent = _head(raw, where).get("inherit")
    if parent is None:
        return raw, []
    if not isinstance(parent, str):
        raise ProfileError(f"{where}: profile.inherit: must be a profile name or path")
    if _is_name(parent):
        ppath = _shipped_path(parent)
    else:
        ppath = Path(parent)
        if ppath.is_absolute() or ".." in ppath.parts:
            raise ProfileError(f"{where}: profile.inherit = {parent!r}: a parent file is "
                               f"named relative to this one's folder, without '..'")
        if here is not None:
            ppath = Path(here).parent / ppath
    base, files = _load_raw(ppath, chain)
    raw = _merge(base, raw)
    raw["profile"].pop("inherit", None)
    return raw, files


def _load_raw(path, chain):
    if str(path) in chain:
        raise ProfileError(f"{path}: inherit cycle through {' -> '.join(chain)}")
    raw, files = _with_parent(read_toml(path), path, chain + [str(path)])
    return raw, files + [str(path)]


def load_raw(spec):
    """The raw TOML data of a shipped profile name or a profile path, its inheritance
    resolved (a copy to edit and pass to load_profile as a dict), and its files."""
    path = _shipped_path(str(spec)) if _is_name(str(spec)) else Path(spec)
    return _load_raw(path, [])


def _check_value(where, key, spec, raw, sources, transfers):
    kind, sourced, *limit = spec
    if sourced:
        if not isinstance(raw, dict):
            raise ProfileError(f"{where}.{key}: a timing number needs a provenance, write "
                               f"{{ value = {raw!r}, source = \"...\" }} or an assumption")
        extra = set(raw) - {"value", "source", "assumption", "transferred_from"}
        if extra:
            raise ProfileError(f"{where}.{key}: unknown field(s) {sorted(extra)}")
        if "value" not in raw:
            raise ProfileError(f"{where}.{key}: missing 'value'")
        prov = raw.get("source") or raw.get("assumption")
        if not isinstance(prov, str) or not prov.strip():
            raise ProfileError(f"{where}.{key}: needs a non-empty 'source' or 'assumption'")
        sources[f"{where}.{key}"] = ("assumption: " if "assumption" in raw else "") + prov
        if "transferred_from" in raw:
            machine = raw["transferred_from"]
            if not isinstance(machine, str) or not machine.strip():
                raise ProfileError(f"{where}.{key}.transferred_from: must name the machine the "
                                   f"value was measured on, got {machine!r}")
            transfers[f"{where}.{key}"] = machine
        val = raw["value"]
    else:
        val = raw
    if kind in (schema.INT, schema.NUM):
        return check_number(f"{where}.{key}", kind, val, *limit)
    (allowed,) = limit
    if kind == schema.BOOL:
        if not isinstance(val, bool):
            raise ProfileError(f"{where}.{key}: must be true or false, got {val!r}")
    elif kind == schema.LIST:
        if not isinstance(val, list) or not all(isinstance(x, str) for x in val):
            raise ProfileError(f"{where}.{key}: must be a list of strings, got {val!r}")
        bad = [x for x in val if x not in allowed]
        if bad:
            raise ProfileError(f"{where}.{key}: unknown {bad}; known: {', '.join(allowed)}")
    elif kind == schema.NAMES:
        return _names(f"{where}.{key}", val, allowed)
    elif kind == schema.STR:
        if not isinstance(val, str):
            raise ProfileError(f"{where}.{key}: must be a string, got {val!r}")
        if allowed is not None and val not in allowed:
            raise ProfileError(f"{where}.{key}: {val!r} is not one of {', '.join(map(repr, allowed))}")
    else:
        raise TypeError(f"{where}.{key}: the schema names no known type ({kind!r})")
    return val


def _names(what, val, allowed):
    """A NAMES value (memmodel.profile_schema) as a tuple of distinct names from `allowed`: a
    string is one name or comma-separated names (as --set gives it), "none" (alone) is no
    name."""
    names = val.split(",") if isinstance(val, str) else val
    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
        raise ProfileError(f"{what}: must be a name, names separated by commas or a list of "
                           f"names, got {val!r}")
    names = [x.strip() for x in names]
    if names in (["none"], []):
        return ()
    if "none" in names:
        raise ProfileError(f"{what}: \"none\" together with other names in {val!r}")
    bad = [x for x in names if x not in allowed]
    if bad:
        raise ProfileError(f"{what}: {bad[0]!r} is not one of {', '.join(map(repr, allowed))}")
    if len(set(names)) < len(names):
        raise ProfileError(f"{what}: a name given twice in {val!r}")
    return tuple(names)


def check_number(what, kind, val, lo, hi):
    """`val` as the schema's int or float in [lo, hi]; the error names `what`, the value and
    the range. Bools are not numbers here; nan and the infinities are never in range."""
    if isinstance(val, bool) or not isinstance(val, int if kind == schema.INT else (int, float)):
        problem = "an integer" if kind == schema.INT else "a number"
    elif isinstance(val, float) and not math.isfinite(val):
        problem = "finite"
    elif val < lo:
        problem = f">= {lo}"
    elif val > hi:
        problem = f"<= {hi}"
    else:
        return float(val) if kind == schema.NUM else val
    # an int of thousands of digits has no repr (sys.set_int_max_str_digits)
    shown = (f"an integer of {val.bit_length()} bits" if isinstance(val, int) and
             val.bit_length() > 64 else repr(val))
    raise ProfileError(f"{what}: must be {problem}, got {shown} (range [{lo}, {hi}])")


def _check_table(where, table, specs, sources, transfers=None, optional=()):
    """`table` checked against `specs` (a table of memmodel.profile_schema); provenance goes to
    `sources` and `transfers` (keyed by where.key); regions, which have none, pass no
    `transfers`."""
    if not isinstance(table, dict):
        raise ProfileError(f"{where}: must be a table")
    unknown = sorted(set(table) - set(specs))
    if unknown:
        raise ProfileError(f"{where}.{unknown[0]}: unknown key (known: {', '.join(specs)})")
    out = {}
    for key, spec in specs.items():
        if key not in table:
            if key in optional:
                continue
            raise ProfileError(f"{where}.{key}: missing")
        out[key] = _check_value(where, key, spec, table[key], sources,
                                {} if transfers is None else transfers)
    return out


def _validate(raw, fname):
    """(values, sources, transfers) of raw TOML data: sources and transfers by dotted key."""
    sources, transfers = {}, {}
    unknown = set(raw) - set(schema.TOP)
    if unknown:
        raise ProfileError(f"{fname}: unknown section(s) {', '.join(sorted(unknown))}")
    head = _head(raw, fname)
    if set(head) - {"description", "inherit"}:
        raise ProfileError(f"{fname}: profile: unknown key(s) {sorted(set(head) - {'description', 'inherit'})}")
    if not isinstance(head.get("description"), str):
        raise ProfileError(f"{fname}: profile.description: missing (one line saying what machine this is)")
    v = {"profile": {"description": head["description"]}}
    v["core"] = _check_table(f"{fname}: core", raw.get("core", {}), schema.CORE, sources, transfers,
                             optional=("cores_per_socket", "sockets"))
    caches = raw.get("cache", {})
    if not isinstance(caches, dict) or not caches:
        raise ProfileError(f"{fname}: cache: needs at least [cache.l1d]")
    unknown = set(caches) - set(schema.CACHE_LEVELS)
    if unknown:
        raise ProfileError(f"{fname}: cache: unknown level(s) {sorted(unknown)}; levels are "
                           f"{schema.CACHE_LEVELS}")
    names = [n for n in schema.CACHE_LEVELS if n in caches]
    if names != list(schema.CACHE_LEVELS[:len(names)]):
        raise ProfileError(f"{fname}: cache: levels must be a prefix of {schema.CACHE_LEVELS}, "
                           f"got {names}")
    v["cache"] = {}
    for n in names:
        specs = dict(schema.CACHE, **(schema.LLC_EXTRA if n == names[-1] else {}),
                      **(schema.L2_EXTRA if n == schema.CACHE_LEVELS[1] else {}))
        lvl = _check_table(f"{fname}: cache.{n}", caches[n], specs, sources, transfers,
                           optional=schema.LLC_OPTIONAL_KEYS)
        where = f"{fname}: cache.{n}"
        if lvl.get("inclusive") and "directory_ways" in lvl:
            raise ProfileError(f"{where}.directory_ways: an inclusive level's tags are its snoop "
                               "filter (its evictions drop the cores' copies): no directory of "
                               "its own; directory_ways is for a non-inclusive level")
        sets, rem = divmod(lvl["size_bytes"], 64 * lvl["ways"])
        if rem or sets < 1:
            raise ProfileError(f"{where}.size_bytes: {lvl['size_bytes']} is not a whole number of "
                               f"sets of {lvl['ways']} ways x 64 B")
        if lvl["policy"] == "plru" and lvl["ways"] & (lvl["ways"] - 1):
            raise ProfileError(f"{where}.policy: plru needs a power-of-two number of ways, got {lvl['ways']}")
        if n not in schema.CACHE_LEVELS[:2] and lvl["prefetcher"]:
            raise ProfileError(f"{where}.prefetcher: prefetchers are modelled at l1d and l2 "
                               f"only, got {', '.join(lvl['prefetcher'])!r}")
        if {"stream", "streamer"} <= set(lvl["prefetcher"]):
            raise ProfileError(f"{where}.prefetcher: stream and streamer share one table "
                               "(stream is the streamer without descending streams): one of them")
        v["cache"][n] = lvl
    v["instr"] = _check_table(f"{fname}: instr", raw.get("instr", {}), schema.INSTR, sources,
                              transfers)
    v["prefetch"] = _check_table(f"{fname}: prefetch", raw.get("prefetch", {}),
                                 schema.PREFETCH, sources, transfers)
    v["numa"] = _check_table(f"{fname}: numa", raw.get("numa", {}), schema.NUMA, sources, transfers)
    software = raw.get("software", {})
    if not isinstance(software, dict):
        raise ProfileError(f"{fname}: software: must be a table")
    v["software"] = _check_table(f"{fname}: software", software,
                                 dict.fromkeys(software, schema.SOFTWARE_VALUE), sources, transfers)
    media = raw.get("media", {})
    if not isinstance(media, dict) or not media:
        raise ProfileError(f"{fname}: media: needs at least one [media.NAME]")
    v["media"] = {}
    for name, m in media.items():
        kind = m.get("kind") if isinstance(m, dict) else None
        specs = dict(schema.MEDIA, **kind_keys(kind))
        mv = _check_table(f"{fname}: media.{name}", m, specs, sources, transfers)
        for key in mv:   # media move whole lines: a size in bytes is a multiple of 64
            if key.endswith("_bytes") and mv[key] % 64:
                raise ProfileError(f"{fname}: media.{name}.{key}: must be a multiple of 64")
        v["media"][name] = mv
    v["region"] = check_regions(raw.get("region", []), v["media"], f"{fname}: region")
    cut = len(fname) + 2   # "FILE: " before each dotted key
    return (v, {k[cut:]: s for k, s in sources.items()},
            {k[cut:]: m for k, m in transfers.items()})


def check_regions(regions, media, where):
    """The memory map `regions` (a list of region tables: a profile's [[region]], or
    Machine(regions=...)) checked against the region schema (memmodel.profile_schema.REGION),
    with `media` the profile's media names: known keys of the right types, privilege
    "supervisor" unless given, media of the profile, 4 KiB-aligned base and size, unique
    names and no overlap.
    Returns the regions as new dicts; errors name `where`[index].key."""
    if not isinstance(regions, (list, tuple)) or not regions:
        raise ProfileError(f"{where}: needs a list of at least one region")
    specs = dict(schema.REGION, media=(schema.STR, False, tuple(media)))
    out = []
    for i, r in enumerate(regions):
        rv = _check_table(f"{where}[{i}]", r, specs, {}, optional=("privilege",))
        rv.setdefault("privilege", "supervisor")
        for key in ("base", "size_bytes"):
            if rv[key] % 4096:
                raise ProfileError(f"{where}[{i}].{key}: {rv[key]:#x} is not a multiple of "
                                   f"4096 (a page)")
        out.append(rv)
    seen = {}
    for i, r in enumerate(out):
        if r["name"] in seen:
            raise ProfileError(f"{where}[{i}].name: {r['name']!r} is already the name of "
                               f"{where}[{seen[r['name']]}]")
        seen[r["name"]] = i
    for i, r in enumerate(out):
        if r["base"] + r["size_bytes"] > schema.PHYS_LIMIT:
            raise ProfileError(f"{where}[{i}] {r['name']!r}: ends at "
                               f"{r['base'] + r['size_bytes']:#x}, beyond the physical address "
                               f"space [0, {schema.PHYS_LIMIT:#x})")
    total = sum(r["size_bytes"] for r in out)
    if total > schema.MAPPED_BYTES:
        raise ProfileError(f"{where}: the regions map {total:#x} bytes, more than the "
                           f"{schema.MAPPED_BYTES:#x} modelled in all")
    spans = sorted((r["base"], r["base"] + r["size_bytes"], i) for i, r in enumerate(out))
    for (_, e0, i0), (b1, _, i1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise ProfileError(f"{where}[{i0}] {out[i0]['name']!r} and {where}[{i1}] "
                               f"{out[i1]['name']!r} overlap at {b1:#x}")
    return out


def _apply_overrides(raw, overrides, fname):
    if not isinstance(overrides, dict):
        raise ProfileError(f"overrides must be a dict of dotted keys, not {overrides!r}")
    check_depth(overrides, "overrides")
    for dotted, val in overrides.items():
        if not isinstance(dotted, str):
            raise ProfileError(f"{fname}: override {dotted!r}: a key is a dotted string")
        node = raw
        parts = dotted.split(".")
        if len(parts) > MAX_TOML_DEPTH:   # no profile key is this deep; keep the message short
            raise ProfileError(f"{fname}: override {dotted[:60]!r}...: a key of {len(parts)} "
                               f"parts, more than the {MAX_TOML_DEPTH} a profile nests")
        for p in parts[:-1]:
            if not isinstance(node, dict) or p not in node:
                raise ProfileError(f"{fname}: override {dotted!r}: no section {p!r}")
            node = node[p]
        key = parts[-1]
        if not isinstance(node, dict) or key not in node:
            raise ProfileError(f"{fname}: override {dotted!r}: no key {key!r} to override")
        old = node[key]
        if isinstance(old, dict) and "value" in old and not isinstance(val, dict):
            val = {"value": val, "assumption": f"override of {dotted} by the caller"}
        node[key] = val
    return raw


def load_profile(spec, overrides=None):
    """Load a profile from a shipped name, a path to a profile file (a name ending in .toml
    or holding a path separator), or a dict of raw TOML data.

    `overrides` maps dotted keys ("cache.llc.size_bytes") to new values; a bare number
    replacing a sourced one is recorded as an assumption made by the caller.
    """
    if isinstance(spec, Profile):
        if overrides:
            raise ProfileError("overrides apply to a profile name, path or dict, not a loaded Profile")
        return spec
    if isinstance(spec, dict):
        check_depth(spec, "<dict>")   # before deepcopy, which recurses
        raw = copy.deepcopy(spec)
        name = _head(raw, "<dict>").pop("name", "<dict>")
        raw, files = _with_parent(raw, None, [])
        files.append("<dict>")
    else:
        path = _shipped_path(str(spec)) if _is_name(str(spec)) else Path(spec)
        raw, files = _load_raw(path, [])
        name = path.stem
    fname = files[-1]
    if overrides:
        raw = _apply_overrides(raw, overrides, fname)
        fname += " with overrides"   # a bad value may be the caller's, not the file's
    values, sources, transfers = _validate(raw, fname)
    return Profile(name=name, values=values, sources=sources, files=files, transfers=transfers)
