"""Latency profiles: strict TOML loading, `inherit`, overrides and sources.

A profile is a TOML file. Every number that shapes timing is written as an inline table
with its provenance, `{ value = 4, source = "[ILX] NewMemLat" }`, or, where no source gives
it, `{ value = 2, assumption = "why this value" }`. Strings and booleans are plain.
Unknown sections or keys, missing keys, wrong types and out-of-range values raise
ProfileError naming the file and the key.
"""
import copy
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from memmodel.media import KIND_IDS, PERSISTENCE, kind_keys
from memmodel.policies import POLICY_IDS
from memmodel.prefetch import PREFETCHER_IDS

CACHE_LEVELS = ("l1d", "l2", "llc")
PRIVILEGE = ("user", "supervisor")
CPU_FEATURES = ("erms", "fsrm", "clflushopt", "clwb", "avx2", "avx512f", "smap")


class ProfileError(ValueError):
    """A profile that cannot be used; the message names file, key and problem."""


# (type, sourced, minimum) per key; sourced numbers need value + source/assumption. The
# media kinds' own keys (memmodel.media.KINDS) spell the types as these strings.
_NUM = "num"
_INT = "int"
_STR = "str"
_BOOL = "bool"
_LIST = "list"   # of strings from an allowed set

_CORE = {
    "freq_ghz": (_NUM, True, 0.1),
    "rob_entries": (_INT, True, 1),
    "store_buffer_entries": (_INT, True, 1),
    "lfb_entries": (_INT, True, 1),
    "wc_buffers": (_INT, True, 1),
    "uops_per_cycle": (_INT, True, 1),
    "store_commit_cycles": (_INT, True, 1),
    # CPUID features that pick code paths (PMDK's flush/memcpy choice, rep movsb, SMAP)
    "cpu_features": (_LIST, False, CPU_FEATURES),
}
_CACHE = {
    "size_bytes": (_INT, True, 64),
    "ways": (_INT, True, 1),
    "hit_cycles": (_INT, True, 1),
    "policy": (_STR, False, POLICY_IDS),
    "prefetcher": (_STR, False, PREFETCHER_IDS),
}
_LLC_EXTRA = {"inclusive": (_BOOL, False, None), "peer_hitm_ns": (_NUM, True, 0)}
_INSTR = {
    "lfence_cycles": (_INT, True, 0),
    "sfence_cycles": (_INT, True, 0),
    "mfence_cycles": (_INT, True, 0),
    "clflush_cycles": (_INT, True, 0),
    "clflushopt_cycles": (_INT, True, 0),
    "clwb_cycles": (_INT, True, 0),
    "stac_cycles": (_INT, True, 0),
    "clac_cycles": (_INT, True, 0),
    "movnt_cycles": (_INT, True, 0),
    "rep_movsb_startup_cycles": (_INT, True, 0),
    "rep_movsb_bytes_per_cycle": (_NUM, True, 1),
    "rep_movsb_nrfo_threshold_bytes": (_INT, True, 0),
    "branch_mispredict_cycles": (_INT, True, 0),
    "branch_resolve_cycles": (_INT, True, 0),
    "index_mask_cycles": (_INT, True, 0),
    "div64_cycles": (_INT, True, 0),
    "fault_fixup_cycles": (_INT, True, 0),
    "machine_check_cycles": (_INT, True, 0),
}
_PREFETCH = {
    "stream_distance_lines": (_INT, True, 1),
    "stream_degree_lines": (_INT, True, 1),
    "stream_entries": (_INT, True, 1),
}
_NUMA = {
    "remote_latency_ns": (_NUM, True, 0),
    "remote_bw_gbps": (_NUM, True, 0.001),
}
_MEDIA = {
    "kind": (_STR, False, KIND_IDS),
    "read_latency_ns": (_NUM, True, 0),
    "write_accept_ns": (_NUM, True, 0),
    "read_bw_gbps": (_NUM, True, 0.001),
    "write_bw_gbps": (_NUM, True, 0.001),
    "channels": (_INT, True, 1),
    "interleave_bytes": (_INT, True, 64),
    "wpq_entries": (_INT, True, 1),
    "persistence": (_STR, False, PERSISTENCE),
    "reads_wait_for_writes": (_BOOL, False, None),
}
# Work the emulator does not model, declared per operation (docs/design.md "Honesty rules"):
# scenarios emit these as WORK ops, the same for every variant.
_SOFTWARE = {
    "syscall_entry_exit_ns": (_NUM, True, 0),
    "vfs_read_ns": (_NUM, True, 0),
    "vfs_write_ns": (_NUM, True, 0),
    "fs_read_iter_ns": (_NUM, True, 0),
    "fs_write_iter_ns": (_NUM, True, 0),
    "vhost_net_tx_ns": (_NUM, True, 0),
    "tun_xdp_ns": (_NUM, True, 0),
    "dma_pool_call_ns": (_NUM, True, 0),
}
_REGION = {
    "name": (_STR, False, None),
    "base": (_INT, False, 0),
    "size_bytes": (_INT, False, 4096),
    "media": (_STR, False, None),
    "node": (_INT, False, 0),
    "privilege": (_STR, False, PRIVILEGE),
}
_TOP = ("profile", "core", "cache", "instr", "prefetch", "numa", "software", "media", "region")


