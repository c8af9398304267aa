"""The rows of `emu validate`: each measurement of docs/hardware.md it reproduces, with its
source and the benchmark (benchmarks.py) that emulates it (ROWS); the band a row's ratio
should lie in (BAND); the rows known to miss it today and why (KNOWN_GAPS, REASONS).
docs/validation.md "After a change of the model" says how to update them."""
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from emu.machine import Machine
from emu.studies.validate.benchmarks import (
    bandwidth,
    chase_cycles,
    chase_ns,
    ewr,
    fence_cycles,
    flush_cycles,
    hitm_ns,
    lfence_extra_cycles,
    locked_rmw_cycles,
    persist_ns,
    rep_movsb_bytes_per_cycle,
)
from isa.ops import Op

BAND = (0.8, 1.25)   # x/÷1.25 of the measurement

CLX, SKX, BDW, HSW = "cascadelake-optane", "skylake-ddr4", "broadwell-ddr4", "haswell-nvdimm-n"
HW = "docs/hardware.md"


@dataclass(frozen=True)
class Row:
    """A measurement of docs/hardware.md and how to emulate it. `bench` returns the
    emulated value from a fresh Machine, or is the reason the row cannot run. `measured`
    is the published number (the midpoint of a published range, which `source` quotes);
    `curve` places the row on a plotted curve: (curve name, x)."""
    profile: str
    name: str
    measured: float
    unit: str
    source: str
    bench: Callable[[Machine], float] | str
    curve: tuple[str, int] | None = None


def _mid(lo, hi):
    return round((lo + hi) / 2, 6)


def _src(tag, where, machine):
    """A row's source: the source tag, the section(s) of docs/hardware.md (and what there),
    and the machine measured, with how it maps to the profile."""
    return f"{tag} {HW} {where}; {machine}"


# The machines measured, and how each maps to its profile.
BOX = "Xeon 8260 ES (UCSD Optane box): this profile's machine"
CLX8280 = "Platinum 8280 (Cascade Lake): the closest profile"
CLX6240 = "2x Gold 6240 (Cascade Lake): the closest profile"
CLX6252 = "2x Gold 6252N (Cascade Lake): the closest profile"
SKX7900 = "i9-7900X (Skylake-X): the closest profile"
SKX8180 = "2x Platinum 8180 (Skylake-SP, 28 cores as the profile's LLC): the closest profile"
SKX6140 = "2x Gold 6140 (Skylake-SP): the closest profile"
BDW6850 = "i7-6850K (Broadwell-E): the closest profile"
BDW2699 = "E5-2699 v4 (Broadwell-EP): this profile's machine"
BDW2680 = ("2x E5-2680 v4 (Broadwell-EP, Cluster-on-Die on, same cluster: the only Broadwell-EP "
           "MLC output): the closest profile")
HSW2699 = "2x E5-2699 v3 (Haswell-EP): this profile's assumed CPU"
HSW2680 = "2x E5-2680 v3 (Haswell-EP): the closest profile"
HSW2630 = "2x E5-2630 v3 (Haswell-EP, a student report: low confidence): the closest profile"
HSW26x0 = "E5-2630 v3, E5-2660 v3 (Haswell-EP): the closest profile"

# §9.1 (= [YA20 Fig.12]): bytes -> (ntstore + sfence ns, store + clwb + sfence ns)
PERSIST_CURVE = {64: (124.7, 116.4), 128: (134.7, 133.7), 256: (212.0, 192.5),
                 512: (304.7, 327.9), 1024: (484.0, 601.0), 2048: (853.5, 1015.2),
                 4096: (1550.6, 1774.2)}
PERSIST_PATHS = {"ntstore": "ntstore + sfence", "clwb": "store + clwb + sfence"}


def _persist_rows():
    src = _src("[YA20 Fig.12; OPTSTUDY 12-flush_instr_lat]", "§9.1, §1.1", BOX)
    return [Row(CLX, f"persist-{path}-{n}B", PERSIST_CURVE[n][i], "ns", src,
                partial(persist_ns, region="pmem0", path=path, nbytes=n),
                (PERSIST_PATHS[path], n))
            for i, path in enumerate(PERSIST_PATHS) for n in PERSIST_CURVE]


