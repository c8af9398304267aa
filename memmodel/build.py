"""The memory side of a machine, built in one call (Python only): every memmodel section
declared (with its role, memmodel.layout), the state buffer S allocated, and the sections
set from the profile."""
from memmodel import tables
from memmodel.sections import cache as cm
from memmodel.sections import hotlines as hot
from memmodel.sections import ip_stride, stream
from memmodel.sections import media as md
from memmodel.sections import memory as mm


def build(layout, values, regions, *, functional, node, seed, hot_lines, background):
    """(S, pt, frames) of a machine of profile `values` over `regions` (sorted by base) on
    `layout`, whose other blocks' sections are declared already (and set by their owner
    once S is built); `background`: one (read_gbps, write_gbps) per media or None."""
    media_names = list(values["media"])
    media = [values["media"][n] for n in media_names]
    levels = list(values["cache"].values())
    pf = values["prefetch"]
    tables.add_sections(layout, values, len(regions))
    cm.add_sections(layout, levels)
    md.add_sections(layout, media)
    mm.add_sections(layout, regions)
    stream.add_sections(layout, pf["stream_entries"])
    ip_stride.add_sections(layout, pf["ip_stride_entries"])
    hot.add_sections(layout, hot_lines, len(regions))
    S = layout.build()
    tables.init_sections(layout, S, values, functional, node)
    cm.init_sections(layout, S, levels, seed)
    stream.init_sections(layout, S, pf["stream_entries"])
    ip_stride.init_sections(layout, S, pf["ip_stride_entries"])
    hot.init_sections(layout, S, hot_lines)
    md.init_sections(layout, S, media, values["core"]["freq_ghz"], values["numa"], background)
    pt, frames = mm.init_sections(layout, S, regions, {n: i for i, n in enumerate(media_names)},
                                  {n: values["media"][n]["persistence"] for n in media_names})
    return S, pt, frames


def spread(layout, S):
    """Every core's private state as core 0's, set up by build() and the other blocks'
    owners: copied, the shared cache level pointed at from each core's view, each core's
    pending snapshots given their own frames."""
    layout.spread(S)
    cm.spread(layout, S)
    tables.spread(layout, S)