@dataclass
class Profile:
    """A resolved profile: plain values, the source of each, and the chain of files."""
    name: str
    values: dict
    sources: dict = field(default_factory=dict)
    files: list = field(default_factory=list)

    def get(self, dotted):
        node = self.values
        for part in dotted.split("."):
            node = node[part]
        return node


def shipped_profiles():
    """Names of the profiles shipped in memmodel/profiles/."""
    root = resources.files("memmodel") / "profiles"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def _shipped_path(name):
    path = resources.files("memmodel") / "profiles" / f"{name}.toml"
    if not path.is_file():
        raise ProfileError(f"no shipped profile named {name!r}; shipped: {', '.join(shipped_profiles())}")
    return Path(str(path))


def _read_toml(path):
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such profile file") from None
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"{path}: not valid TOML: {e}") from None


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
    being read (relative .toml parents are found beside it) or None for a dict.
    Returns (raw, the parent files, root first)."""
    parent = raw.get("profile", {}).get("inherit")
    if parent is None:
        return raw, []
    if not isinstance(parent, str):
        raise ProfileError(f"{here or '<dict>'}: profile.inherit: must be a profile name or path")
    if parent.endswith(".toml"):
        ppath = Path(parent)
        if not ppath.is_absolute() and here is not None:
            ppath = Path(here).parent / ppath
    else:
        ppath = _shipped_path(parent)
    base, files = _load_raw(ppath, chain)
    raw = _merge(base, raw)
    raw["profile"].pop("inherit", None)
    return raw, files


def _load_raw(path, chain):
    if str(path) in chain:
        raise ProfileError(f"{path}: inherit cycle through {' -> '.join(chain)}")
    raw, files = _with_parent(_read_toml(path), path, chain + [str(path)])
    return raw, files + [str(path)]


def _check_value(where, key, spec, raw, sources):
    kind, sourced, limit = spec
    if sourced:
        if not isinstance(raw, dict):
            raise ProfileError(f"{where}.{key}: a timing number needs a provenance, write "
                               f"{{ value = {raw!r}, source = \"...\" }} or an assumption")
        extra = set(raw) - {"value", "source", "assumption"}
        if extra:
            raise ProfileError(f"{where}.{key}: unknown field(s) {sorted(extra)}")
        if "value" not in raw:
            raise ProfileError(f"{where}.{key}: missing 'value'")
        prov = raw.get("source") or raw.get("assumption")
        if not isinstance(prov, str) or not prov.strip():
            raise ProfileError(f"{where}.{key}: needs a non-empty 'source' or 'assumption'")
        sources[f"{where}.{key}"] = ("assumption: " if "assumption" in raw else "") + prov
        val = raw["value"]
    else:
        val = raw
    if kind == _INT:
        if isinstance(val, bool) or not isinstance(val, int):
            raise ProfileError(f"{where}.{key}: must be an integer, got {val!r}")
        if limit is not None and val < limit:
            raise ProfileError(f"{where}.{key}: must be >= {limit}, got {val}")
    elif kind == _NUM:
        if isinstance(val, bool) or not isinstance(val, (int, float)):
            raise ProfileError(f"{where}.{key}: must be a number, got {val!r}")
        if val < limit:
            raise ProfileError(f"{where}.{key}: must be >= {limit}, got {val}")
        val = float(val)
    elif kind == _BOOL:
        if not isinstance(val, bool):
            raise ProfileError(f"{where}.{key}: must be true or false, got {val!r}")
    elif kind == _LIST:
        if not isinstance(val, list) or not all(isinstance(x, str) for x in val):
            raise ProfileError(f"{where}.{key}: must be a list of strings, got {val!r}")
        bad = [x for x in val if x not in limit]
        if bad:
            raise ProfileError(f"{where}.{key}: unknown {bad}; known: {', '.join(limit)}")
    elif kind == _STR:
        if not isinstance(val, str):
            raise ProfileError(f"{where}.{key}: must be a string, got {val!r}")
        if limit is not None and val not in limit:
            raise ProfileError(f"{where}.{key}: {val!r} is not one of {', '.join(map(repr, limit))}")
    else:
        raise TypeError(f"{where}.{key}: the schema names no known type ({kind!r})")
    return val


def _check_table(where, table, schema, sources, optional=()):
    if not isinstance(table, dict):
        raise ProfileError(f"{where}: must be a table")
    unknown = sorted(set(table) - set(schema))
    if unknown:
        raise ProfileError(f"{where}.{unknown[0]}: unknown key (known: {', '.join(schema)})")
    out = {}
    for key, spec in schema.items():
        if key not in table:
            if key in optional:
                continue
            raise ProfileError(f"{where}.{key}: missing")
        out[key] = _check_value(where, key, spec, table[key], sources)
    return out


def _validate(raw, fname):
    sources = {}
    unknown = set(raw) - set(_TOP)
    if unknown:
        raise ProfileError(f"{fname}: unknown section(s) {', '.join(sorted(unknown))}")
    head = raw.get("profile", {})
    if set(head) - {"description", "inherit"}:
        raise ProfileError(f"{fname}: profile: unknown key(s) {sorted(set(head) - {'description', 'inherit'})}")
    if not isinstance(head.get("description"), str):
        raise ProfileError(f"{fname}: profile.description: missing (one line saying what machine this is)")
    v = {"profile": {"description": head["description"]}}
    v["core"] = _check_table(f"{fname}: core", raw.get("core", {}), _CORE, sources)
    caches = raw.get("cache", {})
    if not isinstance(caches, dict) or not caches:
        raise ProfileError(f"{fname}: cache: needs at least [cache.l1d]")
    unknown = set(caches) - set(CACHE_LEVELS)
    if unknown:
        raise ProfileError(f"{fname}: cache: unknown level(s) {sorted(unknown)}; levels are {CACHE_LEVELS}")
    names = [n for n in CACHE_LEVELS if n in caches]
    if names != list(CACHE_LEVELS[:len(names)]):
        raise ProfileError(f"{fname}: cache: levels must be a prefix of {CACHE_LEVELS}, got {names}")
    v["cache"] = {}
    for n in names:
        schema = dict(_CACHE, **_LLC_EXTRA) if n == names[-1] else _CACHE
        lvl = _check_table(f"{fname}: cache.{n}", caches[n], schema, sources)
        where = f"{fname}: cache.{n}"
        sets, rem = divmod(lvl["size_bytes"], 64 * lvl["ways"])
        if rem or sets < 1:
            raise ProfileError(f"{where}.size_bytes: {lvl['size_bytes']} is not a whole number of "
                               f"sets of {lvl['ways']} ways x 64 B")
        if lvl["policy"] == "plru" and lvl["ways"] & (lvl["ways"] - 1):
            raise ProfileError(f"{where}.policy: plru needs a power-of-two number of ways, got {lvl['ways']}")
        v["cache"][n] = lvl
    v["instr"] = _check_table(f"{fname}: instr", raw.get("instr", {}), _INSTR, sources)
    v["prefetch"] = _check_table(f"{fname}: prefetch", raw.get("prefetch", {}), _PREFETCH, sources)
    v["numa"] = _check_table(f"{fname}: numa", raw.get("numa", {}), _NUMA, sources)
    v["software"] = _check_table(f"{fname}: software", raw.get("software", {}), _SOFTWARE, sources)
    media = raw.get("media", {})
    if not isinstance(media, dict) or not media:
        raise ProfileError(f"{fname}: media: needs at least one [media.NAME]")
    v["media"] = {}
    for name, m in media.items():
        kind = m.get("kind") if isinstance(m, dict) else None
        schema = dict(_MEDIA, **kind_keys(kind))
        mv = _check_table(f"{fname}: media.{name}", m, schema, sources)
        for key in mv:   # media move whole lines: a size in bytes is a multiple of 64
            if key.endswith("_bytes") and mv[key] % 64:
                raise ProfileError(f"{fname}: media.{name}.{key}: must be a multiple of 64")
        v["media"][name] = mv
    v["region"] = check_regions(raw.get("region", []), v["media"], f"{fname}: region")
    return v, {k[len(fname) + 2:]: s for k, s in sources.items()}


def check_regions(regions, media, where):
    """The memory map `regions` (a list of region tables: a profile's [[region]], or
    Machine(regions=...)) checked against the _REGION schema, with `media` the profile's
    media names: known keys of the right types, privilege "supervisor" unless given,
    media of the profile, 4 KiB-aligned base and size, unique names and no overlap.
    Returns the regions as new dicts; errors name `where`[index].key."""
    if not isinstance(regions, (list, tuple)) or not regions:
        raise ProfileError(f"{where}: needs a list of at least one region")
    schema = dict(_REGION, media=(_STR, False, tuple(media)))
    out = []
    for i, r in enumerate(regions):
        rv = _check_table(f"{where}[{i}]", r, schema, {}, optional=("privilege",))
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
    spans = sorted((r["base"], r["base"] + r["size_bytes"], i) for i, r in enumerate(out))
    for (_, e0, i0), (b1, _, i1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise ProfileError(f"{where}[{i0}] {out[i0]['name']!r} and {where}[{i1}] "
                               f"{out[i1]['name']!r} overlap at {b1:#x}")
    return out


def _apply_overrides(raw, overrides, fname):
    for dotted, val in overrides.items():
        node = raw
        parts = dotted.split(".")
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
    """Load a profile from a shipped name, a path to a .toml file, or a dict of raw TOML data.

    `overrides` maps dotted keys ("cache.llc.size_bytes") to new values; a bare number
    replacing a sourced one is recorded as an assumption made by the caller.
    """
    if isinstance(spec, Profile):
        if overrides:
            raise ProfileError("overrides apply to a profile name, path or dict, not a loaded Profile")
        return spec
    if isinstance(spec, dict):
        raw = copy.deepcopy(spec)
        name = raw.get("profile", {}).pop("name", "<dict>")
        raw, files = _with_parent(raw, None, [])
        files.append("<dict>")
    else:
        path = Path(spec) if str(spec).endswith(".toml") else _shipped_path(str(spec))
        raw, files = _load_raw(path, [])
        name = path.stem
    fname = files[-1]
    if overrides:
        raw = _apply_overrides(raw, overrides, fname)
    values, sources = _validate(raw, fname)
    return Profile(name=name, values=values, sources=sources, files=files)
