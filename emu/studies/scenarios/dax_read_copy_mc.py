"""Scenario `dax-read-copy-mc`: machine-check-safe copies on DAX reads (Optane).

The published case (docs/scenarios.md §5) is a kernel test robot fio run: 2 MiB libaio reads from
a 200 GB file on XFS with DAX over two pmem namespaces, 48 jobs, on a 2-socket Cascade Lake
(Xeon Gold 6252, 2.1 GHz). Per read the kernel copies pmem to the user buffer through
copy_mc_to_user (kernels/read_write.py -> kernels/dax.py -> kernels/iov_iter.py
`_copy_mc_to_iter` -> kernels/copy_mc.py). Variants: `fragile` (the fragile static key is on,
as on Optane platforms: copy_mc_fragile's 8-byte careful loop), `generic` (key off, ERMS:
copy_mc_enhanced_fast_string, one rep movsb) and `fragile+generic-bug` (the proposed version
that ran copy_mc_fragile and then also the generic copy). Metric `iops`, aggregate over the
jobs, with `ns_per_io` and the cycles per I/O of each function.

Jobs: the emulator has one core. The jobs are assumed spread evenly over the profile's sockets
(NUMA nodes), one namespace per socket, each job reading its own file sequentially on its own
socket's namespace; so the core is one of jobs/sockets jobs sharing a socket and gets that share
of the LLC, and the other jobs of its socket load its media at its own rate (emu/studies/fio.py
job_overrides, loaded_run); the aggregate is `jobs` times its IOPS. On a DAX file libaio's reads
complete inside io_submit (the copy runs in the submitting thread), so each I/O is modelled as
one synchronous read with the declared syscall, VFS and file-system read costs (profile
[software]).

`--poison OFFSET` also injects poison into the pmem line holding that byte of the file (not
in the driver's badblocks list: latent poison) and reads its block once per variant: each
copy_mc variant returns a short read, the bytes before the poisoned line intact, while a
plain memcpy of the same block stops with an unrecoverable machine check.
"""
import math

import numpy as np

from emu import profiler
from emu.results import MachineCheck
from emu.studies import fio
from emu.studies.costs import load_profile
from emu.studies.fio import (
    FioError,
    check_job_options,
    job_options,
    job_overrides,
    loaded_run,
    run_jobs,
)
from emu.studies import peaks
from emu.studies.options import Option
from emu.studies.progress import progress
from emu.studies.scenarios.common import functions_table
from emu.studies.scenarios.dax_write_usercopy import dax_machine
from isa import Program
from kernels.copy_mc import CopyMc
from kernels.iov_iter import copied
from kernels.read_write import ksys_pread64
from memmodel.profile import sockets as profile_sockets
from memmodel.profile_schema import MAPPED_BYTES

NAME = "dax-read-copy-mc"
DEFAULT_PROFILE = "cascadelake-optane"
VARIANTS = {"fragile": CopyMc(fragile_key=True), "generic": CopyMc(fragile_key=False),
            "fragile+generic-bug": CopyMc(fragile_key=True, bug=True)}
METRIC = "iops"
COSTS = fio.COSTS
SENSITIVE = ("software.syscall_entry_exit_ns", "software.vfs_read_ns",
             "software.fs_read_iter_ns", "media.optane.read_latency_ns",
             "media.optane.buffer_read_latency_ns", "media.optane.read_bw_gbps",
             "media.dram.write_bw_gbps", "core.lfb_entries", "core.rob_entries",
             "instr.rep_movsb_bytes_per_cycle", "instr.rep_movsb_startup_cycles",
             "core.freq_ghz")


OPTIONS = job_options("read", bs=2 << 20, jobs=48, ios=40, file_size=256 << 20,
                      why="as published", jobs_help=" over the sockets",
                      file_size_note="; the published 200 GB file is far larger than the LLC "
                                     "either way") + (
    Option("poison", int, None, "also poison the pmem line holding this byte of the file and "
                                "show what each copy returns", low=0, high=MAPPED_BYTES,
           metavar="OFFSET"),
)


def sockets(profile, overrides):
    return profile_sockets(load_profile(profile, overrides or None).values)


def _rig(profile, overrides, copy_mc, file_size, bs, background=None, cores=1):
    m, files, user, media = dax_machine(profile, overrides, "dev", False, file_size, copy_mc,
                                        background, cores)
    data_start = files[0].dax.pmem.virt_addr + files[0].dax.pmem.data_offset
    ranges = [(user["base"], user["base"] + user["size_bytes"])]
    if user["size_bytes"] < bs:
        raise FioError(f"--bs {bs} is larger than the {user['size_bytes']}-byte user buffer")
    return m, files, user["base"], ranges, data_start, media


