"""Profiles of runs: where the cycles went, why dispatch stalled, and which cachelines
missed, per function, per emitting source line and per region (`emu profile`).

A RunProfile is read from a machine's counters (Machine.run_profile()): its sites' cycles,
events and stall causes (emu.state.SCTR), its regions' misses and 64 B lines read and
written at the media, and its hot-line table (memmodel._hotlines); docs/machine.md,
"Counters", defines every counter. Sites are functions, or with
isa.sourcelines.record_lines() a function and the line of Python that emitted the ops,
"FUNCTION @ FILE:LINE".

`capture()` profiles code that makes its own machines (a scenario): programs made inside
record their lines, every machine made inside keeps a hot-line table, and the profiles of
all of them are summed per label (a scenario's variant, see `label()`).

A site's cycles are partitioned: each stall cause (emu.state.STALL_CAUSES) is time
dispatch waited within the site, `busy` is the rest (issuing uops, fast-string and other
execution time the model charges to dispatch). l1d_pending and llc_pending are not part
of the partition: they are the cycles with a demand miss of the site outstanding
(perf's CYCLE_ACTIVITY.CYCLES_L1D_MISS and CYCLES_L3_MISS), which overlap the rest.
"""
import os
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from emu import frames
from emu import machine as mach
from emu.state import SITE_COUNTER_NAMES, STALL_CAUSES
from isa.sourcelines import LINE_SEP, record_lines
from memmodel._hotlines import HL, HR, N_TAGS
from memmodel.layout import MS
from memmodel.sections.hotlines import table as hot_table

#: Rows of the hot-line table of a machine made inside capture() (a power of two).
DEFAULT_HOT_LINES = 1 << 16
#: Counters of a site, in the order the tables print them.
SITE_KEYS = SITE_COUNTER_NAMES + ("busy",)


@dataclass
class HotLine:
    addr: int           # the line's first byte
    region: str
    l1d_misses: int
    l1d_store_misses: int   # of l1d_misses, those of stores
    llc_misses: int
    miss_cycles: int    # the cycles its L1D misses were outstanding, summed
    sites: list         # the sites that missed on it (the first few; `more` if others did)
    more: bool
    trace_addr: int = None  # a replayed trace's address of the line, if it was remapped


#: What each core's accesses to a shared line did (SharedLine.cores), as perf c2c counts them.
#: hitm: all of them (local and remote); rmt_hitm: of those, the ones from the other socket.
C2C_KEYS = ("loads", "stores", "hitm", "rmt_hitm", "peer_hits", "upgrades")


@dataclass
class SharedLine:
    """A line the cores shared: one row of the c2c report (RunProfile.c2c). Like perf c2c's
    samples (loads of 30 cycles and more), what is counted are the accesses that left a
    core's L1D: its misses and its stores' upgrades; an access that hits a line its core
    holds alone takes no part in the sharing. `cores`: {core: {C2C_KEYS: n, "offsets": the
    bytes of the line where its accesses began, "sites": the sites that made them (the
    first few)}}."""
    addr: int
    region: str
    cores: dict

    def total(self, key):
        return sum(c[key] for c in self.cores.values())

    @property
    def hitm(self):
        """Accesses that found the line modified in another core, on either socket."""
        return self.total("hitm")

    @property
    def rmt_hitm(self):
        """Of the HITMs, those that found it modified in a core of the other socket (perf
        c2c's Rmt HITM)."""
        return self.total("rmt_hitm")

    @property
    def lcl_hitm(self):
        """Of the HITMs, those that found it modified in a core of the same socket (perf
        c2c's Lcl HITM)."""
        return self.hitm - self.rmt_hitm

    @property
    def false_sharing(self):
        """Whether the cores' accesses began at disjoint bytes of the line (more than one
        core, no offset in common): the line bounces for data no two cores share."""
        offsets = [set(c["offsets"]) for c in self.cores.values() if c["offsets"]]
        return len(offsets) > 1 and all(a.isdisjoint(b) for i, a in enumerate(offsets)
                                        for b in offsets[i + 1:])


def split_site(name):
    """(function, file, line) of a site name; file "" and line 0 without a source line."""
    function, sep, where = name.partition(LINE_SEP)
    if not sep:
        return name, "", 0
    file, _, line = where.rpartition(":")
    return function, file, int(line)


