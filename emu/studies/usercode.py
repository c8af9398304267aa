"""A trace's accesses attributed to the user's code (`emu trace` / `emu profile --trace`).

The trace readers give each load and store the address of the instruction that made it
(its ip, COL_SRC: lackey's ``I`` records, din's label 2). Here each access is put under a
site named after its instruction, by inserting a SITE op where the site changes (a SITE
changes no timing, tests/test_profiler.py), so the profile's function and line tables, its
hot-line sites and its cachegrind.out name the user's code:

- without --binary a site is the instruction address, "0x401136";
- with --binary PROG (an ELF with DWARF line tables, `gcc -g`; read with pyelftools, the
  optional extra ``binary``) it is "FUNCTION @ FILE:LINE" from PROG's symbol table and line
  table, so cg_annotate annotates the C source; an instruction of PROG without a line is
  its function; one outside PROG (the C library, the dynamic loader) is "(outside PROG)";
- an access without an instruction (a trace without them, or before its first) stays under
  the trace's own site, "trace FILE".

A position-independent PROG (ELF type ET_DYN, gcc's default) runs at a load base that the
trace's addresses include: --load-base, else the first of the usual bases (valgrind's on
amd64, 0x108000; Linux's without ASLR; the classic non-PIE 0x400000) under which some of the
trace's instructions fall in PROG's functions, the most of them if several do.
"""
import os

import numpy as np

from emu.studies.options import CliError
from isa import Program
from isa.ops import COL_IMM, COL_OP, COL_SRC, N_COLS, Op
from isa.sourcelines import LINE_SEP
from isa.traces import iter_trace

#: load bases tried for a position-independent PROG without --load-base, in order: valgrind
#: maps a PIE main program at 0x108000 on amd64 (seen in its traces: _start at 0x108000 plus
#: its ELF address); Linux without ASLR at 0x555555554000; 0x400000, the non-PIE default
LOAD_BASES = (0x108000, 0x555555554000, 0x400000)


def options(parser):
    """--binary and --load-base (emu trace, emu profile --trace)."""
    parser.add_argument("--binary", metavar="PROG",
                        help="the traced program (ELF built with -g): name each access's "
                             "function, file and line (needs pyelftools: pip install "
                             "'cacheline-emu[binary]'); without it, rows name instruction "
                             "addresses")
    parser.add_argument("--load-base", type=_address, metavar="ADDR",
                        help="where a position-independent PROG was loaded in the traced "
                             "process (default: detected; valgrind loads one at 0x108000)")


def _address(text):
    import argparse
    try:
        addr = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an address (decimal or 0x...)") from None
    if addr < 0:
        raise argparse.ArgumentTypeError(f"{text}: a load base is not negative")
    return addr


class ElfLines:
    """PROG's functions (symbol table) and source lines (DWARF line tables) by address."""

    def __init__(self, path):
        try:
            from elftools.common.exceptions import ELFError
            from elftools.elf.elffile import ELFFile
        except ImportError:
            raise CliError("--binary needs pyelftools: pip install 'cacheline-emu[binary]' "
                           "(or pip install pyelftools)") from None
        self.path = path
        self.name = os.path.basename(path)
        try:
            with open(path, "rb") as f:
                elf = ELFFile(f)
                self.pie = elf.header.e_type == "ET_DYN"
                self._functions(elf)
                self._lines(elf)
        except OSError as e:
            raise CliError(f"--binary {path}: cannot read: {e.strerror or e}") from None
        except ELFError as e:
            raise CliError(f"--binary {path}: not an ELF file: {e}") from None
        if not len(self.fn_start):
            raise CliError(f"--binary {path}: no function symbols (a stripped binary?)")

    def _functions(self, elf):
        syms = elf.get_section_by_name(".symtab") or elf.get_section_by_name(".dynsym")
        funcs = {}
        for s in syms.iter_symbols() if syms else ():
            if s["st_info"]["type"] == "STT_FUNC" and s["st_value"] and s["st_size"]:
                funcs.setdefault(s["st_value"], (s["st_size"], s.name))
        order = sorted(funcs)
        self.fn_start = np.array(order, dtype=np.int64)
        self.fn_end = np.array([a + funcs[a][0] for a in order], dtype=np.int64)
        self.fn_name = [funcs[a][1] for a in order]

    def _lines(self, elf):
        """Rows (address, file, line) sorted by address; a row whose line is 0 (no line, or
        a sequence's end) ends the range of the row before it."""
        rows = []
        if elf.has_dwarf_info():
            dwarf = elf.get_dwarf_info()
            for cu in dwarf.iter_CUs():
                lp = dwarf.line_program_for_CU(cu)
                if lp is None:
                    continue
                files = _file_names(cu, lp)
                for e in lp.get_entries():
                    st = e.state
                    if st is None:
                        continue
                    line = 0 if st.end_sequence else st.line
                    rows.append((st.address, files.get(st.file, "???") if line else "", line))
        rows.sort(key=lambda r: r[0])   # stable: a sequence's end before a row at its address
        self.ln_addr = np.array([r[0] for r in rows], dtype=np.int64)
        self.ln_file = [r[1] for r in rows]
        self.ln_line = [r[2] for r in rows]

    def in_functions(self, vaddr):
        """Per address: inside one of PROG's functions."""
        k = np.searchsorted(self.fn_start, vaddr, side="right") - 1
        return (k >= 0) & (vaddr < self.fn_end[np.maximum(k, 0)])

    def site(self, vaddr):
        """The site name of PROG's address `vaddr`, None outside its functions."""
        k = int(np.searchsorted(self.fn_start, vaddr, side="right")) - 1
        if k < 0 or vaddr >= self.fn_end[k]:
            return None
        j = int(np.searchsorted(self.ln_addr, vaddr, side="right")) - 1
        if j < 0 or not self.ln_line[j]:
            return self.fn_name[k]
        return f"{self.fn_name[k]}{LINE_SEP}{self.ln_file[j]}:{self.ln_line[j]}"


