"""`emu profile --plot DIR`: profile-cycles (each variant's cycles per function, stacked) and
profile-regions (its demand misses per region), both per unit of the study's work (I/O,
packet, copy: emu.profiler.units) where every variant counted the same unit, else totals;
with --c2c, profile-c2c: where in each shared line each core's accesses began."""
from emu.studies import plots

PLOTS = ("profile-cycles", "profile-regions", "profile-c2c")   # the basenames of --plot's files


def per_unit(profiles):
    """(unit name, {label: units run}) when every profile counted units of one name, else
    (None, {label: 1})."""
    names = {tuple(p.units) for p in profiles.values()}
    if len(names) == 1 and len(next(iter(names))) == 1:
        (unit,) = next(iter(names))
        if all(p.units[unit] > 0 for p in profiles.values()):
            return unit, {k: p.units[unit] for k, p in profiles.items()}
    return None, dict.fromkeys(profiles, 1)


def plot_c2c(title, profiles, top):
    """profile-c2c: a panel per variant, a row per shared line (the most HITM first), a
    mark at each byte offset where a core's accesses began, a colour per core: two cores'
    marks on one row at different offsets are false sharing."""
    fig = plots.figure(width_in=8.0, height_in=1.5 + 1.5 * len(profiles))
    for i, (label, p) in enumerate(profiles.items()):
        ax = fig.add_subplot(len(profiles), 1, i + 1)
        lines = p.c2c(top)
        cores = sorted({k for s in lines for k in s.cores})
        for k in cores:
            pts = [(o, row) for row, s in enumerate(lines) for o in s.cores.get(k, {}).get(
                "offsets", [])]
            ax.scatter([o + 0.15 * (k - (len(cores) - 1) / 2) for o, _ in pts],
                       [r for _, r in pts], label=f"core {k}", marker="s", s=25)
        ax.set_yticks(range(len(lines)), [f"{s.addr:#x} ({s.hitm} HITM" + (
            f": {s.lcl_hitm} Lcl, {s.rmt_hitm} Rmt)" if s.rmt_hitm else ")") for s in lines])
        ax.invert_yaxis()
        ax.set_xlim(-1, 64)
        ax.set_xlabel("byte offset in the line")
        ax.set_title(f"{title} {label}: where each core's accesses began".replace("  ", " "))
        if cores:
            ax.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    return fig


def plot_profiles(directory, title, profiles, c2c=False, top=10):
    """Writes the figures of {label: RunProfile} (with c2c, profile-c2c too); returns the
    paths written."""
    unit, n = per_unit(profiles)
    per = f" per {unit}" if unit else ""
    cycles = {k: {f: d["cycles"] / n[k] for f, d in p.functions().items() if d["cycles"]}
              for k, p in profiles.items()}
    fig = plots.figure(width_in=min(5.0 + 1.2 * len(profiles), 16.0), height_in=5.0)
    ax = plots.stacked_bars(fig, f"{title}: cycles{per} by function", f"cycles{per}", cycles)
    ax.set_xlabel("variant")
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    regions = {}
    for k, p in profiles.items():
        for r, d in p.regions.items():
            if d["l1d_misses"]:
                regions.setdefault(f"{r} L1D", {})[k] = d["l1d_misses"] / n[k]
                regions.setdefault(f"{r} LLC", {})[k] = d["llc_misses"] / n[k]
    fig2 = plots.figure(width_in=min(5.0 + 0.8 * len(regions), 16.0), height_in=4.5)
    ax2 = plots.grouped_bars(fig2, f"{title}: demand misses{per} by region, bars by variant",
                             f"misses{per}", regions)
    ax2.set_xlabel("region and level")
    ax2.ticklabel_format(axis="y", style="plain", useOffset=False)
    figures = [fig, fig2] + ([plot_c2c(title, profiles, top)] if c2c else [])
    return plots.write_figures(directory, list(zip(PLOTS, figures)))
