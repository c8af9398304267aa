"""Scenario `dax-write-usercopy`: hardened usercopy on a DAX write to Optane.

A fio-like psync pwrite loop (emu/studies/fio.py) writing `--bs` bytes per I/O sequentially through
a file on a DAX file system on the first pmem namespace of node 0 (kernels/read_write.py,
kernels/dax.py, kernels/pmem.py): syscall, VFS and file-system work as declared costs
(profile [software]), dax_iomap_actor's checks and sector->pgoff translation, then the copy
from the user buffer (a user region; the copy runs in kernel mode under STAC/CLAC, SMAP on
if the profile's CPU has it).
Variants: `memmap=pmem` (ndctl --map=dev: struct pages inside the namespace; the pre-5.2
checked copy, whose check_heap_object reads the destination's struct page), `memmap=dram`
(--map=mem: struct pages in DRAM; checked) and `bypass` (struct pages in pmem; the unchecked
copy of the v5.2 patch). Metric `iops` (aggregate over `--jobs`), with `ns_per_io` and the
cycles per I/O of each function. The thread gives neither block size nor job count: 4 KiB
and one job are assumed. No profile value is chosen to meet the published figures
(docs/scenarios.md, "dax-write-usercopy").
"""

import numpy as np

from emu import profiler
from emu.machine import Machine
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
from emu.studies import peaks, published
from emu.studies.progress import progress
from emu.studies.scenarios.common import functions_table, with_user_region
from kernels.copy_mc import CopyMc
from kernels.dax import Bdev, DaxDevice, DaxFile
from kernels.memmap import Memmap
from kernels.pmem import PmemDevice
from kernels.read_write import ksys_pwrite64
from kernels.usercopy import Hardening
from kernels.usercopy_64 import clwb_op
from memmodel.profile import ProfileError

NAME = "dax-write-usercopy"
DEFAULT_PROFILE = "cascadelake-optane"
VARIANTS = ("memmap=pmem", "memmap=dram", "bypass")
METRIC = "iops"
COSTS = fio.COSTS
# check_heap_object's struct-page load strides 64 B through the memmap, one struct page an
# I/O: the L1 IP-stride prefetcher learns it if its entry outlives the I/O's kernel path
READINGS = {
    "ip-stride evicted": ("the struct-page load's IP-stride entry does not outlive the I/O's "
                          "path, whose loads are declared costs, not emitted; no source gives "
                          "the table's size or replacement (memmodel/prefetch/ip_stride.py)",
                          {"cache.l1d.prefetcher": ["next_line"]}),
}
# profile values the result follows from (docs/scenarios.md, dax-write-usercopy)
SENSITIVE = ("software.syscall_entry_exit_ns", "software.vfs_write_ns",
             "software.fs_write_iter_ns", "media.optane.read_latency_ns",
             "media.optane.buffer_read_latency_ns", "media.optane.write_accept_ns",
             "media.optane.write_bw_gbps", "media.optane.wpq_entries", "core.wc_buffers",
             "media.optane.wc_hold_ns", "media.optane.wc_ack_ns",
             "media.optane.bus_gbps", "instr.lock_rmw_cycles",
             "core.rob_entries", "instr.stac_cycles", "instr.clac_cycles",
             "instr.sfence_cycles", "core.freq_ghz")


OPTIONS = job_options("write", bs=4096, jobs=1, ios=20000, file_size=1 << 30, why="assumed",
                      jobs_help="; the core gets 1/N of the LLC and of the interconnect, the "
                                "others' media traffic is its own (a fixed point)")


def dax_machine(profile, overrides, pmem_map, hardened, file_size, copy_mc=CopyMc(),
                background=None, cores=1):
    """(machine, [a DAX file per core], user region, media of the namespace): the files
    share `file_size` bytes (whole pages each) of node 0's first namespace. pmem_map
    "dev"|"mem": where the struct pages live; `hardened`: the checked (pre-5.2) copy;
    `copy_mc`: the platform's machine-check-safe copy choice; `background`: other jobs'
    media traffic (Machine(background=...)); `cores`: the machine's (Machine(cores=...)).
    Each core's job opens its own file (fio's numjobs: a file per job) through its own
    dax_device view (its CPU's srcu counters) and kernel stack, as the tasks of different
    CPUs do; the block device and the pmem device are the one."""
    values = load_profile(profile, overrides or None).values
    m = Machine(profile, overrides or None, regions=with_user_region(values),
                smap="smap" in values["core"]["cpu_features"], background=background,
                cores=cores)
    persistence = {n: v["persistence"] for n, v in values["media"].items()}
    mm = Memmap(list(m.regions.values()), persistence, pmem_map)
    namespaces = [r for r in mm.namespaces if r["node"] == 0]
    if not namespaces:
        raise ProfileError(f"profile {m.profile.name!r} has no pmem (optane or nvdimm-n) "
                           f"region on node 0 to hold the DAX file system")
    pmem = PmemDevice.for_namespace(mm, namespaces[0], clwb_op(values),
                                    Hardening.create(mm, values["instr"]["div64_cycles"])
                                    if hardened else None)
    pmem.copy_mc = copy_mc
    if file_size > pmem.capacity:
        raise FioError(f"--file-size: {file_size} bytes (whole pages) do not fit the "
                       f"{pmem.capacity}-byte pmem device of region {namespaces[0]['name']!r}")
    part = fio.core_file_bytes(file_size, cores)
    if part == 0:
        raise FioError(f"--file-size {file_size}: less than a page for each of {cores} cores")
    bdev = Bdev.create(mm)
    files = [DaxFile.create(mm, DaxDevice.create(mm, pmem), bdev, j * part, part)
             for j in range(cores)]
    return m, files, m.regions["user0"], namespaces[0]["media"]


