"""Scenario `page-counter`: false sharing of struct page_counter's `usage` and `parent`
(commit 802f1d522d5f, v5.12), on will-it-scale page_fault2's memcg accounting.

`--cores` processes, one per core, all in one memory cgroup (`--depth` levels counting the
root's), fault in the pages of a private file mapping and unmap them (will-it-scale
tests/page_fault2.c). Per iteration, one batch of MEMCG_CHARGE_BATCH = 32 pages of a core,
the memcg accounting that touches shared lines is emitted (kernels/page_counter.py,
kernels/memcontrol.py): the per-CPU charge stock's refill, page_counter_try_charge of 32
pages up the hierarchy (a locked add on each level's `usage`, reads of `max`, `parent`,
the protection fields and `watermark`); `--stat-walks` statistics flushes, each a locked add
to a statistic of every level found with parent_mem_cgroup, which reads
`memcg->memory.parent`; and the uncharge of 32 pages (page_counter_uncharge). The events are
spread evenly over the batch's 32 pages; the rest of each page's fault and unmap is the
declared cost [software] page_fault2_page_ns, the same in every variant. Variants:
`layout=before` (v5.11: `parent` at byte 40, in `usage`'s line) and `layout=after` (the
commit's: `parent` at byte 104, the struct's second line). Metric `per_process_ops`: pages
per second per core, what will-it-scale.per_process_ops counts; the published figure
(docs/scenarios.md §6) is the change after / before on 2- and 4-socket machines, which the
table compares with the emulated one.

Assumed (docs/scenarios.md §6): the statistics flushed per 32 pages (--stat-walks), the
hierarchy's depth, where the counter falls in its line (--counter-offset), the mapping and
unmapping phases of page_fault2 folded into each batch (its uncharges come in munmap's
batches). `--sockets 2` spreads the processes over two sockets (the published machine A's
48 processes: `--cores 48 --sockets 2`), the memory cgroups in node 0's memory.
"""
from emu import profiler
from emu.machine import Machine
from emu.studies import published
from emu.studies.costs import NS, load_profile
from emu.studies.options import Option, OptionError
from emu.studies.progress import progress
from isa import Program
from kernels import memcontrol, page_counter
from memmodel.profile import ProfileError

NAME = "page-counter"
DEFAULT_PROFILE = "cascadelake-optane"
VARIANTS = tuple(f"layout={k}" for k in page_counter.LAYOUTS)
METRIC = "per_process_ops"
# a page's fault and unmap besides the memcg accounting modelled, declared (emu.studies.costs)
COSTS = {"page_fault2_page_ns": NS}
SENSITIVE = ("software.page_fault2_page_ns", "cache.llc.peer_hitm_ns",
             "cache.llc.peer_hit_ns", "cache.llc.remote_hitm_ns", "cache.llc.remote_hit_ns",
             "instr.lock_rmw_cycles", "core.freq_ghz")
PAGES = memcontrol.MEMCG_CHARGE_BATCH
# The statistics flushes of 32 pages mapped and unmapped (v5.11 memcontrol.c: a per-CPU
# delta flushes past MEMCG_CHARGE_BATCH, so once per ~32 updates of one sign), as
# (statistic slot, phase): NR_ANON_MAPPED and the anon LRU size each flush once while
# mapping and once while unmapping, in the memcg (slots 0, 1) and in its per-node
# lruvec (slots 8, 9); the PGFAULT and PGPGIN events once (slots 2, 3). Read: PGPGIN per
# charged page (mem_cgroup_charge_statistics) and the events' flush walk (__count_memcg_events);
# recalled, not read: the rmap and LRU callers and PGFAULT's. PGPGOUT flushes once per munmap
# uncharge batch (uncharge_batch), a gather of many pages: left out.
STAT_FLUSHES = ((0, "map"), (8, "map"), (1, "map"), (9, "map"), (2, "map"), (3, "map"),
                (0, "unmap"), (8, "unmap"), (1, "unmap"), (9, "unmap"))
MAX_ITERATIONS = 2000

