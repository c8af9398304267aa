"""`emu profile --plot DIR`: profile-cycles (each variant's cycles per function, stacked) and
profile-regions (its demand misses per region), both per unit of the study's work (I/O,
packet, copy: emu.profiler.units) where every variant counted the same unit, else totals."""
from emu.studies import plots

PLOTS = ("profile-cycles", "profile-regions")   # the basenames of --plot's files


def per_unit(profiles):
    """(unit name, {label: units run}) when every profile counted units of one name, else
    (None, {label: 1})."""
    names = {tuple(p.units) for p in profiles.values()}
    if len(names) == 1 and len(next(iter(names))) == 1:
        (unit,) = next(iter(names))
        if all(p.units[unit] > 0 for p in profiles.values()):
            return unit, {k: p.units[unit] for k, p in profiles.items()}
    return None, dict.fromkeys(profiles, 1)


def plot_profiles(directory, title, profiles):
    """Writes the two figures of {label: RunProfile}; returns the paths written."""
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
    return plots.write_figures(directory, list(zip(PLOTS, (fig, fig2))))
