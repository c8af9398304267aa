"""The Machine facade: profile -> state arrays, run(program), faults, statistics.

Only this layer touches dicts, strings and files. It validates every program before the
compiled core sees it, grows the lazily allocated memory pools when the core asks, and
turns the core's status codes into Python exceptions naming op index, site and address.
"""
import hashlib
import json
import os
import sys
import time
from functools import partial

import numpy as np

from emu import _core, _pipeline, fastforward
from emu import state as st
from emu import state_setup
from emu.frames import Stats
from emu.limits import (
    CLOCK_LIMIT,
    DEFAULT_MEMORY_LIMIT_BYTES,
    check_background,
    check_machine_args,
    cycles_per_unit,
)
from emu.results import (
    CoresResult,
    CrashImage,
    MemoryLimitFault,
    RunResult,
    UnmappedAccess,
    WaitForever,
    fault,
)
from isa.ops import (
    COL_ADDR,
    COL_FLAGS,
    COL_OP,
    COL_SIZE,
    FLAG_RECORD,
    N_COLS,
    PEER_OPS,
    PHYS_LIMIT,
    Op,
)
from isa.program import Program, ProgramError
from isa.sites import site_id
from memmodel import _persist as persist
from memmodel import cache as cm
from memmodel import media as md
from memmodel import memory as mm
from memmodel._persist import PQ_ENTRIES
from memmodel.build import build as build_memory_side
from memmodel.build import spread
from memmodel.layout import MS, MT, XC, Layout
from memmodel.profile import check_regions, load_profile
from memmodel.profile import sockets as profile_sockets
from memmodel.profile_schema import LLC_REMOTE_KEYS
from memmodel.sections import hotlines as hot
from memmodel.sections.cache import contents, lines_with_flag
from memmodel.sections.cache import counters_at as socket_counters_at
from memmodel.sections.memory import MemoryLimit, grow

#: stats()["remote"]'s counters (memmodel.layout XC), in order.
REMOTE_COUNTER_NAMES = tuple(c.name.lower() for c in XC if c.name.startswith("REMOTE_"))
#: stats()["coherence"]'s counters (memmodel.layout XC, several cores), in order.
COHERENCE_COUNTER_NAMES = tuple(c.name.lower() for c in XC if not c.name.startswith("REMOTE_"))

#: Seconds the first run in this process spent compiling (or loading) the core.
COMPILE_SECONDS = {}

#: The cold compile's one figure, with the host and date it was measured on: written by
#: `python benchmarks/compile_time.py --record`, quoted by README.md and docs/performance.md.
COLD_COMPILE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cold_compile.json")


def _cold_compile_seconds(path=COLD_COMPILE_FILE):
    """The recorded cold compile in whole seconds, as the first-run notice prints it; a
    ValueError naming the file if it is missing or holds no such figure."""
    try:
        with open(path) as f:
            s = json.load(f)["seconds"]
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 < s < 1e6:
            raise ValueError(f"seconds is {s!r}, not a positive number of seconds")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: no cold-compile figure ({e}); "
                         "python benchmarks/compile_time.py --record writes it") from None
    return round(s)


try:
    COLD_COMPILE_SECONDS = _cold_compile_seconds()
    _COLD_COMPILE_ABOUT = f"about {COLD_COMPILE_SECONDS} s"
except ValueError as e:   # the notice says so; the emulator (and --record itself) still runs
    COLD_COMPILE_SECONDS = None
    _COLD_COMPILE_ABOUT = f"its time not known: {e}"

_compile_checked = False   # the notice is considered once per process

#: Objects told of every new Machine (emu.profiler.capture): each has `hot_lines`, the
#: hot-line table a machine made while it watches keeps, and `add(machine)`.
OBSERVERS = []


def _core_cached(S, pt, frames):
    """True if the core's `run`, for the argument types Machine.run passes it, is compiled in
    this process or held by numba's on-disk cache: the lookup numba's Dispatcher.compile
    makes (numba/core/caching.py: the cache index maps (signature, target, bytecode hash)
    to a data file, and is empty when stale)."""
    run = getattr(_core.run, "dispatcher", _core.run)   # run is an apart phase
    if not hasattr(run, "overloads"):   # NUMBA_DISABLE_JIT: nothing is compiled
        return True
    ops, data, out = np.zeros((1, N_COLS), np.int64), np.zeros(1, np.uint8), np.zeros(1, np.int64)
    sig = tuple(run.typeof_pyval(a) for a in (S, pt, frames, ops, data, out, 0, out, out, True,
                                              0, False))
    if sig in run.overloads:
        return True
    try:
        key = run._cache._index_key(sig, run.targetctx.codegen())
        return key in run._cache._cache_file._load_index()
    except AttributeError:   # a NullCache (caching off), or numba changed its private API
        return False