def _file_names(cu, lp):
    """{file index of the line program: absolute path} (DWARF 5 numbers from 0, earlier
    versions from 1)."""
    top = cu.get_top_DIE()
    comp = top.attributes.get("DW_AT_comp_dir")
    comp_dir = comp.value.decode(errors="replace") if comp else ""
    dirs = [d.decode(errors="replace") if isinstance(d, bytes) else str(d)
            for d in lp["include_directory"]]
    first = 0 if lp.header["version"] >= 5 else 1
    out = {}
    for i, fe in enumerate(lp["file_entry"]):
        name = fe.name.decode(errors="replace")
        d = fe.dir_index
        if lp.header["version"] >= 5:
            folder = dirs[d] if 0 <= d < len(dirs) else ""
        else:
            folder = dirs[d - 1] if 1 <= d <= len(dirs) else ""
        out[i + first] = os.path.normpath(os.path.join(comp_dir, folder, name))
    return out


class Attribution:
    """Sites of a trace's accesses by their instruction (see the module docstring)."""

    def __init__(self, trace_site, elf=None, base=0, base_how=""):
        """`trace_site`: the site current when the trace starts, which an access without an
        instruction (ip 0: none in the trace, or before its first) stays under."""
        self.elf, self.base, self.base_how = elf, base, base_how
        self.outside = f"(outside {elf.name})" if elf else None
        self.names = [trace_site]   # the site table of every program made
        self._ids = {trace_site: 0}     # site name -> index in names
        self._by_ip = {0: 0}            # ip -> index in names
        self._last = 0                  # the site of the last access attributed

    def _site_of(self, ip):
        sid = self._by_ip.get(ip)
        if sid is None:
            if self.elf is None:
                name = f"{ip:#x}"
            else:
                name = self.elf.site(ip - self.base) or self.outside
            sid = self._ids.get(name)
            if sid is None:
                sid = self._ids[name] = len(self.names)
                self.names.append(name)
            self._by_ip[ip] = sid
        return sid

    def sited(self, program):
        """`program` (a trace chunk's ops, no sites) with a SITE op before each access whose
        site is not the one before it: a new Program."""
        ops = program.ops
        ips, inverse = np.unique(ops[:, COL_SRC], return_inverse=True)
        sid = np.array([self._site_of(int(ip)) for ip in ips], dtype=np.int64)[inverse]
        prev = np.concatenate([[self._last], sid[:-1]])
        change = np.flatnonzero(sid != prev)
        if not len(change):
            return program
        out = np.zeros((len(ops) + len(change), N_COLS), dtype=np.int64)
        at = change + np.arange(len(change))   # where each SITE lands in the output
        keep = np.ones(len(out), dtype=bool)
        keep[at] = False
        out[keep] = ops
        out[at, COL_OP] = int(Op.SITE)
        out[at, COL_IMM] = sid[change]
        if len(sid):
            self._last = int(sid[-1])
        return Program.from_array(out, site_names=self.names, copy=False)

    def describe(self):
        """For a report: {binary, load_base, how} or None without --binary."""
        if self.elf is None:
            return None
        return {"binary": self.elf.path, "load_base": self.base, "load_base_how": self.base_how}


def access_index(program, op_index):
    """The index among the accesses (the trace chunk's ops) of op `op_index` of a sited()
    program: less the SITE ops before it."""
    return op_index - int(np.count_nonzero(program.ops[:op_index, COL_OP] == int(Op.SITE)))


def attribution(args, fmt, trace_site):
    """The Attribution of --binary/--load-base for the trace args.file, starting at site
    `trace_site` (a pass over the trace to detect a PIE's load base)."""
    if not args.binary:
        if args.load_base is not None:
            raise CliError("--load-base places --binary PROG; give --binary too")
        return Attribution(trace_site)
    elf = ElfLines(args.binary)
    if args.load_base is not None or not elf.pie:
        how = "given" if args.load_base is not None else "not position-independent"
        return Attribution(trace_site, elf, args.load_base or 0, how)
    ips = set()
    for chunk in iter_trace(args.file, fmt):
        ips.update(np.unique(chunk.program.ops[:, COL_SRC]).tolist())
    ips = np.array(sorted(ips - {0}), dtype=np.int64)
    hits = [int(elf.in_functions(ips - b).sum()) for b in LOAD_BASES]
    if not max(hits):
        raise CliError(f"--binary {args.binary}: position-independent, and no instruction of "
                       f"the trace falls in its functions at the usual load bases "
                       f"({', '.join(hex(b) for b in LOAD_BASES)}): give --load-base ADDR "
                       f"(or the trace is not of this program)")
    return Attribution(trace_site, elf, LOAD_BASES[hits.index(max(hits))], "detected")


def trace_addresses(profiles, pages):
    """Give the hot lines of {label: RunProfile} of a remapped trace their trace addresses
    (emu.studies.trace_cmd.TracePages)."""
    for p in profiles.values():
        for h in p.hot.values():
            h.trace_addr = pages.trace_address(h.addr)