def _instruction_rows(profile, tag, machine, lfence, sfence, mfence, clflush, clflushopt=None,
                      clwb=None, movsb=None, locked=None, movsb_where="§4"):
    """The §4 instruction rows (and §11's locked RMW) of one [ILX] machine; None: not
    measured there."""
    rows = [Row(profile, "lfence-throughput", lfence, "cycles", _src(tag, "§4, §7.2", machine),
                partial(fence_cycles, op=Op.LFENCE)),
            Row(profile, "sfence-throughput", sfence, "cycles", _src(tag, "§4", machine),
                partial(fence_cycles, op=Op.SFENCE)),
            Row(profile, "mfence-throughput", mfence, "cycles", _src(tag, "§4", machine),
                partial(fence_cycles, op=Op.MFENCE))]
    for name, value, op in (("clflush", clflush, Op.CLFLUSH),
                            ("clflushopt", clflushopt, Op.CLFLUSHOPT),
                            ("clwb", clwb, Op.CLWB)):
        if value is not None:
            rows.append(Row(profile, f"{name}-throughput", value, "cycles",
                            _src(tag, "§4", machine), partial(flush_cycles, op=op)))
    if movsb is not None:
        rows.append(Row(profile, "rep-movsb-l1", movsb, "B/cycle",
                        _src(tag, movsb_where, machine), rep_movsb_bytes_per_cycle))
    if locked is not None:
        rows.append(Row(profile, "locked-rmw-latency", locked, "cycles",
                        _src(tag, "§11: LOCK ADD / XCHG m64", machine), locked_rmw_cycles))
    return rows


def _chase(region, pattern):
    return partial(chase_ns, region=region, pattern=pattern)


def _mlc_rows(profile, tag, machine, local, remote, hitm=None, suffix=""):
    """An MLC output's idle latencies (§10) and same-socket HITM (§12)."""
    rows = [Row(profile, f"dram-latency-mlc{suffix}", local, "ns",
                _src(tag, "§10: local idle", machine), _chase("dram0", "random")),
            Row(profile, f"dram-latency-remote-mlc{suffix}", remote, "ns",
                _src(tag, "§10: remote idle", machine), _chase("dram1", "random"))]
    if hitm is not None:
        rows.append(Row(profile, f"hitm-same-socket{suffix}", hitm, "ns",
                        _src(tag, "§12: L2->L2 HITM", machine), hitm_ns))
    return rows


def _bw(region, kind, dimms=None):
    return partial(bandwidth, region=region, kind=kind, dimms=dimms)


def _persist(region, path):
    # [YA20] Fig.2's 64 B store + clwb + fence (57-62 ns) is below any media read: its
    # stored lines were cached (benchmarks.persist_ns)
    return partial(persist_ns, region=region, path=path, nbytes=64, cached=True)