def build(profile, overrides, variant, file_size, background=None, cores=1):
    """(machine, file, user region, media of the namespace) for a variant."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; variants: {', '.join(VARIANTS)}")
    return dax_machine(profile, overrides, "mem" if variant == "memmap=dram" else "dev",
                       variant != "bypass", file_size, background=background, cores=cores)


def run_variant(profile, overrides, variant, bs, jobs, ios, file_size, cores=1):
    profiler.label(variant)
    check_job_options(bs, ios, file_size, cores)
    overrides = job_overrides(profile, overrides, jobs, cores)
    data = np.random.default_rng(5).integers(0, 256, bs, dtype=np.uint8)
    # each emulated job writes its own file (dax_machine) from its own buffer
    stride = -(-bs // 4096) * 4096
    ramp = ios // 10
    names = {}

    def run_once(background, n):
        m, files, user, names["pmem"] = build(profile, overrides, variant,
                                              -(-file_size // 4096) * 4096, background, cores)
        for j in range(cores):
            m.write(user["base"] + j * stride, data)
        ranges = [(user["base"], user["base"] + user["size_bytes"])]
        blocks = files[0].size // bs   # at least one: check_job_options

        def io(p, k, job):
            return ksys_pwrite64(p, files[job], user["base"] + job * stride, bs,
                                 (k % blocks) * bs, ranges)

        r = run_jobs(m, io, n, jobs, "write", ramp_ios=ramp)
        f = files[0]
        last = f.dax.pmem.virt_addr + f.dax.pmem.data_offset + ((ramp + n - 1) % blocks) * bs
        if m.read(last, bs) != data.tobytes():
            raise AssertionError("functional check failed: the last write's bytes differ from "
                                 "the buffer")
        return r

    values = load_profile(profile, overrides or None).values
    r, loaded = loaded_run(run_once, values, jobs, ios, cores=cores)
    # every job writes node 0's first namespace (one region of its media)
    return {"iops": r.iops, "ns_per_io": r.ns_per_io, "cycles_per_io": r.cycles / ios,
            "gbytes_per_s": r.iops * bs / 1e9,
            "bandwidth": peaks.check(r.iops * bs / 1e9,
                                     peaks.media_peak(values, names["pmem"], "write")),
            "functions_cycles_per_io": r.sites,
            "pmem_reads_per_io": r.media[names["pmem"]]["line_reads"],
            "pmem_writes_per_io": r.media[names["pmem"]]["line_writes"], "jobs_loaded": loaded}


def run(options):
    profile = options.profile or DEFAULT_PROFILE
    overrides = dict(options.overrides)
    variants = {v: run_variant(profile, overrides, v, options.bs, options.jobs, options.ios,
                               options.file_size, options.cores)
                for v in progress(VARIANTS, NAME, options.progress)}
    return {"scenario": NAME, "profile": profile, "bs": options.bs, "jobs": options.jobs,
            "cores": options.cores,
            "ios": options.ios, "file_size": options.file_size,
            "assumed": "bs 4096 and 1 job unless given: the thread gives neither",
            "variants": variants,
            "published": published.check(NAME, profile, options,
                                          {v: d["iops"] for v, d in variants.items()})}


def table(res):
    cores = res.get("cores", 1)   # results saved before --cores ran one core
    lines = [f"dax-write-usercopy on {res['profile']}: psync sequential writes, bs={res['bs']}, "
             f"jobs={res['jobs']} ({cores} on emulated cores), {res['ios']} measured "
             f"writes per job and variant",
             "published: fio psync write, block size and jobs not given (assumed: 4 KiB, 1 job; "
             "the thread gives neither)",
             f"{'variant':<14}{'emulated IOPS':>15}{'published IOPS':>16}{'ratio':>7}"
             f"{'status':>8}{'ns/IO':>9}{'GB/s':>8}{'pmem reads/IO':>15}"]
    for v, d in res["variants"].items():
        pub, ratio, st = published.cells(res["published"], v, "iops", ",.0f")
        lines.append(f"{v:<14}{d['iops']:>15,.0f}{pub:>16}{ratio:>7}{st:>8}"
                     f"{d['ns_per_io']:>9.0f}{peaks.cell(d['bandwidth'], 8)}"
                     f"{d['pmem_reads_per_io']:>15.2f}")
    lines += published.notes(NAME, res["published"])
    lines += peaks.notes(res["variants"])
    lines.append("\ncycles per I/O by function (self time):")
    lines += functions_table(res["variants"], "functions_cycles_per_io", 14)
    return "\n".join(lines) + "\n"