@dataclass
class RunProfile:
    """Counters of one or more machines' runs (added up by `+`)."""
    freq_ghz: float
    sites: dict = field(default_factory=dict)       # site name -> {counter: n}
    regions: dict = field(default_factory=dict)     # region -> {counter: n}
    hot: dict = field(default_factory=dict)         # line -> HotLine
    hot_dropped: int = 0    # misses on lines the table had no room for
    machines: int = 1
    units: dict = field(default_factory=dict)   # unit name (e.g. "I/O") -> units run (units())
    shared: dict = field(default_factory=dict)  # line -> SharedLine (c2c())

    @classmethod
    def of(cls, m):
        """The profile of everything machine `m` ran since it was made or last reset_stats."""
        s = m.stats()
        sites = {}
        for name, d in s["sites"].items():
            if d["cycles"] or d["ops"]:
                row = dict(d)
                row["busy"] = d["cycles"] - sum(d[c] for c in STALL_CAUSES)
                row["l1d_read_misses"] = d["l1d_misses"] - d["l1d_store_misses"]
                row["llc_read_misses"] = d["llc_misses"] - d["llc_store_misses"]
                sites[name] = row
        hr = m.layout.view(m.S, "hot_region")
        regions = {}
        for i, name in enumerate(m.region_names):
            d = {"l1d_misses": int(hr[i, HR.L1D_MISSES]),
                 "l1d_store_misses": int(hr[i, HR.STORE_MISSES]),
                 "llc_misses": int(hr[i, HR.LLC_MISSES])}
            d.update(s["regions"][name])   # line_reads, line_writes
            regions[name] = d
        out = cls(m.freq_ghz, sites, regions)
        for k in range(m.cores):   # each core's hot-line table
            S_k = m.core_state(k)
            rows, remote = hot_table(m.layout, S_k)
            one = cls(m.freq_ghz, hot_dropped=int(S_k[MS.HOT_DROPPED]), machines=0)
            for i in np.flatnonzero(rows[:, HL.LINE] >= 0):
                row = rows[i]
                line = int(row[HL.LINE])
                region = _region_of(m, line << 6)
                sites_k = [m.site_names[int(t)] for t in row[HL.TAG0:HL.TAG0 + N_TAGS] if t >= 0]
                if row[HL.L1D_MISSES]:
                    one.hot[line] = HotLine(line << 6, region, int(row[HL.L1D_MISSES]),
                                            int(row[HL.STORE_MISSES]), int(row[HL.LLC_MISSES]),
                                            int(row[HL.MISS_CYCLES]), sites_k,
                                            bool(row[HL.MORE]))
                stores = int(row[HL.STORE_MISSES]) + int(row[HL.UPGRADES])
                one.shared[line] = SharedLine(line << 6, region, {k: {
                    "loads": int(row[HL.L1D_MISSES] - row[HL.STORE_MISSES]), "stores": stores,
                    "hitm": int(row[HL.HITM]),
                    "rmt_hitm": int(remote[i]) if remote is not None else 0,
                    "peer_hits": int(row[HL.PEER_HITS]),
                    "upgrades": int(row[HL.UPGRADES]),
                    "offsets": [b for b in range(64) if int(row[HL.OFFSETS]) >> b & 1],
                    "sites": sites_k}})
            out = out + one
        # a line is shared when its accesses met another core's copy
        out.shared = {line: s for line, s in out.shared.items()
                      if s.hitm or s.total("peer_hits") or s.total("upgrades")}
        return out

    def __add__(self, other):
        out = RunProfile(self.freq_ghz, _sum(self.sites, other.sites),
                      _sum(self.regions, other.regions), dict(self.hot),
                      self.hot_dropped + other.hot_dropped, self.machines + other.machines,
                      {k: self.units.get(k, 0) + other.units.get(k, 0)
                       for k in {**self.units, **other.units}})
        for line, h in other.hot.items():
            if line in out.hot:
                a = out.hot[line]
                sites = a.sites + [n for n in h.sites if n not in a.sites]
                out.hot[line] = HotLine(a.addr, a.region, a.l1d_misses + h.l1d_misses,
                                        a.l1d_store_misses + h.l1d_store_misses,
                                        a.llc_misses + h.llc_misses,
                                        a.miss_cycles + h.miss_cycles, sites[:N_TAGS],
                                        a.more or h.more or len(sites) > N_TAGS)
            else:
                out.hot[line] = h
        out.shared = {line: _merge_shared(self.shared.get(line), other.shared.get(line))
                      for line in {**self.shared, **other.shared}}
        return out

    # ------------------------------------------------------------------ views
    @property
    def cycles(self):
        return sum(d["cycles"] for d in self.sites.values())

    def functions(self):
        """{function: counters} summed over the function's source lines."""
        return _group(self.sites, lambda n: split_site(n)[0])

    def lines(self):
        """{(file, line, function): counters} of the sites with a source line."""
        def key(name):
            function, file, line = split_site(name)
            return file, line, function
        return {k: d for k, d in _group(self.sites, key).items() if k[0]}

    def hot_lines(self, n=10):
        """The `n` lines with the most L1D misses, of equal misses those whose misses were
        outstanding longest (the address only orders lines equal in both)."""
        return sorted(self.hot.values(),
                      key=lambda h: (-h.l1d_misses, -h.miss_cycles, h.addr))[:n]

    def c2c(self, n=10):
        """The `n` lines the cores shared with the most HITM transfers (then the most
        accesses that met another core's copy), as perf c2c's Shared Data Cache Line Table
        orders them: [SharedLine]."""
        def key(s):
            return (-s.hitm, -(s.total("peer_hits") + s.total("upgrades")),
                    -(s.total("loads") + s.total("stores")), s.addr)
        return sorted(self.shared.values(), key=key)[:n]

    def to_frame(self, table="functions"):
        """One table of the profile as a pandas DataFrame (emu.frames), its counters as
        columns: "functions", "sites" or "regions" (one row each, indexed by name), "lines"
        (indexed by file, line, function) or "hot_lines" (every line of the hot-line table
        in hot_lines()'s order, indexed by addr)."""
        if table == "lines":
            f = frames.wide(self.lines(), "line")
            f.index = frames.pandas().MultiIndex.from_tuples(f.index, names=["file", "line",
                                                                             "function"])
            return f
        if table == "hot_lines":
            rows = {h.addr: {k: v for k, v in vars(h).items() if k != "addr"}
                    for h in self.hot_lines(len(self.hot))}
            return frames.wide(rows, "addr")
        named = {"functions": ("function", self.functions), "sites": ("site", lambda: self.sites),
                 "regions": ("region", lambda: self.regions)}
        if table not in named:
            raise ValueError(f"to_frame: no table {table!r} (tables: "
                             f"{', '.join([*named, 'lines', 'hot_lines'])})")
        index, rows = named[table]
        return frames.wide(rows(), index)

    def to_json(self, top=10):
        return {"cycles": self.cycles, "machines": self.machines, "units": self.units,
                "functions": self.functions(),
                "lines": [{"file": f, "line": ln, "function": fn, **d}
                          for (f, ln, fn), d in self.lines().items()],
                "regions": self.regions,
                "hot_lines": [vars(h) for h in self.hot_lines(top)],
                "hot_lines_dropped_misses": self.hot_dropped,
                "c2c": [{"addr": s.addr, "region": s.region, "hitm": s.hitm,
                         "lcl_hitm": s.lcl_hitm, "rmt_hitm": s.rmt_hitm,
                         "false_sharing": s.false_sharing,
                         "cores": {str(k): c for k, c in sorted(s.cores.items())}}
                        for s in self.c2c(top)]}


