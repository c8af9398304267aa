"""The rows of `emu validate`: each measurement of docs/hardware.md it reproduces, with its
source, its role (a prediction, or the calibration of the profile key whose value came from
it), the machine setting it was measured with and the benchmark (benchmarks.py) that
emulates it (ROWS); the rows known to miss the band (BAND, emu.studies.published's) today and
why (KNOWN_GAPS, REASONS). docs/validation.md "After a change of the model" says how to
update them."""
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from emu.machine import Machine
from emu.studies.published import BAND
from emu.studies.validate.benchmarks import (
    bandwidth,
    chase_cycles,
    chase_ns,
    ewr,
    fence_cycles,
    flush_cycles,
    c2c_ns,
    lfence_extra_cycles,
    locked_rmw_cycles,
    persist_ns,
    rep_movsb_bytes_per_cycle,
    stream_kernel,
)
from isa.ops import Op

CLX, SKX, BDW, HSW = "cascadelake-optane", "skylake-ddr4", "broadwell-ddr4", "haswell-nvdimm-n"
HW = "docs/hardware.md"


# The profile keys of the hardware prefetchers, set as a measuring tool sets them (the LLC
# has none in any profile).
PREFETCHERS_OFF = (("cache.l1d.prefetcher", "none"), ("cache.l2.prefetcher", "none"))


@dataclass(frozen=True)
class Row:
    """A measurement of docs/hardware.md and how to emulate it. `bench` returns the
    emulated value from a fresh Machine, or is the reason the row cannot run. `measured`
    is the published number (the midpoint of a published range, which `source` quotes);
    `curve` places the row on a plotted curve: (curve name, x).

    `calibrates`: the profile key (dotted) whose value was taken from this same measurement,
    which the row then only reads back: a calibration, not a prediction (role).
    `overrides`: the machine setting the measurement had, as (profile key, value) pairs
    (e.g. PREFETCHERS_OFF where the tool turns the prefetchers off); `other`: where the
    tool does not document a setting the row depends on, a second reading (label,
    overrides) reported beside the row's own (docs/validation.md "Machine setting").
    `cores`, `sockets`: the Machine's (Machine(cores=..., sockets=...)), for a measurement
    between cores."""
    profile: str
    name: str
    measured: float
    unit: str
    source: str
    bench: Callable[[Machine], float] | str
    curve: tuple[str, int] | None = None
    calibrates: str | None = None
    overrides: tuple[tuple[str, object], ...] = ()
    other: tuple[str, tuple[tuple[str, object], ...]] | None = None
    cores: int = 1
    sockets: int = 1

    @property
    def role(self):
        return "calibration" if self.calibrates else "prediction"


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
HSW2630V3 = "E5-2630 v3 (Haswell-EP): the closest profile"
HSW2660V3 = "E5-2660 v3 (Haswell-EP): the closest profile"
HSW2695 = "E5-2695 v3 (Haswell-EP, 14 cores): the closest profile"
BDW1540 = "Xeon D-1540 (Broadwell-DE): the closest profile"
BDW2630 = "E5-2630 v4 (Broadwell-EP): the closest profile"
SKX8160 = "2x Platinum 8160 (Skylake-SP): the closest profile"
SKX6148 = "Gold 6148 (Skylake-SP): the closest profile"
CLX6248 = ("Gold 6248 (Cascade Lake, Sub-NUMA Clustering on: one core reads its cluster's "
           "3 channels): the closest profile")

# §9.1 (= [YA20 Fig.12]): bytes -> (ntstore + sfence ns, store + clwb + sfence ns)
PERSIST_CURVE = {64: (124.7, 116.4), 128: (134.7, 133.7), 256: (212.0, 192.5),
                 512: (304.7, 327.9), 1024: (484.0, 601.0), 2048: (853.5, 1015.2),
                 4096: (1550.6, 1774.2)}
PERSIST_PATHS = {"ntstore": "ntstore + sfence", "clwb": "store + clwb + sfence"}


def _lat(name, measured, unit, tag, where, bench, **kw):
    """A row of the Optane box measured by LATTester ([YA20], [OPTSTUDY]): run as its
    sample run script sets the machine (LATTESTER)."""
    return Row(CLX, name, measured, unit, _src(tag, where, BOX) + "; " + LATTESTER, bench,
               overrides=PREFETCHERS_OFF, other=_ON, **kw)


