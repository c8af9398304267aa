"""`emu profile`: a scenario's or a trace's run profile (emu.profiler), as tables, JSON,
a cachegrind.out file for cg_annotate, or plots.

A scenario runs as `emu run` runs it, every variant, under emu.profiler.capture(); each
variant's profile sums its machines' (warm-up runs included). --variant picks the ones
printed. Options go after SCENARIO (argparse gives a subcommand's own defaults priority).
"""
import json

from emu import profiler
from emu.state import STALL_CAUSES
from emu.studies import cachegrind, scenarios, trace_cmd, usercode
from emu.studies.outfiles import check_output_path
from emu.studies.options import (
    CliError,
    add_options,
    machine_options,
    parsed_options,
    plot_figure,
    quiet_option,
    scenario_parsers,
    table,
)
from emu.studies.profile_plots import PLOTS, plot_profiles

# the columns of the per-function and per-line tables: (heading, counter)
EVENTS = (("loads", "loads"), ("stores", "stores"),
          ("L1D rd miss", "l1d_read_misses"), ("L1D wr miss", "l1d_store_misses"),
          ("LLC rd miss", "llc_read_misses"), ("LLC wr miss", "llc_store_misses"),
          ("L1D pend", "l1d_pending"), ("LLC pend", "llc_pending"),
          ("line rd", "line_reads"), ("line wr", "line_writes"))
SHORT = {"window": "window", "store_buffer": "st.buf", "fill_buffer": "fill.buf",
         "dependency": "dep", "fence": "fence", "flush": "flush", "smap": "smap",
         "work": "work", "mispredict": "mispred", "fault": "fault",
         "retire_wait": "retire", "busy": "busy"}


def _counter_table(first, rows, total):
    """rows: [(label, counters)] sorted as given; the stall columns shown are those non-zero
    in some row, so a table has no column of zeros."""
    causes = [c for c in (*STALL_CAUSES, "busy") if any(d[c] for _, d in rows)]
    header = [first, "cycles", "%"] + [SHORT[c] for c in causes] + [h for h, _ in EVENTS]
    body = [[lab, d["cycles"], f"{100 * d['cycles'] / total:.1f}" if total else "-"]
            + [d[c] for c in causes] + [d[k] for _, k in EVENTS] for lab, d in rows]
    return table(header, body)


def text(label, p, top, lines):
    """The report of one RunProfile: functions, source lines, regions, hot lines."""
    total = p.cycles
    out = [(f"{label}: {total} cycles on {p.machines} machine(s); the stall columns partition "
            "each row's cycles (busy: issuing), 'pend' counts cycles a demand miss was "
            "outstanding\n\n")]
    funcs = sorted(p.functions().items(), key=lambda kv: -kv[1]["cycles"])
    out.append(_counter_table("function", funcs, total))
    src = sorted(p.lines().items(), key=lambda kv: (-kv[1]["cycles"], kv[0]))
    if src:
        rows = [(f"{profiler.short_path(f)}:{ln} {fn}", d) for (f, ln, fn), d in src[:lines]]
        more = f" (top {lines} of {len(src)} by cycles)" if len(src) > lines else ""
        out += [f"\nsource lines{more}\n", _counter_table("line", rows, total)]
    out.append("\n")
    out.append(table(["region", "L1D misses", "of stores", "LLC misses", "line reads",
                       "line writes"],
                      [[n, d["l1d_misses"], d["l1d_store_misses"], d["llc_misses"],
                        d["line_reads"], d["line_writes"]]
                       for n, d in p.regions.items()]))
    hot = p.hot_lines(top)
    if hot:
        out.append(f"\nhot lines (top {len(hot)} by L1D misses, then by miss cycles"
                   + (f"; {p.hot_dropped} misses on lines the table had no room for"
                      if p.hot_dropped else "") + ")\n")
        out.append(table(["line", "region", "L1D misses", "of stores", "LLC misses",
                           "miss cycles", "missed at"],
                          [[_line_text(h), h.region, h.l1d_misses, h.l1d_store_misses,
                            h.llc_misses, h.miss_cycles,
                            ", ".join(_site_text(s) for s in h.sites)
                            + (", ..." if h.more else "")] for h in hot]))
    return "".join(out)


def c2c_text(label, p, top):
    """The c2c report of one RunProfile, in the shape of perf c2c's: the Shared Data Cache
    Line Table (a row per line the cores shared, the most HITM first; HITM split, as perf
    c2c's Lcl HITM and Rmt HITM, into those from a core of the same socket and of the
    other), then each line's
    distribution over the cores: what each core's accesses did, where in the line they
    began and which sites made them."""
    lines = p.c2c(top)
    out = [f"{label}: shared data cache lines (top {len(lines)} of {len(p.shared)} by HITM; "
           "counted: accesses that left a core's L1D, misses and stores' upgrades; the "
           "other core of PEER_WRITE/PEER_READ ops is not one of the machine's and is not "
           "listed)\n\n"]
    if not lines:
        return out[0] + "no line was shared between cores\n"
    out.append(table(["#", "line", "region", "HITM", "Lcl HITM", "Rmt HITM", "snoop hits",
                      "upgrades", "loads", "stores", "cores", "false sharing"],
                     [[i, f"{s.addr:#x}", s.region, s.hitm, s.lcl_hitm, s.rmt_hitm,
                       s.total("peer_hits"),
                       s.total("upgrades"), s.total("loads"), s.total("stores"), len(s.cores),
                       "yes" if s.false_sharing else "no"] for i, s in enumerate(lines)]))
    out.append("\nshared cache line distribution\n")
    rows = []
    for i, s in enumerate(lines):
        for k, c in sorted(s.cores.items()):
            rows.append([i, f"{s.addr:#x}", k, ", ".join(f"{o:#x}" for o in c["offsets"]),
                         c["loads"], c["stores"], c["hitm"], c["hitm"] - c["rmt_hitm"],
                         c["rmt_hitm"], c["peer_hits"], c["upgrades"],
                         ", ".join(_site_text(x) for x in c["sites"])])
    out.append(table(["#", "line", "core", "offsets", "loads", "stores", "HITM", "Lcl HITM",
                      "Rmt HITM", "snoop hits", "upgrades", "sites"], rows))
    return "".join(out)


