"""`emu trace`: replay a memory trace (valgrind lackey, din, npy) on an emulated machine."""
import argparse
import json
import os
from typing import NamedTuple

import numpy as np

from emu import EmuFault, Machine, MachineCheck
from emu.studies import cachesim, stat, usercode
from emu.studies.options import CliError, machine_options, quiet_option, table
from emu.studies.progress import progress, wanted
from isa import Program
from isa.ops import (
    COL_ADDR,
    COL_OP,
    COL_SIZE,
    COL_SRC,
    PHYS_LIMIT,
    RANGE_KIND,
    RangeKind,
)
from isa.traces import iter_trace, resolve_format

PAGE_BYTES = 4096
TRACE_FORMATS = ("lackey", "din", "npy")
_MAP_HELP = """\
address mapping (--map-trace):
  Trace addresses are taken as addresses in the profile's memory map ([[region]] tables,
  see `emu profiles`); an access outside every region is an error.  A trace recorded from a
  real process (lackey) carries that process's virtual addresses instead: the stack near
  0x1ffefff000, the binary and heap low, so they would land in arbitrary regions or none.
  --map-trace remaps the trace page-wise into one region: the distinct 4 KiB pages it
  touches (a multi-byte access or a copy counts every page it spans) are packed
  contiguously from the region's base in ascending address order.  Offsets within a page,
  the order of pages and the adjacency of touched neighbouring pages are kept; untouched
  gaps are dropped.  The region is --region NAME (default: the profile's first region).
  Default: on for lackey traces, off for din and npy traces.  --region implies --map-trace.
"""


def configure(parser):
    parser.add_argument("file", metavar="FILE", help="trace file (lackey text, din text or .npy)")
    trace_options(parser)
    stat.add_option(parser)


def trace_options(parser):
    """The options of a trace run (emu trace, emu profile --trace)."""
    parser.add_argument("--format", choices=TRACE_FORMATS,
                        help="trace format (default: from the extension .din/.npy, else "
                             "detected from the first line)")
    machine_options(parser, "skylake-ddr4")
    quiet_option(parser)
    parser.add_argument("--no-functional", dest="functional", action="store_false",
                        help="timing and cache state only; do not move bytes (faster)")
    parser.add_argument("--map-trace", action=argparse.BooleanOptionalAction, default=None,
                        help="remap trace addresses page-wise into one region (see below; "
                             "default: on for lackey, off for din/npy)")
    parser.add_argument("--region", metavar="NAME",
                        help="region to map the trace into (implies --map-trace; default: the "
                             "profile's first region)")
    parser.add_argument("--poison", action="append", default=[], type=_poison_address,
                        metavar="ADDR",
                        help="poison the memory line holding this trace address before the run "
                             "(remapped with the trace); a load reaching it stops the run with "
                             "an unrecoverable machine check (repeatable)")
    usercode.options(parser)
    cachesim.options(parser)
    parser.epilog = _MAP_HELP
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


class PoisonAddress(NamedTuple):
    text: str    # as the user typed it, for messages
    addr: int


def _poison_address(text):
    """--poison ADDR: a trace address, decimal or 0x/0o/0b, inside the physical address space."""
    try:
        addr = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an address (decimal or 0x...)") from None
    if not 0 <= addr < PHYS_LIMIT:
        raise argparse.ArgumentTypeError(f"{text}: not in the physical address space "
                                         f"[0, {PHYS_LIMIT:#x})")
    return PoisonAddress(text, addr)