def _merge_shared(a, b):
    """One SharedLine of two profiles' (either may be None): per core, counts added, offsets
    and sites joined."""
    if a is None or b is None:
        return a or b
    cores = {k: dict(c) for k, c in a.cores.items()}
    for k, c in b.cores.items():
        if k not in cores:
            cores[k] = dict(c)
            continue
        d = cores[k]
        for key in C2C_KEYS:
            d[key] += c[key]
        d["offsets"] = sorted(set(d["offsets"]) | set(c["offsets"]))
        d["sites"] = (d["sites"] + [s for s in c["sites"] if s not in d["sites"]])[:N_TAGS]
    return SharedLine(a.addr, a.region, cores)


def _region_of(m, addr):
    return next((n for n, r in m.regions.items() if r["base"] <= addr < r["base"] + r["size_bytes"]),
                "?")


def _add(out, key, counters):
    """Add `counters` into out[key] (created at zero)."""
    d = out.setdefault(key, dict.fromkeys(counters, 0))
    for c, n in counters.items():
        d[c] = d.get(c, 0) + n


def _sum(a, b):
    out = {k: dict(v) for k, v in a.items()}
    for k, v in b.items():
        _add(out, k, v)
    return out


def _group(sites, key):
    out = {}
    for name, d in sites.items():
        _add(out, key(name), d)
    return out


# ---------------------------------------------------------------------- capture
class _Capture:
    def __init__(self, hot_lines):
        self.hot_lines = hot_lines
        self.label = ""
        self.made = []   # (label, machine)
        self.units = {}  # label -> {unit name: units run}

    def add(self, m):
        self.made.append((self.label, m))

    def profiles(self):
        """{label: RunProfile} of the machines made, summed per label in order of first use."""
        out = {}
        for lab, m in self.made:
            p = m.run_profile()
            out[lab] = out[lab] + p if lab in out else p
        for lab, units in self.units.items():
            if lab in out:
                out[lab].units = dict(units)
        return out


@contextmanager
def capture(hot_lines=DEFAULT_HOT_LINES):
    """`with capture() as c: ...` then c.profiles(): {label: RunProfile} of every machine made
    in the block, with source lines for the programs made in it."""
    c = _Capture(hot_lines)
    mach.OBSERVERS.append(c)
    try:
        with record_lines():
            yield c
    finally:
        mach.OBSERVERS.remove(c)


def label(name):
    """Machines made from now on belong to `name` (a variant) in the active captures."""
    for c in mach.OBSERVERS:
        if isinstance(c, _Capture):
            c.label = name


def units(n, name):
    """`n` units of work (I/Os, packets, copies: `name`) were run by the machines of the
    current label, counted in the active captures (RunProfile.units), so that a report can
    show its counts per unit."""
    for c in mach.OBSERVERS:
        if isinstance(c, _Capture):
            d = c.units.setdefault(c.label, {})
            d[name] = d.get(name, 0) + n


def short_path(path):
    """`path` relative to the working directory when under it, else as given."""
    rel = os.path.relpath(path) if os.path.isabs(path) else path
    return path if rel.startswith("..") else rel