OPTIONS = (
    Option("cores", int, 8, "processes, one per core, at most --sockets x the profile's "
                            "core.cores_per_socket (default: %(default)s; the published runs "
                            "had 48 to 144 on 2 and 4 sockets)", low=2, high=64),
    Option("sockets", int, 1, "sockets the processes are spread over, cores/sockets on each "
                              "(default: %(default)s; the published: 2 and 4)",
           choices=(1, 2)),
    Option("iterations", int, 50, f"measured batches of {PAGES} pages per core, after one "
                                  f"unmeasured, at most {MAX_ITERATIONS} (default: "
                                  f"%(default)s)", low=1, high=MAX_ITERATIONS),
    Option("depth", int, 3, "memory cgroups charged, the benchmark's and its ancestors' up to "
                            "the root's (default: %(default)s, assumed: a systemd service's "
                            "cgroup under system.slice)", low=1, high=16),
    Option("stat_walks", int, len(STAT_FLUSHES),
           f"statistics flushes per batch, the first of the {len(STAT_FLUSHES)} this study "
           f"derives (default: all; 0: only the counters' own walks read `parent`)",
           low=0, high=len(STAT_FLUSHES)),
    Option("counter_offset", int, 0, "byte offset of memcg->memory within its cache line "
                                     "(default: %(default)s, assumed)",
           choices=tuple(range(0, 64, 8))),
)


def kernel_base(m):
    """The first supervisor DRAM region of node 0: where the memory cgroups live."""
    for r in sorted(m.regions.values(), key=lambda r: r["base"]):
        if r["privilege"] == "supervisor" and r["node"] == 0 and \
                m.profile.values["media"][r["media"]]["persistence"] == "none":
            return r["base"]
    raise ProfileError(f"profile {m.profile.name!r} has no supervisor DRAM region on node 0")


def batch(p, leaf, page_cycles, stat_walks):
    """One batch of PAGES pages of one process: per page its declared work, and between the
    pages, spread evenly, the stock refill's try_charge, the statistics flushes of the
    mapping phase, the uncharge and those of the unmapping phase."""
    events = [("charge", None)] + [("flush", s) for s, ph in STAT_FLUSHES[:stat_walks]
                                   if ph == "map"]
    events += [("uncharge", None)] + [("flush", s) for s, ph in STAT_FLUSHES[:stat_walks]
                                      if ph == "unmap"]
    at = {round(k * PAGES / len(events)): e for k, e in enumerate(events)}
    for page in range(PAGES):
        kind, slot = at.get(page, (None, None))
        if kind == "charge":
            page_counter.page_counter_try_charge(p, leaf.memory, PAGES)
        elif kind == "uncharge":
            page_counter.page_counter_uncharge(p, leaf.memory, PAGES)
        elif kind == "flush":
            memcontrol.mod_memcg_state(p, leaf, slot)
        with p.function("page_fault2 (declared)"):
            p.work(page_cycles)
    return p


def build(profile, overrides, layout, cores, depth, counter_offset=0, hot_lines=None,
          sockets=1):
    """(machine, the benchmark's memcg) for `layout`."""
    m = Machine(profile, overrides or None, cores=cores, sockets=sockets, hot_lines=hot_lines)
    leaf = memcontrol.hierarchy(kernel_base(m), depth, layout, counter_offset)
    return m, leaf


def programs(m, leaf, iterations, stat_walks):
    page_cycles = round(m.profile.values["software"]["page_fault2_page_ns"] * m.freq_ghz)
    out = []
    for _ in range(m.cores):
        p = Program()
        for _ in range(iterations):
            batch(p, leaf, page_cycles, stat_walks)
        out.append(p)
    return out


def transfers(m):
    """HITM transfers, clean snoop hits and upgrades of shared copies so far, summed over
    the cores, and of the HITMs those the other socket served."""
    s = m.stats()
    cores = s["cores"]
    return (sum(c["levels"]["llc"]["peer_transfers"] for c in cores),
            sum(c["levels"]["llc"]["peer_hits"] for c in cores),
            sum(c["levels"]["l1d"]["peer_upgrades"] for c in cores),
            s.get("remote", {}).get("remote_hitm", 0))   # with two sockets only