class TracePages:
    """The --map-trace mapping: the distinct 4 KiB pages a trace touches (ranges of copies
    and flushes included), gathered chunk by chunk, then packed from a region's base in
    ascending address order, keeping page offsets. Which columns hold addresses, and how
    many bytes from them, is the ops' byte-range kind (a branch's index is none)."""

    def __init__(self):
        self.first = self.last = np.zeros(0, dtype=np.int64)   # disjoint, sorted segments

    def add(self, ops=None, addresses=()):
        """Add the pages of an op array's ranges and of single-byte `addresses`."""
        starts, ends = [np.asarray(addresses, dtype=np.int64)], []
        ends.append(starts[0] + 1)
        if ops is not None and len(ops):
            kind = RANGE_KIND[ops[:, COL_OP]]
            dst, src = kind != RangeKind.NONE, kind == RangeKind.DST_SRC
            length = np.where(kind == RangeKind.LINE, 1, np.maximum(ops[:, COL_SIZE], 1))
            starts += [ops[dst, COL_ADDR], ops[src, COL_SRC]]
            ends += [ops[dst, COL_ADDR] + length[dst], ops[src, COL_SRC] + length[src]]
        first = np.concatenate([self.first] + [s // PAGE_BYTES for s in starts])
        last = np.concatenate([self.last] + [(e - 1) // PAGE_BYTES for e in ends])
        if not len(first):
            return
        order = np.argsort(first, kind="stable")
        first, last = first[order], last[order]
        reach = np.maximum.accumulate(last)
        new = np.ones(len(first), dtype=bool)
        new[1:] = first[1:] > reach[:-1] + 1   # adjacent pages stay adjacent
        self.first = first[new]
        self.last = reach[np.append(np.flatnonzero(new)[1:] - 1, len(first) - 1)]

    @property
    def pages(self):
        return int((self.last - self.first + 1).sum())

    def place(self, base, size_bytes, region):
        """Pack the pages from `base`; CliError if they do not fit in `size_bytes`."""
        if self.pages * PAGE_BYTES > size_bytes:
            raise CliError(f"--map-trace: the trace touches {self.pages} distinct 4 KiB pages, "
                           f"more than region {region!r} holds ({size_bytes // PAGE_BYTES})")
        self.base = base
        self.new_first = np.concatenate([[0], np.cumsum(self.last - self.first + 1)[:-1]])

    def remap(self, a):
        """Mapped addresses of trace addresses `a` (all on pages added before place())."""
        a = np.asarray(a, dtype=np.int64)
        page = a // PAGE_BYTES
        k = np.searchsorted(self.first, page, side="right") - 1
        return self.base + (self.new_first[k] + page - self.first[k]) * PAGE_BYTES + a % PAGE_BYTES

    def trace_address(self, a):
        """The trace address that mapped address `a` came from (remap's inverse)."""
        k = int(np.searchsorted(self.new_first, (a - self.base) // PAGE_BYTES, side="right")) - 1
        return int(a - self.base - self.new_first[k] * PAGE_BYTES + self.first[k] * PAGE_BYTES)

    def remapped(self, program):
        """A trace chunk's `program` (ops only: no data, no sites) with its addresses mapped:
        a new Program, validated."""
        ops = program.ops.copy()
        kind = RANGE_KIND[ops[:, COL_OP]]
        dst, src = kind != RangeKind.NONE, kind == RangeKind.DST_SRC
        ops[dst, COL_ADDR] = self.remap(ops[dst, COL_ADDR])
        ops[src, COL_SRC] = self.remap(ops[src, COL_SRC])
        return Program.from_array(ops, copy=False)


def _region_list(regions):
    return ", ".join(f"{n} {r['base']:#x}-{r['base'] + r['size_bytes']:#x}" for n, r in regions.items())


def _trace_bytes(path):
    """The total of a progress bar over TraceChunk.bytes_read: the file's size, or None for a
    .gz (its chunks count decompressed bytes) and for a file that cannot be read (which is
    iter_trace's error to report)."""
    known = os.path.isfile(path) and not path.lower().endswith(".gz")
    return os.path.getsize(path) if known else None


def _map_pages(args, machine, fmt):
    """The TracePages of --map-trace, placed in its region (a first pass over the trace), or
    None without mapping."""
    do_map = args.map_trace
    if do_map is False and args.region:
        raise CliError("--region maps the trace into a region; it cannot be used with --no-map-trace")
    if do_map is None:
        do_map = fmt == "lackey" or args.region is not None
    if not do_map:
        return None
    name = args.region or machine.profile.values["region"][0]["name"]
    region = machine.regions.get(name)
    if region is None:
        raise CliError(f"--region {name!r}: profile {machine.profile.name!r} has no such region "
                       f"(regions: {', '.join(machine.regions)})")
    pages, read = TracePages(), 0
    with progress(desc="mapping pages", enabled=wanted(args), total=_trace_bytes(args.file),
                  unit="B") as bar:
        for chunk in iter_trace(args.file, fmt):
            pages.add(chunk.program.ops)
            bar.update(chunk.bytes_read - read)
            read = chunk.bytes_read
    pages.add(addresses=[p.addr for p in args.poison])
    pages.place(region["base"], region["size_bytes"], name)
    pages.region = name
    return pages


def _poison(machine, args, pages):
    """Poison the lines of --poison; returns {mapped line: the option as typed}."""
    lines = {}
    for p in args.poison:
        addr = int(pages.remap(p.addr)) if pages else p.addr
        try:
            machine.poison(addr)
        except (EmuFault, ValueError) as e:
            raise CliError(f"--poison {p.text}: {e}") from None
        lines[addr >> 6] = p.text
    return lines


def _trace_chunk(args, machine, chunk, pages, poisoned, sites):
    """Run one chunk of the trace (remapped with --map-trace, its accesses under their
    instructions' sites); a fault names its line."""
    program = sites.sited(pages.remapped(chunk.program) if pages else chunk.program)
    try:
        machine.run(program, drain=False)
    except EmuFault as e:
        line = f"{args.file}:{chunk.line[usercode.access_index(program, e.op_index)]}"
        if isinstance(e, MachineCheck) and e.addr >> 6 in poisoned:
            raise CliError(f"{line}: reads the line poisoned by --poison "
                           f"{poisoned[e.addr >> 6]}: {e}") from None
        hint = "" if pages else "; --map-trace remaps a trace into one region"
        raise CliError(f"{line}: {e} (regions of {machine.profile.name}: "
                       f"{_region_list(machine.regions)}{hint})") from None


def cmd_trace(args):
    report, _ = run_trace(args)
    if args.json:
        return json.dumps(report, indent=2) + "\n"
    return _trace_table(report) + (stat.text(args.file, report["stat"]) if "stat" in report else "")


def run_trace(args):
    """Replay the trace of `args` (emu trace's options): (report, the TracePages of
    --map-trace or None)."""
    overrides = cachesim.overrides(args)
    machine = Machine(cachesim.profile_spec(args), overrides or None, functional=args.functional)
    prof = machine.profile
    fmt = resolve_format(args.file, args.format)
    trace_site = f"trace {os.path.basename(args.file)}"
    sites = usercode.attribution(args, fmt, trace_site)
    pages = _map_pages(args, machine, fmt)
    poisoned = _poison(machine, args, pages)
    machine.run(Program().site(trace_site))   # a profile's function
    start, n_ops, read = machine.cycles, 0, 0
    with progress(desc=os.path.basename(args.file), enabled=wanted(args),
                  total=_trace_bytes(args.file), unit="B") as bar:
        for chunk in iter_trace(args.file, fmt):
            _trace_chunk(args, machine, chunk, pages, poisoned, sites)
            n_ops += len(chunk.program)
            bar.update(chunk.bytes_read - read)
            read = chunk.bytes_read
    cycles = machine.drain() - start
    mapping = pages and {"region": pages.region, "pages": pages.pages, "page_bytes": PAGE_BYTES}
    s = machine.stats()
    levels = {}
    for n, d in s["levels"].items():
        total = d["hits"] + d["misses"]
        levels[n] = dict(d, miss_ratio=(d["misses"] / total) if total else None)
    report = {
        "trace": args.file, "format": fmt, "profile": prof.name,
        "cycles": cycles, "seconds": cycles / (machine.freq_ghz * 1e9), "ops": n_ops,
        "levels": levels, "media": s["media"], "regions": s["regions"],
        "map_trace": mapping, "binary": sites.describe(), "functional": args.functional,
        "overrides": overrides, "profile_files": list(prof.files),
        "profile_sources": dict(prof.sources),
    }
    if getattr(args, "stat", False):   # emu trace's option (emu profile --trace has none)
        report["stat"] = stat.of_machine(machine)
    return report, pages


def _trace_table(r):
    mapped = (f"{r['map_trace']['pages']} pages mapped into {r['map_trace']['region']}"
              if r["map_trace"] else "addresses as in the trace")
    out = [f"trace    {r['trace']} ({r['format']}; {mapped})\n",
           f"profile  {r['profile']}" + (f" with {len(r['overrides'])} override(s)" if r["overrides"] else "") + "\n",
           f"cycles   {r['cycles']}\n",
           f"seconds  {r['seconds']:.6e} (emulated)\n",
           f"ops      {r['ops']}\n"]
    if r["binary"]:
        b = r["binary"]
        out.append(f"binary   {b['binary']} (load base {b['load_base']:#x}, {b['load_base_how']})\n")
    out.append("\n")
    out.append(table(["level", "hits", "misses", "read misses", "write misses", "miss ratio",
                      "fills", "dirty write-backs"],
                     [[n, d["hits"], d["misses"], d["load_misses"], d["store_misses"],
                       "-" if d["miss_ratio"] is None else f"{d['miss_ratio']:.4f}",
                       d["fills"], d["dirty_writebacks"]] for n, d in r["levels"].items()]))
    out.append("\n")
    out.append(table(["media", "line reads", "line writes"],
                      [[n, d["line_reads"], d["line_writes"]] for n, d in r["media"].items()]))
    out.append("\n")
    out.append(table(["region", "line reads", "line writes"],
                      [[n, d["line_reads"], d["line_writes"]] for n, d in r["regions"].items()]))
    return "".join(out)