_FIG2 = "[YA20 Fig.2; OPTSTUDY 02-best_case_latency]"
_BWCSV = "[OPTSTUDY bandwidth.csv]"
ROWS = [
    # -- cascadelake-optane: the Optane box of [YA20] (§1, §2, §8.4, §9), MLC-CLX (§2, §10,
    #    §12), [ILX] CascadeLakeXeon (§4, §11, §13)
    Row(CLX, "dram-latency-seq", 81.4, "ns", _src(_FIG2, "§1.1, §2", BOX),
        _chase("dram0", "sequential")),
    Row(CLX, "dram-latency-rand", 101.5, "ns", _src(_FIG2, "§1.1, §2", BOX),
        _chase("dram0", "random")),
    Row(CLX, "optane-latency-seq", 169.4, "ns", _src(_FIG2, "§1.1", BOX),
        _chase("pmem0", "sequential")),
    Row(CLX, "optane-latency-rand", 305.0, "ns", _src(_FIG2, "§1.1", BOX),
        _chase("pmem0", "random")),
    *_mlc_rows(CLX, "[MLC-CLX]", CLX6240, local=80.8, remote=140.4, hitm=49.3),
    *_mlc_rows(CLX, "MLC (CSIT calib_clx)", CLX6252, local=81.2, remote=130.2, hitm=55.6,
               suffix="-6252n"),
    Row(CLX, "dram-write-ntstore-64B", 86.9, "ns", _src(_FIG2, "§1.1", BOX),
        _persist("dram0", "ntstore")),
    Row(CLX, "dram-write-clwb-64B", 57.3, "ns", _src(_FIG2, "§1.1", BOX),
        _persist("dram0", "clwb")),
    Row(CLX, "optane-write-ntstore-64B", 90.4, "ns", _src(_FIG2, "§1.1", BOX),
        _persist("pmem0", "ntstore")),
    Row(CLX, "optane-write-clwb-64B", 62.3, "ns", _src(_FIG2, "§1.1", BOX),
        _persist("pmem0", "clwb")),
    *_persist_rows(),
    Row(CLX, "dram-read-bw", 7.4, "GB/s", _src("[YA20 Fig.4]", "§2, §1.2: 1 thread", BOX),
        _bw("dram0", "read")),
    Row(CLX, "dram-read-bw-remote", _mid(3.9, 4.8), "GB/s",
        _src(_BWCSV, "§8.4: rdram load, 1 thread, 3.9 (64 B) .. 4.8", BOX),
        _bw("dram1", "read")),
    Row(CLX, "dram-ntstore-bw", _mid(4.53, 4.60), "GB/s",
        _src(_BWCSV, "§8.4: ldram, 1 thread, 4.53-4.60", BOX), _bw("dram0", "ntstore")),
    Row(CLX, "dram-ntstore-bw-remote", _mid(2.24, 2.30), "GB/s",
        _src(_BWCSV, "§8.4, §10: rdram, 1 thread, 2.24-2.30", BOX), _bw("dram1", "ntstore")),
    Row(CLX, "optane-read-bw-6dimm", 2.88, "GB/s",
        _src("[YA20 Fig.4]", "§1.2: 6 DIMMs interleaved, 1 thread", BOX), _bw("pmem0", "read")),
    Row(CLX, "optane-read-bw-1dimm", 2.92, "GB/s",
        _src("[YA20 Fig.4]", "§1.2: 1 DIMM, 1 thread", BOX), _bw("pmem0", "read", dimms=1)),
    Row(CLX, "optane-ntstore-bw-6dimm", _mid(4.23, 4.36), "GB/s",
        _src(_BWCSV, "§8.4: lpmem interleaved, 1 thread, 4.23-4.36", BOX),
        _bw("pmem0", "ntstore")),
    Row(CLX, "optane-ntstore-bw-1dimm", _mid(2.26, 2.28), "GB/s",
        _src(_BWCSV, "§8.4: lpmem 1 DIMM, 1 thread, 2.26-2.28", BOX),
        _bw("pmem0", "ntstore", dimms=1)),
    Row(CLX, "optane-ewr-64B", 0.247, "ratio",
        _src(_BWCSV, "§1.3: random 64 B NT writes, 6 DIMMs, median over thread counts", BOX),
        partial(ewr, nbytes=64)),
    Row(CLX, "optane-ewr-256B", 0.986, "ratio",
        _src(_BWCSV, "§1.3: random 256 B NT writes, 6 DIMMs, median over thread counts", BOX),
        partial(ewr, nbytes=256)),
    *_instruction_rows(CLX, "[ILX CascadeLakeXeon]", CLX8280, lfence=4.25, sfence=6.0,
                       mfence=33.3, clflush=_mid(88, 109), clflushopt=_mid(58, 69),
                       clwb=_mid(1.0, 1.1), movsb=58.72, movsb_where="§13, §4", locked=18.0),

    # -- skylake-ddr4: [ILX] SkylakeX (§3, §4, §11), Skylake-SP servers (§2, §10, §12)
    Row(SKX, "l1d-latency", 4, "cycles", _src("[ILX SkylakeX NewMemLat]", "§3", SKX7900),
        partial(chase_cycles, nbytes=16 << 10)),
    Row(SKX, "l2-latency", 14, "cycles", _src("[ILX SkylakeX NewMemLat]", "§3", SKX7900),
        partial(chase_cycles, nbytes=512 << 10)),
    Row(SKX, "llc-latency", _mid(67, 75), "cycles",
        _src("[ILX SkylakeX NewMemLat]", "§3: 67-75 at 2-8 MiB", SKX7900),
        partial(chase_cycles, nbytes=4 << 20)),
    Row(SKX, "llc-latency-anandtech", 77, "cycles",
        _src("[AT11550]", "§3: 77", "Skylake-X (the review's part): the closest profile"),
        partial(chase_cycles, nbytes=4 << 20)),
    Row(SKX, "dram-latency-ilx", 85, "ns",
        _src("[ILX SkylakeX NewMemLat]", "§3: ~280 cycles at 3.3 GHz (~85 ns), 512 MiB",
             SKX7900), _chase("dram0", "random")),
    Row(SKX, "dram-latency-lmbench", _mid(89, 91), "ns",
        _src("[AT11544]", "§2: 89-91 ns, 384-512 MB", "Skylake-SP: this profile's source"),
        _chase("dram0", "random")),
    *_mlc_rows(SKX, "MLC (CSIT calib_skx)", SKX8180, local=81.1, remote=144.5, hitm=50.3),
    *_mlc_rows(SKX, "MLC (hpcleuven skylake_mlc.txt)", SKX6140, local=90.2, remote=144.3,
               hitm=49.9, suffix="-6140"),
    Row(SKX, "lfence-dependent-chain", 9.3, "cycles",
        _src("[SO-LFENCE]", "§4, §7.2: extra cycles per LFENCE", "Skylake: the closest profile"),
        lfence_extra_cycles),
    *_instruction_rows(SKX, "[ILX SkylakeX]", SKX7900, lfence=4.25, sfence=6.0, mfence=33.5,
                       clflush=117, clflushopt=66, clwb=1.25, movsb=56.7, locked=18.1),

    # -- broadwell-ddr4: [ILX] BroadwellE (§3, §4, §11), Broadwell-EP servers (§2, §3, §12)
    Row(BDW, "l1d-latency", 4, "cycles", _src("[ILX BroadwellE NewMemLat]", "§3", BDW6850),
        partial(chase_cycles, nbytes=16 << 10)),
    Row(BDW, "l2-latency", 12, "cycles", _src("[ILX BroadwellE NewMemLat]", "§3", BDW6850),
        partial(chase_cycles, nbytes=128 << 10)),
    Row(BDW, "llc-latency", _mid(38, 51), "cycles", _src("[AT11544]", "§3: 38-51", BDW2699),
        partial(chase_cycles, nbytes=4 << 20)),
    Row(BDW, "llc-latency-i7-6850k", _mid(56, 58), "cycles",
        _src("[ILX BroadwellE NewMemLat]", "§3: 56-58", BDW6850),
        partial(chase_cycles, nbytes=4 << 20)),
    Row(BDW, "dram-latency-ilx", _mid(70, 74), "ns",
        _src("[ILX BroadwellE NewMemLat]", "§3: ~252-265 cycles at 3.6 GHz (~70-74 ns), "
             "512 MiB", BDW6850), _chase("dram0", "random")),
    Row(BDW, "dram-latency-lmbench", 95, "ns", _src("[AT11544]", "§2: 384-512 MB", BDW2699),
        _chase("dram0", "random")),
    Row(BDW, "hitm-same-socket", 39.2, "ns",
        _src("MLC (hpcleuven broadwell_mlc.txt)", "§12", BDW2680), hitm_ns),
    *_instruction_rows(BDW, "[ILX BroadwellE]", BDW6850, lfence=4.25, sfence=6.0, mfence=33.3,
                       clflush=106, movsb=57.4, locked=19.0),

    # -- haswell-nvdimm-n: Haswell-EP MLC outputs (§10, §12), [ILX] HaswellEP (§7.2, §11)
    *_mlc_rows(HSW, "MLC (CSIT calib_hsw)", HSW2699, local=97.5, remote=139.6, hitm=47.1),
    *_mlc_rows(HSW, "MLC (hpcleuven haswell_mlc.txt)", HSW2680, local=92.1, remote=127.1,
               hitm=36.6, suffix="-2680v3"),
    *_mlc_rows(HSW, "MLC (cs499-fa22 hw1 README)", HSW2630, local=93.5, remote=133.8,
               suffix="-2630v3"),
    Row(HSW, "lfence-throughput", _mid(4.25, 4.26), "cycles",
        _src("[ILX HaswellEP]", "§7.2: 4.25-4.26", HSW26x0), partial(fence_cycles, op=Op.LFENCE)),
    Row(HSW, "locked-rmw-latency", 19.0, "cycles",
        _src("[ILX HaswellEP]", "§11: LOCK ADD / XCHG m64", HSW26x0), locked_rmw_cycles),
]