def _persist_rows():
    return [_lat(f"persist-{path}-{n}B", PERSIST_CURVE[n][i], "ns",
                 "[YA20 Fig.12; OPTSTUDY 12-flush_instr_lat]", "§9.1, §1.1",
                 partial(persist_ns, region="pmem0", path=path, nbytes=n),
                 curve=(PERSIST_PATHS[path], n))
            for i, path in enumerate(PERSIST_PATHS) for n in PERSIST_CURVE]


# The profile key each instruction row reads back where the profile took its value from the
# same [ILX] dump (calibrated=True).
_INSTR_KEYS = {"lfence": "lfence_cycles", "sfence": "sfence_cycles", "mfence": "mfence_cycles",
               "clflush": "clflush_cycles", "clflushopt": "clflushopt_cycles",
               "clwb": "clwb_cycles", "rep-movsb": "rep_movsb_bytes_per_cycle",
               "locked": "lock_rmw_cycles"}


def _instruction_rows(profile, tag, machine, lfence=None, sfence=None, mfence=None,
                      clflush=None, clflushopt=None, clwb=None, movsb=None, locked=None,
                      movsb_where="§4", calibrated=True, suffix="", where="§4"):
    """The §4 instruction rows (and §11's locked RMW) of one [ILX] dump; None: not measured
    there. calibrated: the profile's instr.* values were taken from this dump (True: all of
    them; else the kinds, e.g. ("clflush",), whose values were)."""
    def row(kind, name, value, unit, bench, at):
        taken = calibrated if isinstance(calibrated, bool) else kind in calibrated
        key = f"instr.{_INSTR_KEYS[kind]}" if taken else None
        return Row(profile, name + suffix, value, unit, _src(tag, at, machine), bench,
                   calibrates=key)
    rows = [row(kind, f"{kind}-throughput", value, "cycles", partial(fence_cycles, op=op),
                where + (", §7.2" if kind == "lfence" else ""))
            for kind, value, op in (("lfence", lfence, Op.LFENCE), ("sfence", sfence, Op.SFENCE),
                                    ("mfence", mfence, Op.MFENCE)) if value is not None]
    rows += [row(kind, f"{kind}-throughput", value, "cycles", partial(flush_cycles, op=op), where)
             for kind, value, op in (("clflush", clflush, Op.CLFLUSH),
                                     ("clflushopt", clflushopt, Op.CLFLUSHOPT),
                                     ("clwb", clwb, Op.CLWB)) if value is not None]
    if movsb is not None:
        rows.append(row("rep-movsb", "rep-movsb-l1", movsb, "B/cycle r+w",
                        rep_movsb_bytes_per_cycle, movsb_where))
    if locked is not None:
        rows.append(row("locked", "locked-rmw-latency", locked, "cycles", locked_rmw_cycles,
                        "§11: LOCK ADD / XCHG m64"))
    return rows


def _chase(region, pattern):
    return partial(chase_ns, region=region, pattern=pattern)


# MLC turns the hardware prefetchers off for its latency and c2c tests when it can write
# their MSR (root and the msr module); when it cannot, its output says so and it reads in a
# random order with them on (docs/validation.md "Machine setting").
MLC_OFF = "MLC ran as root, no warning: prefetchers off for latency and c2c (MLC's default)"
MLC_ON = "MLC's output: 'Unable to modify prefetchers', random access: prefetchers on"
MLC_UNKNOWN = ("the MLC output was not reachable to see whether MLC could turn the "
               "prefetchers off: run with them on, prefetchers-off reading beside it")
LATTESTER = ("LATTester: prefetchers off, as OptaneStudy's sample run script sets them "
             "(src/testscript/run.example.sh, wrmsr 0x1a4 0xf); [YA20] does not restate it: "
             "prefetchers-on reading beside it")
_OTHER = ("prefetchers off", PREFETCHERS_OFF)
_ON = ("prefetchers on", ())


def _setting(prefetchers):
    """A row's machine setting and second reading for a tool whose prefetcher setting is
    "off", "on" or "unknown"."""
    return {"off": {"overrides": PREFETCHERS_OFF}, "on": {},
            "unknown": {"other": _OTHER}}[prefetchers]