def run_variant(profile, overrides, variant, bs, jobs, ios, file_size, cores=1):
    profiler.label(variant)
    check_job_options(bs, ios, file_size, cores)
    per_socket = math.ceil(jobs / sockets(profile, overrides))
    shared = job_overrides(profile, overrides, per_socket, cores)
    # each emulated job reads its own file (dax_machine) into its own buffer
    stride = -(-bs // 4096) * 4096
    ramp = max(1, ios // 10)
    names = {}

    def run_once(background, n):
        m, files, buf, ranges, data_start, names["pmem"] = _rig(
            profile, shared, VARIANTS[variant], -(-file_size // 4096) * 4096, bs, background,
            cores)
        blocks = files[0].size // bs   # at least one: check_job_options

        def io(p, k, job):
            return ksys_pread64(p, files[job], buf + job * stride, bs, (k % blocks) * bs,
                                ranges)[0]

        return run_jobs(m, io, n, jobs, "read", ramp_ios=ramp)

    # the others on the job's socket load its media; the other sockets' jobs their own
    values = load_profile(profile, shared or None).values
    r, loaded = loaded_run(run_once, values, jobs, ios, per_socket, cores)
    # the jobs read the namespaces of as many sockets as they are spread over
    used = min(jobs, sockets(profile, overrides))
    return {"iops": r.iops, "ns_per_io": r.ns_per_io, "cycles_per_io": r.cycles / ios,
            "gbytes_per_s": r.iops * bs / 1e9,
            "bandwidth": peaks.check(r.iops * bs / 1e9,
                                     peaks.media_peak(values, names["pmem"], "read", used)),
            "functions_cycles_per_io": r.sites,
            "pmem_reads_per_io": r.media[names["pmem"]]["line_reads"], "jobs_loaded": loaded}


def _check_poison(offset, file_size):
    if offset >= file_size:
        raise FioError(f"--poison {offset} is beyond the {file_size}-byte file")


def poison_check(profile, overrides, variant, bs, offset, file_size):
    """Poison the file's byte `offset` and read its block: what the read returns, whether
    the bytes before the poisoned line arrived intact, and what a plain memcpy does."""
    profiler.label(f"{variant} (poison check)")
    _check_poison(offset, file_size)
    m, (f,), buf, ranges, data_start, _ = _rig(profile, overrides, VARIANTS[variant],
                                               -(-file_size // 4096) * 4096, bs)
    pos = offset // bs * bs
    n = min(bs, file_size - pos)
    data = np.random.default_rng(7).integers(0, 256, n, dtype=np.uint8)
    m.write(data_start + pos, data)
    m.poison(data_start + offset)
    p = Program()
    ret, it = ksys_pread64(p, f, buf, n, pos, ranges)
    res = m.run(p)
    got = copied(res, it)
    expect = (offset & ~63) - pos
    report = {"read_returned": got, "bytes_before_poisoned_line": expect,
              "data_intact": m.read(buf, got) == data[:got].tobytes()}
    try:
        m.run(Program().site("memcpy").stac().rep_movsb(buf, data_start + pos, n).clac())
        report["plain_memcpy"] = "completed (poison not consumed)"
    except MachineCheck as e:
        report["plain_memcpy"] = str(e)
    return report


def run(options):
    profile = options.profile or DEFAULT_PROFILE
    overrides = dict(options.overrides)
    if options.poison is not None:   # before the long runs
        _check_poison(options.poison, options.file_size)
    variants = {v: run_variant(profile, overrides, v, options.bs, options.jobs, options.ios,
                               options.file_size, options.cores)
                for v in progress(VARIANTS, NAME, options.progress)}
    out = {"scenario": NAME, "profile": profile, "bs": options.bs, "jobs": options.jobs,
           "cores": options.cores, "sockets": sockets(profile, overrides), "ios": options.ios,
           "file_size": options.file_size, "variants": variants}
    if options.poison is not None:
        out["poison"] = {"offset": options.poison, "variants": {
            v: poison_check(profile, overrides, v, options.bs, options.poison,
                            options.file_size)
            for v in VARIANTS}}
    return out


def table(res):
    cores = res.get("cores", 1)   # results saved before --cores ran one core
    per = math.ceil(res["jobs"] / res["sockets"])
    lines = [f"dax-read-copy-mc on {res['profile']}: sequential reads, bs={res['bs']}, "
             f"{res['ios']} measured reads per job and variant",
             f"jobs={res['jobs']} over {res['sockets']} sockets (assumed even, one namespace "
             f"each): {cores} emulated core(s) of {per} jobs on a socket, with "
             f"{cores}/{per} of the LLC and the other {per - cores} jobs' media "
             f"traffic at a core's own rate (emu/studies/fio.py); IOPS = {res['jobs']} x a "
             f"core's",
             "published: read IOPS of the kernel test robot's run (no figure given in "
             "docs/scenarios.md; the emulator predicts)",
             f"{'variant':<22}{'IOPS':>10}{'GB/s':>8}{'us/IO':>9}{'pmem reads/IO':>15}"]
    for v, d in res["variants"].items():
        lines.append(f"{v:<22}{d['iops']:>10,.0f}{peaks.cell(d['bandwidth'], 8)}"
                     f"{d['ns_per_io'] / 1e3:>9.1f}{d['pmem_reads_per_io']:>15.0f}")
    first = next(iter(res["variants"].values()))["bandwidth"]
    lines.append(f"GB/s: the jobs' reads of pmem; the profile's peak {first['peak_gbps']:.2f} "
                 f"GB/s ({first['peak']})")
    lines += peaks.notes(res["variants"])
    lines.append("\ncycles per I/O by function (self time):")
    lines += functions_table(res["variants"], "functions_cycles_per_io", 22, ".0f")
    if "poison" in res:
        lines.append(f"\npoison at file offset {res['poison']['offset']}:")
        for v, d in res["poison"]["variants"].items():
            lines.append(f"  {v:<22} read returned {d['read_returned']} "
                         f"(bytes before the poisoned line: {d['bytes_before_poisoned_line']}), "
                         f"data intact: {'yes' if d['data_intact'] else 'NO'}")
        first = next(iter(res["poison"]["variants"].values()))
        lines.append(f"  plain memcpy: {first['plain_memcpy']}")
    return "\n".join(lines) + "\n"