# Why rows miss the band; docs/validation.md explains each at length.
REASONS = {
    "clwb-rfo-first": "the 4 MiB of stored lines were read beforehand but fit only the LLC: "
                      "the store's RFO from the LLC (~30 ns) comes first, and the CLWB waits "
                      "for the store to commit (docs/hardware.md §8.1); the published 64 B "
                      "case was measured on lines nearer the core (interpretation)",
    "prefetch-seq": "the L1 next-line and L2 stream prefetchers fetch the next lines while the "
                    "chase waits; the measured sequential read gains nothing from prefetching "
                    "(81.4 ns, the idle latency)",
    "dram-one-latency": "DRAM has one read latency: no row-buffer misses and no TLB walks, which "
                        "LATTester's random reads pay over its sequential ones (101.5 vs 81.4 ns)",
    "persist-first-lines": "Fig.12 measures one 64 B ntstore + sfence at 124.7 ns where Fig.2 "
                           "measures 90.4 ns on the same box; wc_ack_ns is calibrated on Fig.2, "
                           "so the curve's first lines cost the lone line's acknowledgement "
                           "(~90 ns) and then the DIMM's intake (27.8 ns a line behind a 4-entry "
                           "WPQ); what Fig.12's loop adds to its first lines (35-100 ns) is not "
                           "modelled",
    "clwb-rfo-media": "the curve's loop stores to lines not cached beforehand (LATTester's "
                      "loop): the model reads each line from the DIMM before the store commits "
                      "(an RFO, 169-305 ns, behind the DIMM's media writes), where the measured "
                      "116 ns at 64 B is below any media read, so the stores did not wait for "
                      "one (a 64 B store taking its line unread, or lines cached after all: "
                      "neither sourced); read first, the model gives 0.70-1.00 "
                      "(docs/validation.md)",
    "stream-one-dimm": "a single stream writes the 4 KiB stripes one DIMM after another; with "
                       "a 4-entry WPQ a channel (VANS's setting, hardware.md §9.2) and each "
                       "DIMM taking 27.8 ns a line it is held near one DIMM's rate, where the "
                       "measured 4.3 GB/s needs two DIMMs taking its lines at once; a queue "
                       "deep enough for that (32) makes a 4 KiB persist 981 ns against "
                       "1550.6: no one depth gives both",
    "sq-idle-latency": "a stream keeps the 16 L2 miss entries (cache.l2.mshr_entries, §8.3) "
                       "busy: 16 x 64 B per 80.8 ns idle latency allow 12.7 GB/s (remote, "
                       "140.4 ns: 7.3); this box reads 7.4 (remote 4.35), ~9 lines in flight, "
                       "what the 10 LFBs give without the streamer (the model with the "
                       "prefetchers off: 7.9 and 4.6 GB/s); likwid's 1-core load on a Gold "
                       "6248 reads 12.96 GB/s (RRZE-HPC/kerncraft machine file "
                       "CascadelakeSP_Gold-6248_SNC.yml). Why this box reads less is not found",
    "xpbuffer-early": "16 L2 miss entries bound the stream, but of an XPLine's 4 lines only the "
                      "first waits for the media (305 ns): the next 3 are XPBuffer hits at "
                      "169.4 ns while the XPLine is still being read, so the entries turn over "
                      "every ~230 ns; 16 x 64 B / 305 ns would be 3.36 GB/s",
    "rep-startup": "each rep movsb pays the 40-cycle start-up of [INTEL-OPT] (Nehalem-era; none "
                   "measured for these cores, §13): 8 KiB copies run at 8192 / (8192 / B + 40) "
                   "bytes a cycle for the profile's B",
    "lfence-refill": "an LFENCE waits for every older op, then costs its 4-cycle throughput; the "
                     "~5 more cycles a dependency chain loses behind it on Skylake (the "
                     "front end's refill) are not modelled",
    "bdw-llc-other-machine": "the profile's LLC latency is the E5-2699 v4 server's (38-51 "
                             "cycles, [AT11544]); this row measures the i7-6850K desktop part",
    "bdw-dram-other-machine": "the profile's DRAM latency is the E5-2699 v4 server's (95 ns, "
                              "[AT11544]); this row measures the i7-6850K desktop part",
    "hsw-hitm-assumed": "the profile takes the 18-core E5-2699 v3's own 47.1 ns HITM (its "
                        "assumed CPU); this 12-core Haswell-EP measures 36.6 ns",
    "skx-2socket-flush": "the profile takes the 2-socket Xeon 8160's flush cost (its own "
                         "platform, docs/hardware.md §4.1); this row measures the one-socket "
                         "i9-7900X, about half",
}