def _mlc_rows(profile, tag, machine, local, remote, hitm=None, hit=None, rhitm=None,
              suffix="", prefetchers="off", calibrates=()):
    """An MLC output's idle latencies (§10), same-socket HITM and HIT and remote HITM,
    writer-homed (§12); `calibrates`: the profile keys taken from this output, for local,
    remote, HITM, HIT and remote HITM."""
    note = {"off": MLC_OFF, "on": MLC_ON, "unknown": MLC_UNKNOWN}[prefetchers]
    keys = dict(zip(("local", "remote", "hitm", "hit", "rhitm"), calibrates))
    rows = [Row(profile, f"dram-latency-mlc{suffix}", local, "ns",
                _src(tag, "§10: local idle", machine) + "; " + note, _chase("dram0", "random"),
                calibrates=keys.get("local"), **_setting(prefetchers)),
            Row(profile, f"dram-latency-remote-mlc{suffix}", remote, "ns",
                _src(tag, "§10: remote idle", machine) + "; " + note,
                _chase("dram1", "random"), calibrates=keys.get("remote"),
                **_setting(prefetchers))]
    for kind, value, modified in (("hitm", hitm, True), ("hit", hit, False)):
        if value is not None:
            rows.append(Row(profile, f"{kind}-same-socket{suffix}", value, "ns",
                            _src(tag, f"§12: L2->L2 {kind.upper()}", machine) + "; " + note,
                            partial(c2c_ns, modified=modified), calibrates=keys.get(kind),
                            cores=2, **_setting(prefetchers)))
    if rhitm is not None:
        rows.append(_rhitm_row(profile, f"hitm-remote-socket{suffix}", rhitm,
                               _src(tag, "§12: remote HITM, writer-homed", machine) + "; " + note,
                               keys.get("rhitm"), **_setting(prefetchers)))
    return rows


def _rhitm_row(profile, name, measured, source, calibrates=None, **setting):
    """MLC's remote HITM, writer-homed: the writer (core 1, the second socket) modifies lines
    of its own node's memory, the reader (core 0, the first socket) reads them."""
    return Row(profile, name, measured, "ns", source,
               partial(c2c_ns, modified=True, region="dram1"), calibrates=calibrates,
               cores=2, sockets=2, **setting)


def _bw(region, kind, dimms=None):
    return partial(bandwidth, region=region, kind=kind, dimms=dimms)


def _persist(region, path):
    # [YA20] Fig.2's 64 B store + clwb + fence (57-62 ns) is below any media read: its
    # stored lines were cached (benchmarks.persist_ns)
    return partial(persist_ns, region=region, path=path, nbytes=64, cached=True)


def _likwid_rows(profile, machine, **gbps):
    """likwid-bench's single-core kernels streaming from memory (§14.2): GB/s of the
    kernel's own streams, stores write-allocate; the prefetchers as the machine ran."""
    src = _src("[KERNCRAFT]", "§14.2: likwid-bench, 1 core, MEM", machine)
    return [Row(profile, f"likwid-{kernel}-bw", value, "GB/s", src,
                partial(stream_kernel, kernel=kernel)) for kernel, value in gbps.items()]


