"""A fio-like driver: synchronous I/Os of one block size from N identical jobs, C of them on
emulated cores (`--cores`, 1 by default), the others as background traffic.

Jobs (docs/scenarios.md §5): C of the N jobs run on the cores of one Machine(cores=C), each
on its own core with its own buffer and part of the file (the scenario's `io(p, k, job)`
places them), sharing the LLC and the memory side as the hardware's cores do. What all N
jobs share as capacity the C cores get C/N of, through profile overrides
(`job_overrides`): the last-level cache (cache.llc.size_bytes: C/N of its sets, at least
one, same ways) and the interconnect bandwidth (numa.remote_bw_gbps: C/N); each overridden
value keeps its provenance, saying how it was divided. The media the others load: the N-C
other jobs' traffic is background on each media (emu.Machine(background=...)), at the
rate an emulated job itself achieves (reads and writes per media separately), found as a
fixed point (`loaded_run`): run, measure a job's rate, put N-C times it in the background
(at most the media's peak: it then saturates), rerun, until the job's rate is at most the
others' and within TOLERANCE of it (searched on short runs, confirmed on a full one). So N
jobs never move more than the media take (over a run long enough for the media's backlog
to reach the core: a short one sees the background before it builds up). Aggregate IOPS =
N x a job's (the mean of the C cores'). With C = N there is no background: every job is a
core; `--cores` is bounded by the jobs on one socket and the profile's cores per socket.

Per I/O the driver emits the declared costs of profile [software] as WORK ops under their
own sites — "syscall entry/exit" (syscall_entry_exit_ns), "vfs_write" / "vfs_read"
(vfs_*_ns), "fs write_iter" / "fs read_iter" (fs_*_iter_ns) — the same for every variant,
then calls the per-I/O function `io(program, k)`, which emits the rest of the I/O k and
returns the bytes transferred or a negative errno (a FioError then). A read path plugs in
as another `io` with rw="read". A scenario's --bs, --jobs, --ios and --file-size options come
from `job_options`, with the scenario's defaults, and have bounds that keep a run's
memory and time bounded: a block is at most the scenarios' 1 GiB user region; a variant's
I/Os are one program in memory (~4 KB an I/O, so at most MAX_IOS) and move at most
MAX_BYTES (--ios x --bs, `check_job_options`); jobs beyond MAX_JOBS, or so many that one
job's share of a value falls below the profile's range for it, are refused.
"""
import errno
from dataclasses import dataclass

from emu import profiler
from emu.studies.costs import NS, load_profile
from emu.studies.options import Option
from emu.studies.scenarios.common import USER_BYTES
from isa.program import Program
from memmodel.profile import ProfileError
from memmodel.profile_schema import MAPPED_BYTES

RW = ("read", "write")
_DONE = {"read": "read", "write": "written"}
MAX_JOBS = 4096
MAX_IOS = 100_000
MAX_BYTES = 1 << 36   # 64 GiB a variant: minutes of emulation
# The site of the driver's own loop: what runs outside the I/O's functions, and the end of
# the run (the last I/O's stores and memory writes draining, Program.loop).
LOOP_SITE = "fio loop"


# the declared costs the driver emits per I/O (emu.studies.costs), of either direction
COSTS = dict.fromkeys(("syscall_entry_exit_ns", "vfs_read_ns", "vfs_write_ns", "fs_read_iter_ns",
                       "fs_write_iter_ns"), NS)


class FioError(Exception):
    """A fio job that cannot run: bad options, or an I/O the kernel failed."""