def _line_text(h):
    """A hot line's address: a trace's, then where --map-trace put it."""
    return f"{h.addr:#x}" if h.trace_addr is None else f"{h.trace_addr:#x} ({h.addr:#x})"


def _site_text(name):
    fn, file, line = profiler.split_site(name)
    return f"{fn} ({profiler.short_path(file)}:{line})" if file else fn


def report(title, profiles, args):
    """The command's output for {label: RunProfile}: tables or JSON; --cachegrind and
    --plot write their files first (CliError-free: the caller checked the arguments)."""
    written = []
    if args.cachegrind:
        (label, p), = profiles.items()
        cachegrind.write(args.cachegrind, p, f"cacheline-emu profile: {title} {label}".strip(),
                         " ".join(["emu", *args.argv]))
        written.append(args.cachegrind)
    if args.plot:
        written += plot_profiles(args.plot, title, profiles, args.c2c, args.top)
    if args.json:
        return json.dumps({"title": title, "profiles": {k: p.to_json(args.top)
                                                       for k, p in profiles.items()}},
                          indent=2) + "\n"
    parts = [(c2c_text(f"{title} {k}".strip(), p, args.top) if args.c2c else
              text(f"{title} {k}".strip(), p, args.top, args.lines)) for k, p in profiles.items()]
    return "\n".join(parts) + "".join(f"wrote: {w}\n" for w in written)


def _output_options(parser):
    parser.add_argument("--top", type=int, default=10, metavar="N",
                        help="hot lines (with --c2c: shared lines) shown (default: %(default)s)")
    parser.add_argument("--c2c", action="store_true",
                        help="report the lines the cores shared instead, as perf c2c does: "
                             "HITM transfers, each core's loads, stores and byte offsets, and "
                             "the sites that touched them")
    parser.add_argument("--lines", type=int, default=15, metavar="N",
                        help="source lines shown, the most cycles first (default: %(default)s)")
    parser.add_argument("--cachegrind", metavar="FILE",
                        help="also write the profile as a cachegrind.out file (cg_annotate FILE)")
    parser.add_argument("--plot", metavar="DIR",
                        help="also write DIR/profile-*.png and .svg: cycles per function stacked "
                             "per variant, misses per region (needs matplotlib)")


def configure(parser):
    parser.add_argument("--trace", dest="file", metavar="FILE",
                        help="profile a trace replay (emu trace's options) instead of a scenario")
    trace_cmd.trace_options(parser)
    _output_options(parser)
    for mod, p in scenario_parsers(parser, scenarios.registry(), required=False):
        machine_options(p, mod.DEFAULT_PROFILE)
        quiet_option(p)
        p.add_argument("--variant", choices=list(mod.VARIANTS), metavar="V",
                       help=f"print this variant's profile only (variants: "
                            f"{', '.join(mod.VARIANTS)})")
        _output_options(p)
        add_options(p, mod.OPTIONS)
    parser.epilog = None


def cmd(args):
    if args.scenario and args.file:
        raise CliError("profile a SCENARIO or a --trace FILE, not both")
    if not args.scenario and not args.file:
        raise CliError("name a SCENARIO or a --trace FILE to profile")
    for name in ("top", "lines"):
        if not 1 <= getattr(args, name) <= 10_000:
            raise CliError(f"--{name} {getattr(args, name)}: not in 1..10000")
    # the outputs are checked before the (slow) run; '' is an error, not "no output"
    if args.plot is not None:
        plot_figure(args.plot, PLOTS)
    if args.cachegrind is not None:
        check_output_path(args.cachegrind, "--cachegrind")
    if args.file:
        with profiler.capture() as c:
            _, pages = trace_cmd.run_trace(args)
        profiles = c.profiles()
        if pages:
            usercode.trace_addresses(profiles, pages)
        return report(f"trace {args.file} on {args.profile}", profiles, args)
    mod = scenarios.registry()[args.scenario]
    if args.cachegrind and not args.variant and len(mod.VARIANTS) > 1:
        raise CliError(f"--cachegrind writes one profile: choose one of {mod.NAME}'s variants "
                       f"with --variant ({', '.join(mod.VARIANTS)})")
    with profiler.capture() as c:
        mod.run(parsed_options(args, mod.OPTIONS))
    profiles = c.profiles()
    if args.variant:
        profiles = {args.variant: profiles[args.variant]}
    return report(f"{mod.NAME} on {args.profile}", profiles, args)
