"""The model's loaded latency, a prediction judged apart (docs/validation.md "Loaded latency"):
one core's random read latency on a media while other cores' reads or writes load it
(Machine(background=...)), as MLC's loaded-latency test runs it (prefetchers off, latency
of dependent random reads while load threads move data). No row: the measurements found
(MLC's loaded-latency outputs, OptaneStudy graphs/06) are kept back to judge the model by
(docs/validation.md "Loaded latency")."""
from emu import Machine
from emu.studies.validate.benchmarks import chase_ns
from emu.studies.validate.rows import PREFETCHERS_OFF

PROFILE = "cascadelake-optane"
REGIONS = {"dram": "dram0", "optane": "pmem0"}
FRACTIONS = (0.0, 0.25, 0.5, 0.75, 0.9)


def loaded_ns(media, kind, fraction, profile=PROFILE):
    """ns a dependent random read of `media` takes while a background of `kind` ("read" or
    "write") moves `fraction` of the media's peak for that kind."""
    m = Machine(profile, dict(PREFETCHERS_OFF), functional=False)
    peak = m.profile.values["media"][media][f"{kind}_bw_gbps"]
    bg = {media: {f"{kind}_gbps": fraction * peak}} if fraction else None
    m = Machine(profile, dict(PREFETCHERS_OFF), functional=False, background=bg)
    return chase_ns(m, REGIONS[media], "random")


def markdown(profile=PROFILE):
    """The table of docs/validation.md "Loaded latency"."""
    head = " | ".join(f"{f:.0%}" for f in FRACTIONS)
    out = [f"| `{profile}`, ns | {head} |", "|---|" + "---|" * len(FRACTIONS)]
    for media in REGIONS:
        for kind in ("read", "write"):
            cells = " | ".join(f"{loaded_ns(media, kind, f, profile):.0f}" for f in FRACTIONS)
            out.append(f"| {media} read, {kind} background | {cells} |")
    return "\n".join(out) + "\n"