def job_options(rw, *, bs, jobs, ios, file_size, why, jobs_help, file_size_note=""):
    """The options bs, jobs, ios and file_size of a scenario's fio job doing `rw`s, with its
    defaults. `why` says where the defaults of bs and jobs come from ("as published",
    "assumed"), `jobs_help` what the jobs are to the scenario, `file_size_note` is added to
    file_size's help."""
    return (
        Option("bs", int, bs, f"bytes per {rw} (default: %(default)s, {why}); at most "
                              f"{USER_BYTES}", low=1, high=USER_BYTES),
        Option("jobs", int, jobs, f"identical fio jobs{jobs_help} (default: %(default)s, {why}); "
                                  f"at most {MAX_JOBS}", low=1, high=MAX_JOBS),
        Option("cores", int, 1, "of the jobs on one socket, those run on emulated cores, each "
                                "its own, sharing the LLC and the media (the others are "
                                "background traffic); at most the jobs and the profile's "
                                "cores per socket (default: %(default)s)", low=1, high=MAX_JOBS),
        Option("ios", int, ios, f"measured {rw}s per variant, after a tenth as many unmeasured "
                                f"(default: %(default)s); at most {MAX_IOS}, and {MAX_BYTES} "
                                f"bytes with --bs", low=1, high=MAX_IOS),
        Option("file_size", int, file_size, f"bytes of the file, {_DONE[rw]} sequentially and "
                                            f"wrapped (default: %(default)s{file_size_note}); "
                                            f"at most the pmem device", low=1, high=MAPPED_BYTES),
    )


def core_file_bytes(file_size, cores):
    """The bytes of each of `cores` jobs' files when they share `file_size`: all of it for
    one, else an equal part in whole pages."""
    return file_size if cores == 1 else file_size // cores // 4096 * 4096