_FIG2 = "[YA20 Fig.2; OPTSTUDY 02-best_case_latency]"
_BWCSV = "[OPTSTUDY bandwidth.csv]"
ROWS = [
    # -- cascadelake-optane: the Optane box of [YA20] (§1, §2, §8.4, §9), MLC-CLX (§2, §10,
    #    §12), [ILX] CascadeLakeXeon (§4, §11, §13)
    # (the profile cites dram-latency-seq's 81.4 ns beside MLC-CLX's 80.8, the value it took)
    _lat("dram-latency-seq", 81.4, "ns", _FIG2, "§1.1, §2", _chase("dram0", "sequential")),
    _lat("dram-latency-rand", 101.5, "ns", _FIG2, "§1.1, §2", _chase("dram0", "random")),
    _lat("optane-latency-seq", 169.4, "ns", _FIG2, "§1.1", _chase("pmem0", "sequential"),
         calibrates="media.optane.buffer_read_latency_ns"),
    _lat("optane-latency-rand", 305.0, "ns", _FIG2, "§1.1", _chase("pmem0", "random"),
         calibrates="media.optane.read_latency_ns"),
    Row(CLX, "optane-latency-iz19", 346.0, "ns",
        _src("[IZ19 abstract]", "§1.1: headline read latency", "the same UCSD Optane box "
             "(this profile's machine); tool and prefetcher setting not recorded: a random "
             "chase, prefetchers-off reading beside it"), _chase("pmem0", "random"),
        other=_OTHER),
    *_mlc_rows(CLX, "[MLC-CLX]", CLX6240, local=80.8, remote=140.4, hitm=49.3, hit=48.8,
               rhitm=_mid(113.2, 114.1), prefetchers="on",
               calibrates=("media.dram.read_latency_ns", "numa.remote_latency_ns",
                           "cache.llc.peer_hitm_ns", "cache.llc.peer_hit_ns",
                           "cache.llc.remote_hitm_ns")),
    *_mlc_rows(CLX, "MLC (CSIT calib_clx)", CLX6252, local=81.2, remote=130.2, hitm=55.6,
               hit=55.5, rhitm=115.6, suffix="-6252n"),
    _lat("dram-write-ntstore-64B", 86.9, "ns", _FIG2, "§1.1", _persist("dram0", "ntstore"),
         calibrates="media.dram.wc_ack_ns"),
    _lat("dram-write-clwb-64B", 57.3, "ns", _FIG2, "§1.1", _persist("dram0", "clwb"),
         calibrates="media.dram.write_accept_ns"),
    _lat("optane-write-ntstore-64B", 90.4, "ns", _FIG2, "§1.1", _persist("pmem0", "ntstore"),
         calibrates="media.optane.wc_ack_ns"),
    _lat("optane-write-clwb-64B", 62.3, "ns", _FIG2, "§1.1", _persist("pmem0", "clwb"),
         calibrates="media.optane.write_accept_ns"),
    *_persist_rows(),
    _lat("dram-read-bw", 7.4, "GB/s", "[YA20 Fig.4]", "§2, §1.2: 1 thread", _bw("dram0", "read")),
    _lat("dram-read-bw-remote", _mid(3.9, 4.8), "GB/s", _BWCSV,
         "§8.4: rdram load, 1 thread, 3.9 (64 B) .. 4.8", _bw("dram1", "read")),
    _lat("dram-ntstore-bw", _mid(4.53, 4.60), "GB/s", _BWCSV, "§8.4: ldram, 1 thread, 4.53-4.60",
         _bw("dram0", "ntstore"), calibrates="media.dram.wc_hold_ns"),
    _lat("dram-ntstore-bw-remote", _mid(2.24, 2.30), "GB/s", _BWCSV,
         "§8.4, §10: rdram, 1 thread, 2.24-2.30", _bw("dram1", "ntstore"),
         calibrates="numa.remote_hold_ns"),
    _lat("optane-read-bw-6dimm", 2.88, "GB/s", "[YA20 Fig.4]",
         "§1.2: 6 DIMMs interleaved, 1 thread", _bw("pmem0", "read")),
    _lat("optane-read-bw-1dimm", 2.92, "GB/s", "[YA20 Fig.4]", "§1.2: 1 DIMM, 1 thread",
         _bw("pmem0", "read", dimms=1)),
    _lat("optane-ntstore-bw-6dimm", _mid(4.23, 4.36), "GB/s", _BWCSV,
         "§8.4: lpmem interleaved, 1 thread, 4.23-4.36", _bw("pmem0", "ntstore")),
    _lat("optane-ntstore-bw-1dimm", _mid(2.26, 2.28), "GB/s", _BWCSV,
         "§8.4: lpmem 1 DIMM, 1 thread, 2.26-2.28", _bw("pmem0", "ntstore", dimms=1)),
    _lat("optane-ewr-64B", 0.247, "ratio", _BWCSV,
         "§1.3: random 64 B NT writes, 6 DIMMs, median over thread counts",
         partial(ewr, nbytes=64)),
    _lat("optane-ewr-256B", 0.986, "ratio", _BWCSV,
         "§1.3: random 256 B NT writes, 6 DIMMs, median over thread counts",
         partial(ewr, nbytes=256)),
    *_instruction_rows(CLX, "[ILX CascadeLakeXeon]", CLX8280, lfence=4.25, sfence=6.0,
                       mfence=33.3, clflush=_mid(88, 109), clflushopt=_mid(58, 69),
                       clwb=_mid(1.0, 1.1), movsb=58.72, movsb_where="§13, §4", locked=18.0),
    *_likwid_rows(CLX, CLX6248, load=12.96, copy=14.56),

    # -- skylake-ddr4: [ILX] SkylakeX (§3, §4, §11), Skylake-SP servers (§2, §10, §12)
    Row(SKX, "l1d-latency", 4, "cycles", _src("[ILX SkylakeX NewMemLat]", "§3", SKX7900),
        partial(chase_cycles, nbytes=16 << 10), calibrates="cache.l1d.hit_cycles"),
    Row(SKX, "l2-latency", 14, "cycles", _src("[ILX SkylakeX NewMemLat]", "§3", SKX7900),
        partial(chase_cycles, nbytes=512 << 10), calibrates="cache.l2.hit_cycles"),
    Row(SKX, "llc-latency", _mid(67, 75), "cycles",
        _src("[ILX SkylakeX NewMemLat]", "§3: 67-75 at 2-8 MiB", SKX7900),
        partial(chase_cycles, nbytes=4 << 20), calibrates="cache.llc.hit_cycles"),
    Row(SKX, "llc-latency-anandtech", 77, "cycles",
        _src("[AT11550]", "§3: 77", "Skylake-X (the review's part): the closest profile; "
             "the profile's 70 is [ILX]'s 67-75, this figure only cited beside it"),
        partial(chase_cycles, nbytes=4 << 20)),
    Row(SKX, "dram-latency-ilx", 85, "ns",
        _src("[ILX SkylakeX NewMemLat]", "§3: ~280 cycles at 3.3 GHz (~85 ns), 512 MiB",
             SKX7900), _chase("dram0", "random")),
    Row(SKX, "dram-latency-lmbench", _mid(89, 91), "ns",
        _src("[AT11544]", "§2: 89-91 ns, 384-512 MB", "Skylake-SP: this profile's source"),
        _chase("dram0", "random"), calibrates="media.dram.read_latency_ns"),
    *_mlc_rows(SKX, "MLC (CSIT calib_skx)", SKX8180, local=81.1, remote=144.5, hitm=50.3,
               hit=50.3, rhitm=_mid(108.5, 108.6)),
    *_mlc_rows(SKX, "MLC (hpcleuven skylake_mlc.txt)", SKX6140, local=90.2, remote=144.3,
               hitm=49.9, hit=50.5, rhitm=_mid(114.0, 114.6), suffix="-6140", prefetchers="on",
               calibrates=(None, "numa.remote_latency_ns", "cache.llc.peer_hitm_ns",
                           "cache.llc.peer_hit_ns", "cache.llc.remote_hitm_ns")),
    Row(SKX, "lfence-dependent-chain", 9.3, "cycles",
        _src("[SO-LFENCE]", "§4, §7.2: extra cycles per LFENCE", "Skylake: the closest profile"),
        lfence_extra_cycles, calibrates="instr.lfence_refill_cycles"),
    # the flushes of the profile's own 2-socket part (the 8160), the rest the i9-7900X's
    *_instruction_rows(SKX, "[ILX SkylakeX]", SKX7900, lfence=4.25, sfence=6.0, mfence=33.5,
                       clflush=117, clflushopt=66, clwb=1.25, movsb=56.7, locked=18.1,
                       calibrated=("lfence", "sfence", "mfence", "clwb", "rep-movsb", "locked")),
    *_instruction_rows(SKX, "[ILX Xeon 8160]", SKX8160, clflush=236.0, clflushopt=158.3,
                       clwb=0.39, calibrated=("clflush", "clflushopt"), suffix="-8160",
                       where="§14.1"),
    *_likwid_rows(SKX, SKX6148, load=14.32, copy=13.08),

    # -- broadwell-ddr4: [ILX] BroadwellE (§3, §4, §11), Broadwell-EP servers (§2, §3, §12)
    Row(BDW, "l1d-latency", 4, "cycles", _src("[ILX BroadwellE NewMemLat]", "§3", BDW6850),
        partial(chase_cycles, nbytes=16 << 10), calibrates="cache.l1d.hit_cycles"),
    Row(BDW, "l2-latency", 12, "cycles", _src("[ILX BroadwellE NewMemLat]", "§3", BDW6850),
        partial(chase_cycles, nbytes=128 << 10), calibrates="cache.l2.hit_cycles"),
    Row(BDW, "llc-latency", _mid(38, 51), "cycles", _src("[AT11544]", "§3: 38-51", BDW2699),
        partial(chase_cycles, nbytes=4 << 20), calibrates="cache.llc.hit_cycles"),
    Row(BDW, "llc-latency-i7-6850k", _mid(56, 58), "cycles",
        _src("[ILX BroadwellE NewMemLat]", "§3: 56-58", BDW6850),
        partial(chase_cycles, nbytes=4 << 20)),
    Row(BDW, "dram-latency-ilx", _mid(70, 74), "ns",
        _src("[ILX BroadwellE NewMemLat]", "§3: ~252-265 cycles at 3.6 GHz (~70-74 ns), "
             "512 MiB", BDW6850), _chase("dram0", "random")),
    Row(BDW, "dram-latency-lmbench", 95, "ns", _src("[AT11544]", "§2: 384-512 MB", BDW2699),
        _chase("dram0", "random"), calibrates="media.dram.read_latency_ns"),
    Row(BDW, "hitm-same-socket", 39.2, "ns",
        _src("MLC (hpcleuven broadwell_mlc.txt)", "§12", BDW2680) + "; " + MLC_UNKNOWN,
        partial(c2c_ns, modified=True), other=_OTHER, cores=2),
    Row(BDW, "hit-same-socket", 34.4, "ns",
        _src("MLC (hpcleuven broadwell_mlc.txt)", "§12", BDW2680) + "; " + MLC_UNKNOWN,
        partial(c2c_ns, modified=False), other=_OTHER, cores=2),
    _rhitm_row(BDW, "hitm-remote-socket", _mid(77.5, 85.5),
               _src("MLC (hpcleuven broadwell_mlc.txt)", "§12: remote HITM, writer-homed",
                    BDW2680) + "; " + MLC_UNKNOWN, other=_OTHER),
    *_instruction_rows(BDW, "[ILX BroadwellE]", BDW6850, lfence=4.25, sfence=6.0, mfence=33.3,
                       clflush=106, movsb=57.4, locked=19.0),
    *_instruction_rows(BDW, "[ILX Broadwell-DE D-1540]", BDW1540, clflush=93.7,
                       calibrated=False, suffix="-d1540", where="§14.1"),
    *_likwid_rows(BDW, BDW2630, load=7.98, copy=6.33, update=10.81, triad=7.01),

    # -- haswell-nvdimm-n: Haswell-EP MLC outputs (§10, §12), [ILX] HaswellEP (§7.2, §11,
    #    §14.1); its fences, locked RMW and CLFLUSH (the E5-2660 v3's) are these dumps', its
    #    idle latencies and HITM the E5-2699 v3 MLC output's
    *_mlc_rows(HSW, "MLC (CSIT calib_hsw)", HSW2699, local=97.5, remote=139.6, hitm=47.1,
               hit=42.2, rhitm=_mid(106.5, 106.7),
               calibrates=("media.dram.read_latency_ns", "numa.remote_latency_ns",
                           "cache.llc.peer_hitm_ns", "cache.llc.peer_hit_ns",
                           "cache.llc.remote_hitm_ns")),
    *_mlc_rows(HSW, "MLC (hpcleuven haswell_mlc.txt)", HSW2680, local=92.1, remote=127.1,
               hitm=36.6, hit=33.2, rhitm=_mid(75.7, 75.8), suffix="-2680v3",
               prefetchers="unknown"),
    *_mlc_rows(HSW, "MLC (cs499-fa22 hw1 README)", HSW2630, local=93.5, remote=133.8,
               suffix="-2630v3", prefetchers="unknown"),
    *_instruction_rows(HSW, "[ILX HaswellEP]", HSW26x0, lfence=_mid(4.25, 4.26), sfence=6.0,
                       mfence=_mid(33.25, 33.5), where="§14.1"),
    Row(HSW, "locked-rmw-latency", 19.0, "cycles",
        _src("[ILX HaswellEP]", "§11: LOCK ADD / XCHG m64", HSW26x0), locked_rmw_cycles,
        calibrates="instr.lock_rmw_cycles"),
    *_instruction_rows(HSW, "[ILX HaswellEP E5-2630 v3]", HSW2630V3, clflush=82.3,
                       calibrated=False, where="§14.1"),
    *_instruction_rows(HSW, "[ILX HaswellEP E5-2660 v3]", HSW2660V3, clflush=192.1,
                       suffix="-2660v3", where="§14.1"),
    *_likwid_rows(HSW, HSW2695, load=8.93, copy=8.35, update=13.89, triad=9.70),
]



def profiles():
    """The profiles that have rows, in the order of ROWS."""
    return list(dict.fromkeys(r.profile for r in ROWS))


def select(profile_names=None, only=None):
    """The rows of the given profiles (default: all) named in `only` (default: all)."""
    return [r for r in ROWS if (not profile_names or r.profile in profile_names)
            and (not only or r.name in only)]
