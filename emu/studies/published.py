"""Published figures and the band an emulated value is held to: the one home of both, read by
`emu validate` (its rows' band and status) and by the studies' tables (docs/scenarios.md's
published figures, each beside the emulated value with its status and documented gap).

A value is `ok` when emulated / published lies within BAND; a `gap` when it lies outside but
inside the ratio range documented for it today (with the reason, which docs/scenarios.md and
docs/validation.md explain at length); `FAIL` otherwise. A study's figure applies to the
setup it was published for (the study's profile and the options it fixes); on any other its
status is `n/a` and no gap is tagged. No profile value or model code is chosen to meet a
figure (docs/design.md): a gap is documented, never closed by a fit.
"""
import math
from dataclasses import dataclass, field

BAND = (0.8, 1.25)   # x/÷1.25 of the published figure or measurement
NOT_APPLICABLE = "n/a"


def status(ratio, known=None):
    """"ok" for a ratio within BAND; "gap" outside it but within `known` (lo, hi), the range
    documented for it; "FAIL" otherwise."""
    if BAND[0] <= ratio <= BAND[1]:
        return "ok"
    lo, hi = known or (math.inf, -math.inf)
    return "gap" if lo <= ratio <= hi else "FAIL"


@dataclass(frozen=True)
class Figure:
    """A study's published value of one variant's metric; `gap`: (lo, hi, reason), the ratio
    range (emulated / published) it is known to fall in today, its value +-10 % rounded
    outwards, as emu validate's KNOWN_GAPS, and why (docs/scenarios.md's gaps)."""
    value: float
    gap: tuple | None = None


@dataclass(frozen=True)
class Study:
    """The published figures of one study: its metric per variant and the profile and option
    values they were published (or assumed, where the source does not say) for."""
    metric: str
    source: str
    profile: str
    variants: dict
    setup: dict = field(default_factory=dict)


_MOVNT = ("the model's single-thread NT bandwidth is Cascade Lake's measured one, transferred "
          "(wc_hold_ns, numa.remote_hold_ns): 4.55 GB/s locally and 2.29 remotely, where the "
          "published 1.0 and 1.3 s need 17 and 13 GB/s from one thread; the study's thread "
          "count is not recorded (docs/scenarios.md §4, gap 1)")
_PAGE_FAULT2 = ("a page's fault and unmap besides the memcg accounting is the declared "
                "software.page_fault2_page_ns, assumed 1 us; 184k pages a second a process is "
                "5.4 us a page: the fault path's own work and its other shared lines (the LRU "
                "and zone locks, the page allocator), left in that cost, are 3-4x the assumed "
                "(docs/scenarios.md §6)")

STUDIES = {
    "dax-write-usercopy": Study(
        "iops", "[DW19] (docs/hardware.md §1.5)", "cascadelake-optane",
        {"memmap=pmem": Figure(375e3, (1.51, 1.86,
                                       "the model's 4 KiB NT copy takes 0.95 us where one "
                                       "thread's was measured at 1.55 us (media.optane."
                                       "wc_hold_ns, transferred from DRAM), and the struct-page "
                                       "read's cost is reproduced in direction only "
                                       "(docs/scenarios.md §1, gaps 1-2)")),
         "memmap=dram": Figure(519e3)},
        setup={"bs": 4096, "jobs": 1}),
    "dax-memcpy": Study(
        "seconds", "the study's definition (docs/scenarios.md §4; where it was published is "
        "not named)", "haswell-nvdimm-n",
        {"clflush,numa=local": Figure(13.5, (1.51, 1.85,
                                              "CLFLUSH's cost differs by part and the study's "
                                              "CPU is not known: the profile's is the "
                                              "E5-2660 v3's 192 cycles (docs/scenarios.md §4, "
                                              "gap 3)")),
         "clflush,numa=remote": Figure(37.1, (0.65, 0.81,
                                               "the model charges a remote CLFLUSH the local "
                                               "accept plus the idle remote latency, with no "
                                               "queueing on the interconnect for the write "
                                               "acknowledgement (docs/scenarios.md §4, gap 2)")),
         "movnt,numa=local": Figure(1.0, (3.42, 4.2, _MOVNT)),
         "movnt,numa=remote": Figure(1.3, (5.22, 6.4, _MOVNT))}),
    "page-counter": Study(
        "per_process_ops", "will-it-scale page_fault2 A-P50 in the v2 patch mail of commit "
        "802f1d522d5f (docs/scenarios.md §6; machine A, 2 sockets of 24 cores, names no CPU: "
        "the profile is assumed)", "cascadelake-optane",
        {"layout=before": Figure(183960, (3.07, 3.76, _PAGE_FAULT2)),
         "layout=after": Figure(192078, (3.59, 4.39, _PAGE_FAULT2))},
        setup={"cores": 48, "sockets": 2}),
}


def check(name, profile, options, values, scale=1.0):
    """{VARIANT: {METRIC: {"published", "emulated", "ratio", "band", "status", "gap"}}} of
    study `name`'s published figures against `values` ({VARIANT: emulated METRIC value}),
    run on `profile` with `options` (an Options, or anything with the option values as
    attributes), its figures scaled by `scale` (dax-memcpy's --scale runs that fraction of
    the published run); {} for a study without published figures. "gap" is the documented reason
    where the status is "gap", else None; ratio and status are None / "n/a" off the setup
    the figures were published for."""
    study = STUDIES.get(name)
    if study is None:
        return {}
    applies = profile == study.profile and all(
        getattr(options, k) == v for k, v in study.setup.items())
    out = {}
    for variant, fig in study.variants.items():
        published = fig.value * scale
        emulated = values[variant]
        ratio = round(emulated / published, 4) if applies else None
        st = status(ratio, fig.gap[:2] if fig.gap else None) if applies else NOT_APPLICABLE
        out[variant] = {study.metric: {
            "published": published, "emulated": emulated, "ratio": ratio,
            "band": list(BAND), "status": st, "gap": fig.gap[2] if st == "gap" else None}}
    return out


def cells(check_result, variant, metric, fmt):
    """(published, ratio, status) as table cells for one variant ("-" where none)."""
    c = check_result.get(variant, {}).get(metric)
    if c is None:
        return "-", "-", "-"
    ratio = "-" if c["ratio"] is None else f"{c['ratio']:.2f}"
    return format(c["published"], fmt), ratio, c["status"]


def notes(name, check_result):
    """The lines under a study's table: where its figures come from, the band, and the
    documented gap of each variant tagged "gap" (and each FAIL, said to be undocumented)."""
    if not check_result:
        return []
    study = STUDIES[name]
    lines = [f"published: {study.source}; status: emulated / published within "
             f"{BAND[0]}-{BAND[1]} (ok), outside it in the documented range (gap), or neither "
             f"(FAIL)"]
    if any(c["status"] == NOT_APPLICABLE for d in check_result.values() for c in d.values()):
        setup = ", ".join([f"profile {study.profile}"]
                          + [f"{k}={v}" for k, v in study.setup.items()])
        lines.append(f"  n/a: the figures are for {setup}")
    for variant, d in check_result.items():
        for c in d.values():
            if c["status"] == "gap":
                lines.append(f"  gap {variant}: {c['gap']}")
            elif c["status"] == "FAIL":
                lines.append(f"  FAIL {variant}: ratio {c['ratio']} outside the band and any "
                             f"documented gap")
    return lines