def check_job_options(bs, ios, file_size, cores=1):
    """FioError unless each of `cores` jobs' part of the file holds a block, their buffers
    (a block each, page-aligned) fit the user region and the I/Os move at most MAX_BYTES."""
    if core_file_bytes(file_size, cores) < bs:
        raise FioError(f"--bs {bs} is larger than --file-size {file_size}"
                       + (f"'s part for one of {cores} cores, "
                          f"{core_file_bytes(file_size, cores)} bytes" if cores > 1 else ""))
    if cores * -(-bs // 4096) * 4096 > USER_BYTES:
        raise FioError(f"--cores {cores} buffers of --bs {bs} do not fit the {USER_BYTES}-byte "
                       f"user region")
    if ios * bs * cores > MAX_BYTES:
        raise FioError(f"--ios {ios} x --bs {bs} x --cores {cores} is {ios * bs * cores} bytes "
                       f"a variant, more than {MAX_BYTES}")


SHARED_KEYS = ("cache.llc.size_bytes", "numa.remote_bw_gbps")
TOLERANCE = 0.01        # the fixed point: the job's rate below the others' by at most this
MAX_ITERATIONS = 8      # loaded runs at most (a bracketed secant converges in 3-5)
SEARCH_DIVISOR = 8      # the fixed point is searched on runs of 1/8 of the I/Os


def job_overrides(profile, overrides, jobs, cores=1):
    """`overrides` plus the share of `cores` emulated jobs of what `jobs` identical jobs share
    as capacity (the media's bandwidth is shared through background traffic: loaded_run)."""
    if not isinstance(jobs, int) or jobs < 1:
        raise FioError(f"jobs must be a positive integer, not {jobs!r}")
    out = dict(overrides or {})
    prof = load_profile(profile, out or None)
    check_cores(prof, jobs, cores)
    if jobs == cores:
        return out
    llc = prof.values["cache"][list(prof.values["cache"])[-1]]
    for key in SHARED_KEYS:
        value = prof.get(key)
        if key.startswith("cache."):
            sets = value // (64 * llc["ways"])
            share = max(1, sets * cores // jobs) * 64 * llc["ways"]
            how = f"{max(1, sets * cores // jobs)} of its {sets} sets"
        else:
            share, how = value * cores / jobs, f"{cores}/{jobs}"
        src = prof.sources[key]
        kind = "assumption" if src.startswith("assumption") else "source"
        out[key] = {"value": share, kind: f"fio --numjobs={jobs}: the share of the "
                                          f"{cores} emulated core(s), {how} of {key} = "
                                          f"{value} ({src})"}
    try:   # the caller's overrides passed above: a failure here is a share out of range
        load_profile(profile, out)
    except ProfileError as e:
        raise FioError(f"--jobs: {jobs} jobs sharing the emulated core's caches and bandwidth "
                       f"are too many for the profile, a job's share is out of range: {e}") from None
    return out


def check_cores(prof, jobs, cores):
    """FioError unless 1 <= cores <= jobs and the loaded profile's socket has that many
    cores."""
    most = prof.values["core"].get("cores_per_socket", 1)
    if not isinstance(cores, int) or not 1 <= cores <= min(jobs, most):
        raise FioError(f"--cores {cores}: the jobs on emulated cores are 1 to the jobs "
                       f"({jobs}) and to the profile's cores per socket ({most})")


def _background(values, per_io, others, iops):
    """The media traffic of `others` jobs each doing `iops` I/Os a second of `per_io`
    ({media: (read bytes, write bytes) an I/O}), at most each media's peak."""
    out = {}
    for name, (rd, wr) in per_io.items():
        media = values["media"][name]
        rates = {"read_gbps": min(media["read_bw_gbps"], others * iops * rd / 1e9),
                 "write_gbps": min(media["write_bw_gbps"], others * iops * wr / 1e9)}
        if any(rates.values()):
            out[name] = rates
    return out or None


def loaded_run(run_once, values, jobs, ios, per_socket=None, cores=1):
    """The `cores` emulated jobs as of `jobs`, the others' media traffic theirs: run_once(
    background, n) -> FioResult of n measured I/Os on a fresh machine with that
    Machine(background=...) (None: none). `per_socket`: the jobs that share the job's media
    (default: all). The rate s with s = f(s) (f(s): the rate a job achieves with the
    others at s) is searched on runs of ios // SEARCH_DIVISOR I/Os, then confirmed on a run
    of `ios` (a miss goes on with such runs from there): the result is always a full run.
    Returns (its FioResult, {"iterations": loaded runs, "search_iterations": those of them
    that were short, "background": the result's, "converged": bool}); not converged, of the
    last full run that achieved at most the others' rate."""
    others = (per_socket or jobs) - cores
    if others == 0:
        return run_once(None, ios), {"iterations": 0, "search_iterations": 0,
                                     "background": None, "converged": True}
    short = max(1, ios // SEARCH_DIVISOR)
    first = run_once(None, short)
    per_io = {n: (c["line_reads"] * 64, c["line_writes"] * 64) for n, c in first.media.items()}
    # the emulated jobs move cores x this: the peaks' shares below count them all
    f0 = 1e9 / first.ns_per_io
    # no more than the media take: others + 1 jobs at s fill a media's peak at s_cap, where
    # the job's own share is at most 1/(others + 1) of it, so the root lies below
    peaks = [values["media"][n][key] * 1e9 / b for n, (rd, wr) in per_io.items()
             for key, b in (("read_bw_gbps", rd), ("write_bw_gbps", wr)) if b]
    s0 = min([f0] + [p / (others + cores) for p in peaks])
    found = _fixed_point(lambda bg: run_once(bg, short), values, per_io, others, f0, peaks, s0)
    done = _fixed_point(lambda bg: run_once(bg, ios), values, per_io, others, f0, peaks,
                        found[1])
    r, _, bg, converged, n = done
    return r, {"iterations": found[4] + n, "search_iterations": found[4], "background": bg,
               "converged": converged}


def _fixed_point(run, values, per_io, others, f0, peaks, s):
    """s = f(s) from rate s: f decreasing, a secant kept inside the bracket of the rates
    seen above and below their result (Illinois), until 0 <= s - f(s) <= TOLERANCE x s.
    Returns (the FioResult there, s, its background, converged, runs); not converged, of
    the last run that achieved at most the others' rate."""
    # [s, f(s) - s] with f(s) > s (no background: f(0) = f0), and with f(s) <= s
    lo, hi, side = [0.0, f0], None, 0
    last_hi = None
    # the others alone fill a media at s_sat: a rate above is on the side of f(s) <= s
    s_sat = min(peaks, default=f0) / others
    for it in range(1, MAX_ITERATIONS + 1):
        bg = _background(values, per_io, others, s)
        r = run(bg)
        fs = 1e9 / r.ns_per_io
        # done on the side where the others run at least at the job's rate: the job and
        # they then move no more than the media take (fs + others x s), so N x fs neither
        if 0 <= s - fs <= TOLERANCE * s:
            return r, s, bg, True, it
        # Illinois: an end kept twice in a row has its value halved, so the secant moves it
        if fs > s:
            lo = [s, fs - s]
            if side > 0 and hi:
                hi[1] /= 2
            side = 1
        else:
            hi, last_hi = [s, fs - s], (r, s, bg)
            if side < 0 and lo:
                lo[1] /= 2
            side = -1
        if hi is None:
            s = min(fs, s_sat)
        else:   # the secant through the bracket's ends, its root inside it
            s = lo[0] - lo[1] * (hi[0] - lo[0]) / (hi[1] - lo[1])
    r, s, bg = last_hi or (r, s, bg)
    return r, s, bg, False, MAX_ITERATIONS


@dataclass
class FioResult:
    ios: int
    jobs: int
    cycles: int
    ns_per_io: float     # a job's, the mean of the emulated cores'
    iops: float
    sites: dict          # function -> cycles per I/O (self time)
    media: dict          # media -> counters per I/O


def declared_cycles(values, rw):
    """The [software] costs of one I/O in cycles: {site: cycles}."""
    if rw not in RW:
        raise FioError(f"rw must be one of {RW}, not {rw!r}")
    sw, ghz = values["software"], values["core"]["freq_ghz"]
    return {"syscall entry/exit": round(sw["syscall_entry_exit_ns"] * ghz),
            f"vfs_{rw}": round(sw[f"vfs_{rw}_ns"] * ghz),
            f"fs {rw}_iter": round(sw[f"fs_{rw}_iter_ns"] * ghz)}


def _program(values, io, rw, first, n, job):
    p = Program(capacity=64 * max(n, 1), line_ips=True)
    declared = declared_cycles(values, rw)
    with p.loop(LOOP_SITE):
        for k in range(first, first + n):
            for site, cycles in declared.items():
                with p.function(site):
                    p.work(cycles)
            ret = io(p, k, job)
            if ret < 0:
                name = errno.errorcode.get(-ret, str(-ret))
                raise FioError(f"I/O {k}: the kernel returned -{name}")
    return p


def run_jobs(machine, io, ios, jobs=1, rw="write", ramp_ios=0):
    """Run `ramp_ios` unmeasured I/Os, then `ios` measured ones, of each of the machine's
    cores, as `jobs` jobs (the machine built with job_overrides(..., jobs, cores)); job j's
    I/O k is io(p, k, j). Returns a FioResult (per I/O of one job)."""
    if ios < 1:
        raise FioError(f"ios must be at least 1, not {ios}")
    cores = machine.cores
    profiler.units((ramp_ios + ios) * cores, "I/O")
    values = machine.profile.values

    def run(first, n):
        programs = [_program(values, io, rw, first, n, j) for j in range(cores)]
        return machine.run(programs[0] if cores == 1 else programs)

    if ramp_ios:
        run(0, ramp_ios)
    before = machine.stats()
    r = run(ramp_ios, ios)
    after = machine.stats()
    sites = {}
    for name, d in after["sites"].items():
        cyc = d["cycles"] - before["sites"].get(name, {"cycles": 0})["cycles"]
        if cyc:
            sites[name] = cyc / (ios * cores)
    media = {n: {k: (v - before["media"][n][k]) / (ios * cores) for k, v in d.items()}
             for n, d in after["media"].items()}
    seconds = [c.seconds for c in r.cores] if cores > 1 else [r.seconds]
    ns = sum(seconds) / cores * 1e9 / ios
    return FioResult(ios=ios, jobs=jobs, cycles=r.cycles, ns_per_io=ns,
                     iops=jobs * 1e9 / ns, sites=sites, media=media)