def run_variant(profile, overrides, variant, cores, iterations, depth, stat_walks,
                counter_offset, sockets=1):
    profiler.label(variant)
    layout = variant.split("=")[1]
    m, leaf = build(profile, overrides, layout, cores, depth, counter_offset, sockets=sockets)
    m.run(programs(m, leaf, 1, stat_walks))             # warm: every line once in a cache
    before = transfers(m)
    profiler.units(cores * iterations * PAGES, "page")
    r = m.run(programs(m, leaf, iterations, stat_walks))
    hitm, hit, upgrades, remote = (a - b for a, b in zip(transfers(m), before))
    per_core = [iterations * PAGES / c.seconds for c in r.cores]
    batches = cores * iterations
    return {"per_process_ops": sum(per_core) / cores, "per_core_ops": per_core,
            "ns_per_page": 1e9 / (sum(per_core) / cores),
            "hitm_per_batch": hitm / batches, "snoop_hits_per_batch": hit / batches,
            "upgrades_per_batch": upgrades / batches, "remote_hitm_per_batch": remote / batches}


def run(options):
    profile = options.profile or DEFAULT_PROFILE
    overrides = dict(options.overrides)
    core = load_profile(profile, overrides or None).values["core"]
    most, sockets = core.get("cores_per_socket", 1), options.sockets
    if sockets > core.get("sockets", 1):
        raise OptionError(f"{NAME}: option sockets: profile {profile!r} has "
                          f"{core.get('sockets', 1)} (core.sockets)")
    if options.cores % sockets or options.cores // sockets > most:
        raise OptionError(f"{NAME}: option cores: {options.cores} is not {sockets} socket(s) of "
                          f"at most {most} cores each (profile {profile!r}'s "
                          f"core.cores_per_socket), the same number on each")
    variants = {v: run_variant(profile, overrides, v, options.cores, options.iterations,
                               options.depth, options.stat_walks, options.counter_offset,
                               sockets)
                for v in progress(VARIANTS, NAME, options.progress)}
    return {"scenario": NAME, "profile": profile, "cores": options.cores, "sockets": sockets,
            "iterations": options.iterations, "depth": options.depth,
            "stat_walks": options.stat_walks, "counter_offset": options.counter_offset,
            "variants": variants,
            "published": published.check(NAME, profile, options,
                                          {v: d[METRIC] for v, d in variants.items()})}


def table(res):
    v, pub = res["variants"], res["published"]
    lines = [f"page-counter on {res['profile']}: {res['cores']} cores on {res.get('sockets', 1)} "
             f"socket(s) x {res['iterations']} "
             f"batches of {PAGES} pages, {res['depth']} cgroup levels, {res['stat_walks']} "
             f"statistics flushes a batch, counter at byte {res['counter_offset']} of its line",
             f"{'variant':<16}{'pages/s/core':>14}{'published':>11}{'ratio':>7}{'status':>8}"
             f"{'ns/page':>9}{'HITM/batch':>12}{'of them remote':>16}{'snoop hits/batch':>18}"
             f"{'upgrades/batch':>16}"]
    for name, d in v.items():
        p, ratio, st = published.cells(pub, name, METRIC, ".0f")
        lines.append(f"{name:<16}{d[METRIC]:>14.0f}{p:>11}{ratio:>7}{st:>8}"
                     f"{d['ns_per_page']:>9.1f}{d['hitm_per_batch']:>12.1f}"
                     f"{d['remote_hitm_per_batch']:>16.1f}"
                     f"{d['snoop_hits_per_batch']:>18.1f}{d['upgrades_per_batch']:>16.1f}")
    lines += published.notes(NAME, pub)
    figures = [pub[f"layout={k}"][METRIC]["published"] for k in page_counter.LAYOUTS]
    change = v["layout=after"][METRIC] / v["layout=before"][METRIC] - 1
    lines.append(f"after / before: emulated {change:+.2%} "
                 f"on {res.get('sockets', 1)} socket(s), published {figures[1] / figures[0] - 1:+.1%} "
                 f"(48 processes, 2 "
                 f"sockets; docs/scenarios.md §6 gives the other rows)")
    return "\n".join(lines) + "\n"
