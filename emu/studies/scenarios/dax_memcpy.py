"""Scenario `dax-memcpy`: cached copy + clflush vs non-temporal copy into an NVDIMM-N buffer.

1M copies of a 16 KiB DRAM buffer into a 4 MiB NVDIMM buffer, walking through it (16 GiB).
Variants `clflush` and `movnt` (kernels/memcpy_study.py), each with the NVDIMM on the
core's NUMA node (`numa=local`) or the other one (`numa=remote`); the DRAM source is local.
Metric: `seconds` of emulated time for the run. Published figures are shown beside it; no
profile value is chosen to meet them (docs/scenarios.md, "dax-memcpy").
"""
import numpy as np

from emu import profiler
from emu.machine import Machine
from emu.studies import peaks, published
from emu.studies.options import Option
from emu.studies.progress import progress
from kernels.memcpy_study import BUFFER_BYTES, COPIES_PER_BUFFER, COPY_BYTES, study_program
from memmodel.profile import ProfileError

NAME = "dax-memcpy"
DEFAULT_PROFILE = "haswell-nvdimm-n"
FULL_ROUNDS = 1024 * 1024 // COPIES_PER_BUFFER   # 1M copies = 4096 passes over the buffer
VARIANTS = ("clflush,numa=local", "clflush,numa=remote", "movnt,numa=local",
            "movnt,numa=remote")
METRIC = "seconds"
# profile values the result follows from (docs/scenarios.md, dax-memcpy)
SENSITIVE = ("media.nvdimm.write_accept_ns", "media.nvdimm.wc_hold_ns", "media.nvdimm.wc_ack_ns",
             "numa.remote_hold_ns",
             "media.dram.read_latency_ns",
             "numa.remote_latency_ns", "numa.remote_bw_gbps", "instr.clflush_cycles",
             "instr.sfence_cycles", "instr.rep_movsb_startup_cycles",
             "instr.rep_movsb_nrfo_threshold_bytes", "core.wc_buffers", "core.freq_ghz",
             "media.nvdimm.write_bw_gbps", "media.nvdimm.wpq_entries")


OPTIONS = (
    Option("scale", float, 1.0, "fraction of the 1M copies to run, in (0, 1] (whole 4 MiB "
                                "passes, at least one)", low=0, high=1, low_open=True),
    Option("fast_forward", bool, True, "run every pass (the same result: passes the machine "
                                       "shows to repeat are otherwise applied at once, "
                                       "Machine.run(repeat=N))"),
)


def _regions(m, remote):
    """(persistent destination, volatile source) regions for the placement: the NVDIMM and
    DRAM of the study's machine, by their media's persistence, not their kind."""
    media = m.profile.values["media"]
    nv = [n for n, r in m.regions.items() if media[r["media"]]["persistence"] != "none"]
    dram = [n for n, r in m.regions.items() if media[r["media"]]["persistence"] == "none"]
    if not nv or not dram:
        raise ProfileError(f"profile {m.profile.name!r} needs a persistent and a volatile "
                           f"region")
    want = 1 if remote else 0
    dst = [n for n in nv if m.regions[n]["node"] == want]
    src = [n for n in dram if m.regions[n]["node"] == 0]
    if not dst or not src:
        raise ProfileError(f"profile {m.profile.name!r} has no nvdimm-n region on node {want} "
                           f"or no dram region on node 0")
    return m.regions[dst[0]], m.regions[src[0]]


def run_variant(profile, overrides, variant, rounds, fast_forward=True):
    profiler.label(variant)
    copy, placement = variant.split(",")
    m = Machine(profile, overrides)
    profiler.units(rounds * COPIES_PER_BUFFER, "copy")
    dst, src = _regions(m, placement == "numa=remote")
    src_addr = src["base"] + (1 << 20)
    pattern = np.arange(COPY_BYTES, dtype=np.uint32).astype(np.uint8) ^ 0x5A
    m.write(src_addr, pattern)
    if fast_forward:   # one pass, `rounds` times back to back: the same program
        r = m.run(study_program(copy, dst["base"], src_addr, 1), repeat=rounds)
    else:
        r = m.run(study_program(copy, dst["base"], src_addr, rounds))
    last = dst["base"] + ((rounds * COPIES_PER_BUFFER - 1) % COPIES_PER_BUFFER) * COPY_BYTES
    if m.read(last, COPY_BYTES) != pattern.tobytes():
        raise AssertionError("functional check failed: the last copy differs from the source")
    s = m.stats()
    nv_media = dst["media"]
    values = m.profile.values
    paths = [peaks.media_peak(values, nv_media, "write")]
    if placement == "numa=remote":
        paths.append(peaks.interconnect_peak(values))
    return {"seconds": r.seconds, "cycles": r.cycles, "passes_fast_forwarded": r.fast_forwarded,
            "bytes_copied": rounds * BUFFER_BYTES,
            "bandwidth": peaks.check(rounds * BUFFER_BYTES / r.seconds / 1e9, *paths),
            "nvdimm_line_writes": s["media"][nv_media]["line_writes"],
            "llc_misses": s["levels"][m.level_names[-1]]["misses"]}


def run(options):
    rounds = max(1, int(round(FULL_ROUNDS * options.scale)))
    profile = options.profile or DEFAULT_PROFILE
    overrides = dict(options.overrides)
    variants = {v: run_variant(profile, overrides, v, rounds, options.fast_forward)
                for v in progress(VARIANTS, NAME, options.progress)}
    ratios = {p: variants[f"clflush,numa={p}"]["seconds"] / variants[f"movnt,numa={p}"]["seconds"]
              for p in ("local", "remote")}
    return {"scenario": NAME, "profile": profile,
            "scale": rounds / FULL_ROUNDS, "copies": rounds * COPIES_PER_BUFFER,
            "variants": variants, "clflush_over_movnt": ratios,
            "published": published.check(NAME, profile, options,
                                          {v: d["seconds"] for v, d in variants.items()},
                                          rounds / FULL_ROUNDS)}


def table(res):
    scale = res["scale"]
    lines = [f"dax-memcpy on {res['profile']}: {res['copies']} copies of 16 KiB "
             f"(scale {scale:g}; published figures are for the full 1M copies)",
             f"{'variant':<22}{'emulated s':>12}{'published s':>13}{'ratio':>7}{'status':>8}"
             f"{'GB/s':>8}{'NVDIMM writes':>15}"]
    pub = res["published"]
    for v, d in res["variants"].items():
        p, ratio, st = published.cells(pub, v, "seconds", ".4f")
        lines.append(f"{v:<22}{d['seconds']:>12.4f}{p:>13}{ratio:>7}{st:>8}"
                     f"{peaks.cell(d['bandwidth'], 8)}{d['nvdimm_line_writes']:>15}")
    lines += published.notes(NAME, pub)
    lines += peaks.notes(res["variants"])
    for p, r in res["clflush_over_movnt"].items():
        figures = [pub[f"{c},numa={p}"]["seconds"]["published"] for c in ("clflush", "movnt")]
        lines.append(f"clflush/movnt, numa={p}: emulated {r:.2f}, published "
                     f"{figures[0] / figures[1]:.2f}")
    return "\n".join(lines) + "\n"