def _values(program, res):
    """RunResult.values of a run of `program` whose res array (the core's word per op) is
    `res`: {record name or op index: value} of its recording ops."""
    if not len(res):
        return {}
    names = program.record_names
    return {names.get(i, i): int(res[i])
            for i in np.flatnonzero(program.ops[:, COL_FLAGS] & FLAG_RECORD).tolist()}


def _announce_compile(m):
    """One line on stderr before a cold compile of the core, so that a first run does not
    look hung; at most once per process, never when the cache is warm."""
    global _compile_checked
    if _compile_checked:
        return
    _compile_checked = True
    if not _core_cached(m.S, m.pt, m.frames):
        print(f"compiling the emulator core (first run only, {_COLD_COMPILE_ABOUT}) ...",
              file=sys.stderr, flush=True)


class Machine:
    """An emulated single core with its cache hierarchy, media and functional memory.

    profile: a shipped profile name, a path to a TOML file, or a dict of TOML data.
    overrides: {"cache.llc.size_bytes": ..., ...} applied on top of the profile.
    regions: optional list of region dicts replacing the profile's memory map, checked
        as strictly as a profile's [[region]] (memmodel.profile.check_regions).
    functional: move real bytes (off: timing and cache state only).
    memory_limit_bytes: the most functional memory (4 KiB frames of touched pages) the
        machine may hold; an op or write needing more is refused (MemoryLimitFault /
        memmodel.sections.memory.MemoryLimit) before anything is allocated.
    hot_lines: rows of the hot-line table (a power of two; 0: none), which counts the
        demand misses of every line for run_profile(); inside emu.profiler.capture() a
        machine keeps one of the capture's size.
    background: other cores' traffic, {media or region name: {"read_gbps": r,
        "write_gbps": w}}, periodic streams on the media's channels (docs/machine.md).
    cores: the cores in the machine, 1 to the profile's core.cores_per_socket, each with its
        own window, store buffer, WC and fill buffers, L1D and L2, sharing the LLC and the
        memory side (memmodel.layout, "Cores"). run(program) runs on core 0, run([program,
        ...]) one program per core, together (run); their caches are coherent
        (memmodel._coherence).
    sockets: the sockets the cores are on, 1 to the profile's core.sockets; cores must be a
        multiple of it, cores/sockets a socket (at most core.cores_per_socket), socket-major
        (core k on socket k // (cores/sockets)). Each socket has its own LLC; each core's
        NUMA node is its socket's (node= is for one socket); a miss snoops the other
        socket's caches too (docs/machine.md "Sockets").
    """

    def __init__(self, profile="skylake-ddr4", overrides=None, *, regions=None,
                 functional=True, smap=False, node=0, seed=0, mode="kernel",
                 memory_limit_bytes=DEFAULT_MEMORY_LIMIT_BYTES, hot_lines=None,
                 background=None, cores=1, sockets=1):
        self.profile = load_profile(profile, overrides)
        v = self.profile.values
        self.freq_ghz = v["core"]["freq_ghz"]
        self.level_names = list(v["cache"])
        self.media_names = list(v["media"])
        media_ids = {n: i for i, n in enumerate(self.media_names)}
        regions = v["region"] if regions is None else check_regions(regions, media_ids, "regions")
        regions = sorted(regions, key=lambda r: r["base"])
        if hot_lines is None:
            hot_lines = max((o.hot_lines for o in OBSERVERS), default=0)
        check_machine_args(regions, functional=functional, smap=smap, node=node, seed=seed,
                            memory_limit_bytes=memory_limit_bytes, hot_lines=hot_lines,
                            cores=cores, cores_per_socket=v["core"].get("cores_per_socket", 1),
                            sockets=sockets, has_sockets=profile_sockets(v),
                            llc=list(v["cache"].values())[-1], remote_keys=LLC_REMOTE_KEYS)
        self.memory_limit_bytes = int(memory_limit_bytes)
        self.background = check_background(background, v["media"], regions)
        self.layout = Layout(*st.BLOCKS, cores=int(cores), sockets=int(sockets))
        # room for the kernels' site tables (dmapool's 6 and "(none)") without a resize, a
        # copy of the whole state (21 MB on skylake-ddr4) a machine
        state_setup.add_sections(self.layout, v, n_sites=16)
        self.S, self.pt, self.frames = build_memory_side(
            self.layout, v, regions, functional=functional, node=node, seed=seed,
            hot_lines=hot_lines, background=self.background)
        state_setup.init_sections(self.S, v, smap, cores=int(cores))
        spread(self.layout, self.S)
        # the core takes spare rows unasked (grow checks the limit only when they run
        # out): no more rows than the limit, the cores' reserved frames (held and counted)
        # at least
        limit = max(mm.RESERVED_FRAMES * self.layout.cores, self.memory_limit_bytes // mm.PAGE_BYTES)
        self.frames = self.frames[:limit].copy()
        self.region_names = [r["name"] for r in regions]
        self.regions = {r["name"]: r for r in regions}
        self._cycles_per_unit = cycles_per_unit(v)
        self.functional = functional
        self.mode = mode
        self.site_names = ["(none)"]
        self._site_ids = {"(none)": 0}
        self._out = np.zeros(4, dtype=np.int64)
        #: plain loads and stores run in the core's register-resident path; False sends
        #: every op through the general path (same results: tests/test_fast_path.py)
        self.plain_path = True
        for o in OBSERVERS:
            o.add(self)

    # ------------------------------------------------------------------ running
    @property
    def mode(self):
        """"kernel" or "user": the privilege level the next ops run at."""
        return "kernel" if self.S[st.SC.KERNEL] else "user"

    @mode.setter
    def mode(self, value):
        if value not in ("kernel", "user"):
            raise ValueError(f"mode must be 'kernel' or 'user', not {value!r}")
        self.S[st.SC.KERNEL] = value == "kernel"
        self.S[st.SC.REG_LO] = self.S[st.SC.REG_HI] = 0  # forget the fast path's region

    @property
    def cores(self):
        return self.layout.cores

    def core_state(self, k):
        """Core k's view of the state (memmodel.layout, "Cores"): its private sections at the
        offsets its header gives, the shared ones the same words as every core's."""
        return self.layout.core(self.S, k)

    @property
    def cycles(self):
        return int(self.S[st.SC.NOW])

    def _site_table(self, program):
        """This machine's ids of program's sites (names new to it added in the order of
        their first SITE ops)."""
        names, ids = program.site_names, self._site_ids
        for k in program.sites_used():
            site_id(ids, self.site_names, names[k])
        n = self.layout.shapes["site_ctr"][0]
        if len(self.site_names) > n:
            self.S = self.layout.resized(self.S, "site_ctr",
                                         (max(len(self.site_names), 2 * n), st.N_SCOUNT))
        # a name no SITE row uses is in no table: no op reads its entry
        return np.array([ids.get(name, 0) for name in names] or [0], dtype=np.int64)

    @classmethod
    def warmup(cls):
        """Compile every compiled function the facade calls (the core's run and finish, the
        scheduler of one program per core, the program validator, memmodel.memory's and memmodel.cache's entry points), or load
        them from numba's on-disk cache, by using each once on a throwaway machine, so that
        no later call compiles (e.g. before timing, or before forking workers). Returns the
        seconds it took: minutes cold, about a second from the cache."""
        t = time.perf_counter()
        m = cls("skylake-ddr4")
        _announce_compile(m)
        m.write(0x1000, bytes(range(64)))
        m.write(0x1040, np.arange(64, dtype=np.uint8))   # bytes arrive read-only, arrays not
        m.poison(0x2000)
        m.poison(0x2000, on=False)
        m.run(Program().load(0x1000).store(0x1040, b"\1" * 8))
        m.run([Program().load(0x1000)])
        m.read(0x1000, 8)
        m.cached(0x1000)
        return time.perf_counter() - t

    def drain(self):
        """Let everything issued so far complete (what run() does at its end); returns the
        cycle it took until."""
        return int(_pipeline.finish(self.S))

    def run(self, program, drain=True, repeat=1):
        """Execute a whole Program; returns RunResult. Raises EmuFault subclasses.
        drain=False leaves the ops in flight, so that the next run continues as if the two
        programs were one (a trace run in chunks); RunResult.cycles then counts to the last
        op's issue, and drain() ends the sequence. repeat=N: the program N times back to
        back, as one program of N copies (the state the same), the repetitions the machine
        shows to repeat applied at once (emu.fastforward; RunResult.fast_forwarded says
        how many).
        A list of programs, one per core of Machine(cores=N): they run together, each op
        of the core whose clock is earliest next (ties: the lowest core), so that the cores'
        accesses take place in simulated-time order; deterministic; a CoresResult. Functional
        memory follows x86-TSO: a core's store reaches memory when it leaves its store buffer,
        and its own loads forward from it (docs/design.md, "Cores"); the cores' caches are
        coherent (MESI, docs/machine.md "Cores")."""
        if isinstance(program, (list, tuple)):
            if isinstance(repeat, bool) or repeat != 1:
                raise ValueError("run(programs, repeat=N): one program per core runs once")
            return self._run_cores(list(program), drain)
        if not isinstance(program, Program):
            raise TypeError(f"run() takes a Program, not {type(program).__name__}")
        if isinstance(repeat, bool) or repeat != 1:
            return self._run_repeated([program], drain, repeat)
        sites, cost, fixups, _ = self._check(program)
        return self._run_checked(program, sites, cost, fixups, drain)

    def _bound(self, program, repeat=False):
        """(cycle bound, fixups, ops plus lines touched) of a run of `program`, validated
        (exception-table ops refused if `repeat`), the machine not changed."""
        _announce_compile(self)
        work, units, fixups, peer = program.validate()
        if repeat and fixups:
            raise ValueError("run(repeat=N) of a program with exception-table or recording "
                             "ops: run it N times to read each run's RunResult.left() or "
                             ".values")
        if not self.functional and program.needs_values():
            raise ValueError("a program that records, waits for or computes on values "
                             "(record=, plus_recorded, wait, lock_xadd, lock_cmpxchg) needs "
                             "functional memory (Machine(functional=True))")
        if peer and len(self.profile.values["cache"]) < 2:
            raise ValueError(f"{'/'.join(op.name for op in PEER_OPS)}: another core's access "
                             "needs a private cache level above a shared last level; this "
                             "profile has one level")
        return work + units * self._cycles_per_unit, fixups, units

    def _check(self, program, repeat=False):
        """What every run of `program` on this machine shares, done once (run_rounds and
        repeat run a program many times): _bound's checks and the table of its sites' ids
        in this machine. Returns (sites, cost, fixups, units)."""
        cost, fixups, units = self._bound(program, repeat)
        self._check_clock(f"program of {len(program)} ops", cost)
        return self._site_table(program), cost, fixups, units

    def _check_clock(self, what, cost):
        bound = self.cycles + cost
        if bound >= CLOCK_LIMIT:
            raise ProgramError(f"{what} may take up to {bound:.3g} cycles, beyond the "
                               f"emulated clock's limit {CLOCK_LIMIT:.3g} (the clock is at "
                               f"{self.cycles}): split it, or shorten its WORK ops and bulk "
                               "operations")

    def _run_checked(self, program, sites, cost, fixups, drain):
        """Run `program` whose _check gave (sites, cost, fixups)."""
        self._check_clock(f"program of {len(program)} ops", cost)   # the clock moved since
        return self._run_ops(program, sites, fixups, drain)

    def _run_ops(self, program, sites, fixups, drain):
        """The core's run of `program`, its sites this machine's `sites`."""
        ops, data = program.core_ops(), program.data
        start_cycle = self.cycles
        undone = np.zeros(len(ops) if fixups else 0, dtype=np.int64)
        i = 0
        first = not COMPILE_SECONDS
        t = time.perf_counter()
        while True:
            _core.run(self.S, self.pt, self.frames, ops, data, sites, i, undone, self._out,
                      self.plain_path, len(ops), False)
            i = int(self._out[1])
            if self._out[0] == st.ST_OK:
                break
            if self._out[0] == st.ST_WAIT:
                _pipeline.finish(self.S)
                raise self._wait_forever([(0, program, i, self._out)])
            self._stopped(self._out, i, ops[i], self.S, Op(int(ops[i, COL_OP])).name, [self.S])
        if self.S[MS.PQ_COUNT] > PQ_ENTRIES:
            raise RuntimeError("internal error: persistence queue overflow in one op")
        end = self.drain() if drain else self.cycles
        if first:
            COMPILE_SECONDS["run"] = time.perf_counter() - t
        cycles = end - start_cycle
        return RunResult(cycles=cycles, seconds=cycles / (self.freq_ghz * 1e9), ops=len(ops),
                         undone=undone if fixups else None, values=_values(program, undone))

    def _stopped(self, out, i, op, S_k, what, views):
        """A run stopped (out[0], not ST_OK) at op i, whose row is `op`, on the core whose view
        is S_k: the memory it needs is grown (the run goes on), or the cores of `views` end
        their pending work and the fault is raised, naming the op as `what`."""
        if out[0] == st.ST_NEED_PAGES:
            try:
                self.pt, self.frames = grow(self.S, self.pt, self.frames, int(out[2]),
                                            int(out[3]), self.memory_limit_bytes)
                return
            except MemoryLimit as e:
                for v in views:
                    _pipeline.finish(v)
                raise MemoryLimitFault(
                    "functional memory limit", i, self.site_names[int(S_k[st.SC.SITE])],
                    int(op[COL_ADDR]), f"{what} of {int(op[COL_SIZE])} bytes: {e} "
                    "(Machine(memory_limit_bytes=...), or functional=False to move no bytes)"
                ) from None
        for v in views:
            _pipeline.finish(v)
        raise fault(int(out[0]), i, self.site_names[int(S_k[st.SC.SITE])], int(out[2]), what)

    def _run_cores(self, programs, drain):
        """run() of one program per core (emu._core.run_cores)."""
        if len(programs) != self.cores:
            raise ValueError(f"run() of {len(programs)} programs on a machine of {self.cores} "
                             "core(s): one program per core")
        for program in programs:
            if not isinstance(program, Program):
                raise TypeError(f"run() takes Programs, not {type(program).__name__}")
        checks = [self._check(program) for program in programs]   # sites, cost, fixups, units
        views = [self.core_state(k) for k in range(self.cores)]
        for k, (program, (_, cost, _, _)) in enumerate(zip(programs, checks)):
            if int(views[k][st.SC.NOW]) + cost >= CLOCK_LIMIT:
                raise ProgramError(f"core {k}'s program of {len(program)} ops may take up to "
                                   f"{cost:.3g} cycles, beyond the emulated clock's limit "
                                   f"{CLOCK_LIMIT:.3g} from its clock {int(views[k][st.SC.NOW])}")
        undone = [np.zeros(len(p) if c[2] else 0, dtype=np.int64)
                  for p, c in zip(programs, checks)]
        parts = [[p.core_ops() for p in programs], [p.data for p in programs],
                 [c[0] for c in checks], undone]
        begin = np.zeros((self.cores + 1, 4), dtype=np.int64)
        for col, arrays in enumerate(parts):
            begin[1:, col] = np.cumsum([len(a) for a in arrays])
        begin[:-1, 3] = np.where([c[2] for c in checks], begin[:-1, 3], -1)
        ops, data, sites, res = (np.concatenate(a) for a in parts)
        pos, out = np.zeros(self.cores, dtype=np.int64), np.zeros(5, dtype=np.int64)
        spinning = np.zeros(self.cores, dtype=np.int64)
        starts = [int(v[st.SC.NOW]) for v in views]
        while True:   # grow() replaces pt and frames, never S: the views stay
            _core.run_cores(self.S, self.layout.fixed_words, self.pt, self.frames, ops, data,
                            sites, res, begin, pos, spinning, out)
            k, i = int(out[4]), int(out[1])
            if out[0] == st.ST_OK:
                break
            if out[0] == st.ST_WAIT:
                for v in views:
                    _pipeline.finish(v)
                raise self._wait_forever([(c, programs[c], int(pos[c]), out if c == k else None)
                                          for c in range(self.cores)
                                          if pos[c] < len(programs[c])])
            op = parts[0][k][i]
            self._stopped(out, i, op, views[k], f"core {k}'s {Op(int(op[COL_OP])).name}", views)
        if max(v[MS.PQ_COUNT] for v in views) > PQ_ENTRIES:
            raise RuntimeError("internal error: persistence queue overflow in one op")
        for u, r0 in zip(undone, begin[:-1, 3].tolist()):   # res is the cores' words joined
            if r0 >= 0:
                u[:] = res[r0:r0 + len(u)]
        ends = [int(_pipeline.finish(v)) if drain else int(v[st.SC.NOW]) for v in views]
        hz = self.freq_ghz * 1e9
        per = [RunResult(cycles=e - s, seconds=(e - s) / hz, ops=len(p),
                         undone=u if c[2] else None, values=_values(p, u))
               for e, s, p, u, c in zip(ends, starts, programs, undone, checks)]
        cycles = max(ends) - min(starts)
        return CoresResult(cycles=cycles, seconds=cycles / hz, ops=sum(map(len, programs)),
                           cores=per)

    def _wait_forever(self, waiting):
        """The WaitForever of the cores `waiting`: (core, program, op index, out of its last
        check or None)."""
        what = []
        for k, program, i, out in waiting:
            row = program.ops[i]
            found = f", found {int(out[3]):#x}" if out is not None else ""
            what.append(f"core {k} op {i} ({Op(int(row[COL_OP])).name} at {int(row[COL_ADDR]):#x}"
                        f"{found})")
        k, program, i, _ = next((w for w in waiting if w[3] is not None), waiting[0])
        why = ("no other core can change it" if self.cores == 1 else
               "every core with ops left waits, and no store is on its way to memory")
        return WaitForever("wait forever", i, self.site_names[int(self.core_state(k)[st.SC.SITE])],
                           int(program.ops[i][COL_ADDR]), f"{why}: {'; '.join(what)}")

    # ------------------------------------------------------------------ memory
    def run_rounds(self, programs, repeat):
        """Run each of `programs` in turn as run() runs one (drained), the whole sequence
        `repeat` times (a benchmark's rounds): one RunResult of them all, the rounds the
        machine shows to repeat applied at once, as run(repeat=N) does."""
        return self._run_repeated(list(programs), True, repeat, drain_each=True)

    def _run_repeated(self, programs, drain, n, drain_each=False):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"run(repeat={n!r}): a number of repetitions, at least 1")
        for program in programs:
            if not isinstance(program, Program):
                raise TypeError(f"run() takes a Program, not {type(program).__name__}")
        # N repetitions against the clock's limit before anything, a site table included
        bounds = [self._bound(program, repeat=True) for program in programs]
        self._check_clock(f"{n} repetitions of {sum(map(len, programs))} ops",
                          int(n) * sum(max(cost, 1) for cost, _, _ in bounds))
        runs, units = [], 0
        for program, (cost, fixups, u) in zip(programs, bounds):
            sites = self._site_table(program)
            runs.append(partial(self._run_checked, program, sites, cost, fixups))
            units += u
        start = self.cycles
        skipped = fastforward.run_repeated(self, runs, int(n), drain_each, units)
        cycles = (self.drain() if drain and not drain_each else self.cycles) - start
        return RunResult(cycles, cycles / (self.freq_ghz * 1e9),
                         sum(len(p) for p in programs) * int(n), fast_forwarded=skipped)

    def _check_mapped(self, addr, n, max_bytes=None):
        """The facade's one check before compiled code sees an address range: whole numbers,
        at most `max_bytes` long if given, inside the physical address space (compiled
        lookups do not bounds-check), mapped."""
        for what, v in (("address", addr), ("size", n)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{what} must be an integer, not {type(v).__name__} ({v!r})")
        addr, n = int(addr), int(n)
        if n < 0:
            raise ValueError(f"size {n} at address {addr:#x} is negative")
        if max_bytes is not None and n > max_bytes:
            raise ValueError(f"size {n} at address {addr:#x}: more than the memory limit "
                             f"(Machine(memory_limit_bytes={max_bytes})); read it in parts")
        if addr < 0 or addr + max(n, 1) > PHYS_LIMIT:
            raise UnmappedAccess("unmapped access", -1, "(facade)", addr,
                                 f"[{addr:#x}, +{n}) is outside the physical address space "
                                 f"[0, {PHYS_LIMIT:#x})")
        bad = mm.unmapped_in(self.S, addr, addr + max(n, 1))
        if bad >= 0:
            raise UnmappedAccess("unmapped access", -1, "(facade)", int(bad))

    def _make_present(self, addr, n):
        """Give every page of mapped [addr, addr+n) a frame, growing the pools as needed."""
        need = np.zeros(2, dtype=np.int64)
        mm.missing_pages(self.S, self.pt, addr, addr + n, need)
        self.pt, self.frames = grow(self.S, self.pt, self.frames, int(need[0]), int(need[1]),
                                       self.memory_limit_bytes)
        mm.map_pages(self.S, self.pt, addr, addr + n)

    def write(self, addr, data):
        """Place bytes in memory without timing (set-up of buffers before a run)."""
        raw = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) \
            else np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        self._check_mapped(addr, len(raw))
        self._make_present(addr, len(raw))
        mm.write_bytes(self.S, self.pt, self.frames, addr, raw, 0, len(raw))
        mm.persist_range(self.S, self.pt, self.frames, addr, addr + len(raw))
        persist.supersede_range(self.S, addr, addr + len(raw))

    def poison(self, addr, on=True):
        """Poison (on=False: heal) the 64-byte media line holding `addr`, as error injection
        does: cached copies are dropped first by a timed CLFLUSH + MFENCE (written back if
        dirty), so the next access reads the media. Loads and copy sources that reach it
        raise MachineCheck unless the op is machine-check safe (FLAG_MCSAFE), which stops at
        the line instead."""
        self._check_mapped(addr, 1)
        self._make_present(addr, 1)
        mode, ac = self.mode, self.S[st.SC.AC]
        self.mode = "kernel"          # out of band: no privilege or SMAP check applies
        self.S[st.SC.AC] = 1
        try:
            self.run(Program().clflush(addr).mfence())
        finally:
            self.mode, self.S[st.SC.AC] = mode, ac
        self.S[st.SC.POISON_N] += mm.set_poison(self.S, self.pt, addr, on) * (1 if on else -1)
        self.S[st.SC.REG_LO] = self.S[st.SC.REG_HI] = 0  # poisoned memory: no fast path

    def transient_lines(self, core=0):
        """Lines brought into the caches from memory by transient (mispredicted) loads and
        not used architecturally since, still cached in core `core`'s levels (its socket's
        LLC included): what a flush+reload attacker on that core would see appear."""
        S_k = self.core_state(core)
        return sorted(set().union(*(lines_with_flag(self.layout, S_k, lvl, cm.F_TRANSIENT)
                                    for lvl in range(len(self.level_names)))))

    def cached(self, addr, core=0):
        """Name of the highest cache level holding `addr`'s line, or None, as core `core`
        sees them: its private levels and its socket's LLC."""
        S_k = self.core_state(core)
        for lvl, name in enumerate(self.level_names):
            if cm.lookup(S_k, lvl, addr >> 6) >= 0:
                return name
        return None

    def read(self, addr, n):
        """Bytes at [addr, addr+n) as the program sees them (no timing); at most
        memory_limit_bytes at once."""
        self._check_mapped(addr, n, self.memory_limit_bytes)
        return mm.read_bytes(self.S, self.pt, self.frames, addr, n).tobytes()

    def crash(self):
        """The persistent regions as a power failure now would leave them, as a CrashImage;
        the machine is not disturbed. Durable: lines written back from the caches (eviction,
        CLFLUSH), and CLWB/CLFLUSHOPT write-backs and non-temporal stores followed by an
        SFENCE or MFENCE; under eADR also every cached store. Lost: everything else (dirty
        lines under ADR, WC buffers, unfenced write-backs)."""
        if not self.functional:
            raise ValueError("crash() needs functional memory (Machine(..., functional=True))")
        reg = self.layout.view(self.S, "reg")
        cdir = self.layout.view(self.S, "chunk_dir")
        pages = {}
        for i, name in enumerate(self.region_names):
            if reg[i, mm.RG.PERSIST] == mm.P_NONE:
                continue
            base, d0 = int(reg[i, mm.RG.BASE]), int(reg[i, mm.RG.DIR])
            n_dir = (int(reg[i, mm.RG.END]) - base + (1 << mm.CHUNK_SHIFT) - 1) >> mm.CHUNK_SHIFT
            for k in np.flatnonzero(cdir[d0:d0 + n_dir] >= 0):
                row = self.pt[cdir[d0 + k], mm.DURABLE0:mm.DURABLE0 + mm.CHUNK_PAGES]
                for p in np.flatnonzero(row >= 0):
                    addr = base + (int(k) << mm.CHUNK_SHIFT) + (int(p) << mm.PAGE_SHIFT)
                    pages[addr] = self.frames[row[p]].tobytes()
        return CrashImage(pages, {n: r for n, r in self.regions.items()
                                  if reg[self.region_names.index(n), mm.RG.PERSIST] != mm.P_NONE})

    # ------------------------------------------------------------------ snapshots
    def save(self, path):
        """Write this machine's whole state to `path` (a zip; docs/machine.md "Snapshots"),
        written beside it and renamed, so `path` is never half written."""
        from emu import snapshot
        snapshot.save(self, path)

    @classmethod
    def load(cls, path):
        """The machine saved at `path`, continuing bit-identically to the one saved; an
        emu.snapshot.SnapshotError naming what differs for a file of another package version
        or state layout, or one that is not a whole snapshot."""
        from emu import snapshot
        return snapshot.load(cls, path)

    # ------------------------------------------------------------------ statistics
    def reset_stats(self):
        """Zero every counter stats() reports (per cache level, media, region and site), e.g.
        between the warm-up and the measured phase of a workload. Nothing of the model
        changes: cache contents and replacement state, queues, timing and memory stay. The
        cycle count in stats() is the machine's time, not a counter, and is not reset
        (RunResult.cycles gives one run's own cycles)."""
        self.S[self.layout.where(self.S, "counter", "mark")] = 0   # the words of those roles
        for k in range(self.cores):   # the hot-line tables' lines, too
            hot.init_sections(self.layout, self.core_state(k), int(self.S[MT.HOT_CAP]))

    def stats(self):
        """Counters per cache level, media, region and site, plus cycles: an emu.frames.Stats,
        a dict with to_frame(). With several cores the levels' and sites' counters are the
        cores' sums, and "cores" holds each core's levels and sites; with several sockets
        "remote" holds the misses the other socket's caches served (remote_hitm,
        remote_hits), summed, and each core's entry of "cores" its own; with several cores
        "coherence" holds the snoop filter's back-invalidations (sf_back_invalidations,
        memmodel._snoopfilter), summed, and each core's entry its own."""
        view = lambda name: self.layout.view(self.S, name)  # noqa: E731
        per_core = [self._core_counters(self.core_state(k)) for k in range(self.cores)]
        levels, sites = per_core[0] if self.cores == 1 else (
            {n: {c: sum(p[i][n][c] for p in per_core) for c in d}
             for n, d in per_core[0][i].items()} for i in range(2))
        kinds = [self.profile.values["media"][n]["kind"] for n in self.media_names]
        media = {n: {c: int(view("mcnt")[i, k]) for k, c in md.counter_names(kinds[i])}
                 for i, n in enumerate(self.media_names)}
        regions = {n: dict(zip(mm.REGION_COUNTER_NAMES, map(int, view("region_ctr")[i])))
                   for i, n in enumerate(self.region_names)}
        out = Stats(cycles=self.cycles, seconds=self.cycles / (self.freq_ghz * 1e9),
                    levels=levels, media=media, regions=regions, sites=sites)
        if self.cores > 1:
            out["cores"] = [{"levels": lv, "sites": s} for lv, s in per_core]
            sk = self.layout.view(self.S, "socket")
            xc = [dict(zip((c.name.lower() for c in XC), map(int, sk[at:at + len(XC)])))
                  for at in (socket_counters_at(self.layout, k) for k in range(self.cores))]
            for c, x in zip(out["cores"], xc):   # the snoop filter's back-invalidations
                c["coherence"] = {n: x[n] for n in COHERENCE_COUNTER_NAMES}
            out["coherence"] = {n: sum(x[n] for x in xc) for n in COHERENCE_COUNTER_NAMES}
        if self.layout.sockets > 1:   # each core's misses the other socket served
            for c, x in zip(out["cores"], xc):
                c["remote"] = {n: x[n] for n in REMOTE_COUNTER_NAMES}
            out["remote"] = {n: sum(c["remote"][n] for c in out["cores"])
                             for n in REMOTE_COUNTER_NAMES}
        return out

    def _core_counters(self, S_k):
        """(levels, sites): the counters of the core whose view is S_k."""
        levels = {n: dict(zip(cm.COUNTER_NAMES, map(int, self.layout.view(S_k, "ccnt")[i])))
                  for i, n in enumerate(self.level_names)}
        for d in levels.values():
            d["hits"] = d["load_hits"] + d["store_hits"]
            d["misses"] = d["load_misses"] + d["store_misses"]
        sites = {n: dict(zip(st.SITE_COUNTER_NAMES, map(int, self.layout.view(S_k, "site_ctr")[i])))
                 for i, n in enumerate(self.site_names)}
        return levels, sites

    def run_profile(self):
        """emu.profiler.RunProfile of what this machine ran since it was made or reset_stats():
        cycles, stall causes and events per site (per source line with
        isa.sourcelines.record_lines), misses per region, and, with a hot-line table
        (Machine(hot_lines=N)), the lines that missed most."""
        from emu.profiler import RunProfile
        return RunProfile.of(self)

    def state_hash(self, h=None):
        """sha256 (updated into `h` if given) over every section of the model's state, by
        name, leaving out its DERIVED words (memmodel.layout) and the site table's unused
        rows: equal hashes mean the machine would behave identically from here on."""
        h = h or hashlib.sha256()
        kept = np.ones(len(self.S), dtype=np.bool_)
        kept[self.layout.where(self.S, "derived")] = False
        for name in sorted(self.layout.shapes):
            parts = self.layout.indices(name)   # every core's copy
            if name == "site_ctr":   # the sites named so far: not the table's spare rows
                parts = [p[:len(self.site_names)] for p in parts]
            idx = np.concatenate([p.reshape(-1) for p in parts])
            idx = idx[kept[idx]]
            if not len(idx):
                continue
            h.update(name.encode())
            h.update(self.S[idx].tobytes())
        return h.hexdigest()

    def cache_contents(self, level, core=0):
        """Lines held per set at `level` (a name such as 'l1d' or an index) of core `core`
        (a private level: its own; the LLC: its socket's)."""
        return contents(self.layout, self.core_state(core), self._level(level))

    def dirty_lines(self, level, core=0):
        """Sorted lines held dirty at `level` of core `core` (as cache_contents)."""
        return lines_with_flag(self.layout, self.core_state(core), self._level(level),
                               cm.F_DIRTY)

    def _level(self, level):
        return self.level_names.index(level) if isinstance(level, str) else level
