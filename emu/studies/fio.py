"""A fio-like driver: synchronous I/Os of one block size from N identical jobs, on the one
emulated core.

Jobs (docs/scenarios.md §5): the emulator has one core, so the core is one of N identical
jobs and gets 1/N of what the jobs share, through profile overrides (`job_overrides`):
the last-level cache capacity (cache.llc.size_bytes: 1/N of its sets, at least one, same
ways) and the interconnect bandwidth (numa.remote_bw_gbps: 1/N). Media bandwidth is shared
per channel: a streaming job has at most lfb_entries lines in flight, so it occupies
u = min(channels, ceil(lfb_entries * 64 / interleave_bytes)) channels at a time; N jobs
spread evenly put k = ceil(N * u / channels) jobs on each channel, so each media's read and
write bandwidth (media.*.read_bw_gbps, media.*.write_bw_gbps) is divided by k, not by N
(with a 4 KiB interleave, 24 jobs over 6 channels: 4 jobs a channel). Each overridden value
keeps its provenance, saying how it was divided. Aggregate IOPS = N x the one job's.

Per I/O the driver emits the declared costs of profile [software] as WORK ops under their
own sites — "syscall entry/exit" (syscall_entry_exit_ns), "vfs_write" / "vfs_read"
(vfs_*_ns), "fs write_iter" / "fs read_iter" (fs_*_iter_ns) — the same for every variant,
then calls the per-I/O function `io(program, k)`, which emits the rest of the I/O k and
returns the bytes transferred or a negative errno (a FioError then). A read path plugs in
as another `io` with rw="read". A scenario's --bs, --jobs, --ios and --file-size options come
from `add_job_options`, with the scenario's defaults, and have bounds that keep a run's
memory and time bounded: a block is at most the scenarios' 1 GiB user region; a variant's
I/Os are one program in memory (~4 KB an I/O, so at most MAX_IOS) and move at most
MAX_BYTES (--ios x --bs, `check_job_options`); jobs beyond MAX_JOBS, or so many that one
job's share of a value falls below the profile's range for it, are refused.
"""
import errno
from dataclasses import dataclass

from emu.studies.scenarios.common import USER_BYTES, int_in
from isa.program import Program
from memmodel.profile import MAPPED_BYTES, ProfileError, load_profile

RW = ("read", "write")
_DONE = {"read": "read", "write": "written"}
MAX_JOBS = 4096
MAX_IOS = 100_000
MAX_BYTES = 1 << 36   # 64 GiB a variant: minutes of emulation
# The site of the driver's own loop: what runs outside the I/O's functions, and the end of
# the run (the last I/O's stores and memory writes draining, Program.loop).
LOOP_SITE = "fio loop"


class FioError(Exception):
    """A fio job that cannot run: bad options, or an I/O the kernel failed."""


def add_job_options(parser, rw, *, bs, jobs, ios, file_size, why, jobs_help, file_size_note=""):
    """--bs, --jobs, --ios and --file-size of a scenario's fio job doing `rw`s, with its
    defaults. `why` says where the defaults of --bs and --jobs come from ("as published",
    "assumed"), `jobs_help` what the jobs are to the scenario, `file_size_note` is added to
    --file-size's help."""
    parser.add_argument("--bs", type=int_in(1, USER_BYTES), default=bs,
                        help=f"bytes per {rw} (default: %(default)s, {why}); at most {USER_BYTES}")
    parser.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=jobs,
                        help=f"identical fio jobs{jobs_help} (default: %(default)s, {why}); at "
                             f"most {MAX_JOBS}")
    parser.add_argument("--ios", type=int_in(1, MAX_IOS), default=ios,
                        help=f"measured {rw}s per variant, after a tenth as many unmeasured "
                             f"(default: %(default)s); at most {MAX_IOS}, and {MAX_BYTES} bytes "
                             f"with --bs")
    parser.add_argument("--file-size", type=int_in(1, MAPPED_BYTES), default=file_size,
                        help=f"bytes of the file, {_DONE[rw]} sequentially and wrapped "
                             f"(default: %(default)s{file_size_note}); at most the pmem device")