# (profile, row name) -> (lo, hi, reason): the ratio range a row outside BAND is known to
# fall in today (its ratio +-10 %, so that a change of the model shows) and why the model
# misses it. `python -m emu.studies.validate --suggest-gaps` regenerates the table.
KNOWN_GAPS = {
    (CLX, "dram-latency-seq"): (0.46, 0.58, REASONS["prefetch-seq"]),
    (CLX, "dram-latency-rand"): (0.71, 0.88, REASONS["dram-one-latency"]),
    (CLX, "optane-latency-seq"): (0.64, 0.8, REASONS["prefetch-seq"]),
    (CLX, "dram-write-clwb-64B"): (1.2, 1.48, REASONS["clwb-rfo-first"]),
    (CLX, "optane-write-clwb-64B"): (1.18, 1.45, REASONS["clwb-rfo-first"]),
    (CLX, "persist-ntstore-64B"): (0.65, 0.8, REASONS["persist-first-lines"]),
    (CLX, "persist-ntstore-128B"): (0.6, 0.75, REASONS["persist-first-lines"]),
    (CLX, "persist-ntstore-256B"): (0.46, 0.58, REASONS["persist-first-lines"]),
    (CLX, "persist-ntstore-512B"): (0.64, 0.8, REASONS["persist-first-lines"]),
    (CLX, "persist-clwb-64B"): (1.73, 2.13, REASONS["clwb-rfo-media"]),
    (CLX, "persist-clwb-128B"): (2.76, 3.39, REASONS["clwb-rfo-media"]),
    (CLX, "persist-clwb-256B"): (3.84, 4.7, REASONS["clwb-rfo-media"]),
    (CLX, "persist-clwb-512B"): (4.5, 5.52, REASONS["clwb-rfo-media"]),
    (CLX, "persist-clwb-1024B"): (3.06, 3.75, REASONS["clwb-rfo-media"]),
    (CLX, "persist-clwb-2048B"): (3.68, 4.51, REASONS["clwb-rfo-media"]),
    (CLX, "persist-clwb-4096B"): (5.19, 6.35, REASONS["clwb-rfo-media"]),
    (CLX, "optane-ntstore-bw-6dimm"): (0.54, 0.68, REASONS["stream-one-dimm"]),
    (CLX, "dram-read-bw"): (1.32, 1.63, REASONS["sq-idle-latency"]),
    (CLX, "dram-read-bw-remote"): (1.37, 1.68, REASONS["sq-idle-latency"]),
    (CLX, "optane-read-bw-6dimm"): (1.39, 1.7, REASONS["xpbuffer-early"]),
    (CLX, "optane-read-bw-1dimm"): (1.37, 1.68, REASONS["xpbuffer-early"]),
    (CLX, "rep-movsb-l1"): (0.69, 0.86, REASONS["rep-startup"]),
    (SKX, "lfence-dependent-chain"): (0.38, 0.48, REASONS["lfence-refill"]),
    (SKX, "rep-movsb-l1"): (0.7, 0.87, REASONS["rep-startup"]),
    (SKX, "clflush-throughput"): (1.81, 2.22, REASONS["skx-2socket-flush"]),
    (SKX, "clflushopt-throughput"): (2.15, 2.64, REASONS["skx-2socket-flush"]),
    (BDW, "llc-latency-i7-6850k"): (0.69, 0.85, REASONS["bdw-llc-other-machine"]),
    (BDW, "dram-latency-ilx"): (1.18, 1.45, REASONS["bdw-dram-other-machine"]),
    (BDW, "rep-movsb-l1"): (0.7, 0.86, REASONS["rep-startup"]),
    (HSW, "hitm-same-socket-2680v3"): (1.15, 1.42, REASONS["hsw-hitm-assumed"]),
}


def profiles():
    """The profiles that have rows, in the order of ROWS."""
    return list(dict.fromkeys(r.profile for r in ROWS))


def select(profile_names=None, only=None):
    """The rows of the given profiles (default: all) named in `only` (default: all)."""
    return [r for r in ROWS if (not profile_names or r.profile in profile_names)
            and (not only or r.name in only)]
