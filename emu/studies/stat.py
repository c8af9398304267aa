"""`--stat` of `emu trace` and `emu run`: a summary in the manner of `perf stat`.

Read from the counters the emulator keeps (docs/machine.md, "Counters"): the sites' ops,
cycles, L1D accesses and stall causes (stats()["sites"], RunProfile.sites), and the misses
per level (stats()["levels"], where a machine is at hand; else the sites' L1D and LLC
demand misses). Ops per cycle is the emulator's ops (a copy or a flush of a range is one
op), not instructions; "per kilo-op" is per 1000 of those ops.
"""
from emu import profiler
from emu.state import STALL_CAUSES
from emu.studies.options import CliError

_SUMMED = ("cycles", "ops", "loads", "stores", "l1d_misses", "llc_misses", "l1d_store_misses",
           "llc_store_misses", "line_reads", "line_writes", *STALL_CAUSES)


def add_option(parser):
    parser.add_argument("--stat", action="store_true",
                        help="also print a perf-stat-like summary: ops, cycles, ops per cycle, "
                             "misses per level per kilo-op, stall cycles by cause")


def summary(sites, levels=None):
    """The summary of `sites` ({site: counters}, summed): ops, cycles, ops_per_cycle, loads,
    stores, misses per level ({level: {"misses", "store_misses", "per_kilo_op"}}: of
    `levels`, a stats()["levels"], if given, else the sites' L1D and LLC demand misses), 64 B
    lines read and written at the media, and stall cycles per cause with `busy` the rest."""
    tot = dict.fromkeys(_SUMMED, 0)
    for d in sites.values():
        for k in _SUMMED:
            tot[k] += d[k]
    ops, cycles = tot["ops"], tot["cycles"]
    per_kop = (lambda n: 1000 * n / ops) if ops else (lambda n: None)
    if levels is None:
        levels = {"l1d": {"misses": tot["l1d_misses"], "store_misses": tot["l1d_store_misses"]},
                  "llc": {"misses": tot["llc_misses"], "store_misses": tot["llc_store_misses"]}}
    misses = {n: {"misses": d["misses"], "store_misses": d["store_misses"],
                  "per_kilo_op": per_kop(d["misses"])} for n, d in levels.items()}
    stalls = {c: tot[c] for c in STALL_CAUSES}
    stalls["busy"] = cycles - sum(stalls.values())
    return {"ops": ops, "cycles": cycles, "ops_per_cycle": ops / cycles if cycles else None,
            "loads": tot["loads"], "stores": tot["stores"], "misses": misses,
            "line_reads": tot["line_reads"], "line_writes": tot["line_writes"],
            "stalls": stalls}


def of_machine(m):
    """The summary of everything machine `m` ran (since it was made or reset_stats())."""
    s = m.stats()
    return summary(s["sites"], s["levels"])


def plain_run(mod, opts):
    """(the result of scenario `mod` run once with `opts`, {variant: summary}): its machines
    watched through emu.profiler.capture (which changes no result), summed per variant."""
    with profiler.capture(hot_lines=0) as c:
        result = mod.run(opts)
    return result, {label or "run": summary(p.sites) for label, p in c.profiles().items()}


def check_args(args):
    if getattr(args, "stat", False) and getattr(args, "sensitivity", None):
        raise CliError("--stat summarises the profile's own run; --sensitivity runs the "
                       "study again with other values: give one of them")


def _n(x):
    return f"{x:,}"


def text(title, s):
    """The summary `s` as perf stat prints its counters: a value, its name, a ratio."""
    rows = [(_n(s["ops"]), "ops", ""),
            (_n(s["cycles"]), "cycles", "" if s["ops_per_cycle"] is None
             else f"{s['ops_per_cycle']:.4g} ops per cycle"),
            (_n(s["loads"]), "L1D loads", ""), (_n(s["stores"]), "L1D stores", "")]
    for n, d in s["misses"].items():
        ratio = "" if d["per_kilo_op"] is None else f"{d['per_kilo_op']:.2f} per kilo-op"
        rows.append((_n(d["misses"]), f"{n} misses", ratio))
    rows += [(_n(s["line_reads"]), "line reads (media)", ""),
             (_n(s["line_writes"]), "line writes (media)", "")]
    for c, n in s["stalls"].items():
        if n or c == "busy":
            share = f"{100 * n / s['cycles']:.1f} % of cycles" if s["cycles"] else ""
            rows.append((_n(n), "busy cycles" if c == "busy" else f"stall cycles: {c}", share))
    w0, w1 = max(len(r[0]) for r in rows), max(len(r[1]) for r in rows)
    body = "".join((f"  {v:>{w0}}  {name:<{w1}}" + (f"  # {r}" if r else "")).rstrip() + "\n"
                   for v, name, r in rows)
    return f"\n stat of {title}:\n\n{body}"