def check_job_options(bs, ios, file_size):
    """FioError unless a block fits the file and the I/Os move at most MAX_BYTES."""
    if file_size < bs:
        raise FioError(f"--bs {bs} is larger than --file-size {file_size}")
    if ios * bs > MAX_BYTES:
        raise FioError(f"--ios {ios} x --bs {bs} is {ios * bs} bytes a variant, more than "
                       f"{MAX_BYTES}")


def _shared_keys(values):
    keys = ["cache.llc.size_bytes", "numa.remote_bw_gbps"]
    for name in values["media"]:
        keys += [f"media.{name}.read_bw_gbps", f"media.{name}.write_bw_gbps"]
    return keys


def job_overrides(profile, overrides, jobs):
    """`overrides` plus the one job's share of what `jobs` identical jobs share."""
    if not isinstance(jobs, int) or jobs < 1:
        raise FioError(f"jobs must be a positive integer, not {jobs!r}")
    out = dict(overrides or {})
    if jobs == 1:
        return out
    prof = load_profile(profile, out or None)
    llc = prof.values["cache"][list(prof.values["cache"])[-1]]
    lfb = prof.values["core"]["lfb_entries"]
    for key in _shared_keys(prof.values):
        value = prof.get(key)
        if key.startswith("cache."):
            sets = value // (64 * llc["ways"])
            share = max(1, sets // jobs) * 64 * llc["ways"]
            how = f"{max(1, sets // jobs)} of its {sets} sets"
        elif key.startswith("media."):
            media = prof.values["media"][key.split(".")[1]]
            chans = media["channels"]
            u = min(chans, -(-lfb * 64 // media["interleave_bytes"]))
            k = -(-jobs * u // chans)
            share, how = value / k, (f"1/{k} (each job streams over {u} of {chans} channels "
                                     f"at a time: {k} jobs a channel)")
        else:
            share, how = value / jobs, f"1/{jobs}"
        src = prof.sources[key]
        kind = "assumption" if src.startswith("assumption") else "source"
        out[key] = {"value": share, kind: f"fio --numjobs={jobs}: the emulated core's share, "
                                          f"{how} of {key} = {value} ({src})"}
    try:   # the caller's overrides passed above: a failure here is a share out of range
        load_profile(profile, out)
    except ProfileError as e:
        raise FioError(f"--jobs: {jobs} jobs sharing the emulated core's caches and bandwidth "
                       f"are too many for the profile, a job's share is out of range: {e}") from None
    return out


@dataclass
class FioResult:
    ios: int
    jobs: int
    cycles: int
    ns_per_io: float
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


def _program(values, io, rw, first, n):
    p = Program(capacity=64 * max(n, 1))
    declared = declared_cycles(values, rw)
    with p.loop(LOOP_SITE):
        for k in range(first, first + n):
            for site, cycles in declared.items():
                with p.function(site):
                    p.work(cycles)
            ret = io(p, k)
            if ret < 0:
                name = errno.errorcode.get(-ret, str(-ret))
                raise FioError(f"I/O {k}: the kernel returned -{name}")
    return p


def run_jobs(machine, io, ios, jobs=1, rw="write", ramp_ios=0):
    """Run `ramp_ios` unmeasured I/Os, then `ios` measured ones, as one of `jobs` jobs (the
    machine must have been built with job_overrides(..., jobs)). Returns a FioResult."""
    if ios < 1:
        raise FioError(f"ios must be at least 1, not {ios}")
    values = machine.profile.values
    if ramp_ios:
        machine.run(_program(values, io, rw, 0, ramp_ios))
    before = machine.stats()
    p = _program(values, io, rw, ramp_ios, ios)
    r = machine.run(p)
    after = machine.stats()
    sites = {}
    for name, d in after["sites"].items():
        cyc = d["cycles"] - before["sites"].get(name, {"cycles": 0})["cycles"]
        if cyc:
            sites[name] = cyc / ios
    media = {n: {k: (v - before["media"][n][k]) / ios for k, v in d.items()}
             for n, d in after["media"].items()}
    ns = r.seconds * 1e9 / ios
    return FioResult(ios=ios, jobs=jobs, cycles=r.cycles, ns_per_io=ns,
                     iops=jobs * 1e9 / ns, sites=sites, media=media)
