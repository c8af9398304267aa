"""What a run gives back: its result (RunResult), the precise faults it can stop with, and
the crash image of the persistent regions (Machine.crash)."""
from dataclasses import dataclass, field

import numpy as np

from emu.state import ST_FAULT_MCE, ST_FAULT_PRIVILEGE, ST_FAULT_SMAP, ST_FAULT_UNMAPPED
from isa.program import EFAULT, Ret
from memmodel import memory as mm
from memmodel.sections.memory import MemoryLimit


class EmuFault(Exception):
    """A precise fault: the run stopped before op `op_index`; state up to it is kept."""

    def __init__(self, kind, op_index, site, addr, detail=""):
        self.kind, self.op_index, self.site, self.addr = kind, op_index, site, addr
        msg = f"{kind} at op {op_index} (site {site!r}), address {addr:#x}"
        super().__init__(msg + (f": {detail}" if detail else ""))


class UnmappedAccess(EmuFault):
    pass


class SmapFault(EmuFault):
    """Kernel-mode data access to a user page with SMAP on and EFLAGS.AC clear."""


class PrivilegeFault(EmuFault):
    """User-mode access to a supervisor page."""


class MachineCheck(EmuFault):
    """Poison consumed outside a machine-check-safe copy: unrecoverable."""


class WaitForever(EmuFault):
    """A WAIT (or spinning LOCK CMPXCHG) waits for a value no core can write any more: every
    core with ops left waits, and no store is on its way to memory (with one core: any
    wait whose first check fails)."""


class MemoryLimitFault(EmuFault, MemoryLimit):
    """The op would need more functional memory than Machine(memory_limit_bytes) allows: a
    precise fault, and the MemoryLimit that write() raises, so one except catches both."""


def fault(status, i, site, addr, name):
    """The exception for the core's stop `status` (emu.state ST_FAULT_*) at op i, an access
    of `name` (its opcode's name) to addr in site `site`."""
    if status == ST_FAULT_UNMAPPED:
        return UnmappedAccess("unmapped access", i, site, addr, f"{name} touches no region")
    if status == ST_FAULT_SMAP:
        return SmapFault("SMAP fault", i, site, addr,
                         f"kernel-mode {name} of a user page with EFLAGS.AC clear (no STAC)")
    if status == ST_FAULT_PRIVILEGE:
        return PrivilegeFault("page fault", i, site, addr, f"user-mode {name} of a supervisor page")
    if status == ST_FAULT_MCE:
        return MachineCheck("unrecoverable machine check", i, site, addr,
                            f"{name} consumed poison outside a machine-check-safe copy")
    return RuntimeError(f"core returned unknown status {status} at op {i}")


@dataclass
class RunResult:
    cycles: int
    seconds: float
    ops: int
    undone: np.ndarray | None = None   # bytes each exception-table op left undone
    fast_forwarded: int = 0   # with repeat=N: the repetitions applied as a shift, not run
    #: the values the program's recording ops read (Program.load(record=...), lock_xadd,
    #: lock_cmpxchg, lock_rmw, wait): {record name (or op index): value}
    values: dict = field(default_factory=dict)

    def left(self, op_index):
        """Bytes op `op_index` (a FLAG_EXTABLE / FLAG_MCSAFE op) left undone: 0 unless it
        faulted or consumed poison part-way."""
        if self.undone is None:
            raise ValueError("this program has no exception-table ops (FLAG_EXTABLE/MCSAFE)")
        return int(self.undone[op_index])

    def ret(self, r):
        """The value a kernel function's Ret handle stands for."""
        if not isinstance(r, Ret):
            raise TypeError(f"ret() takes a Ret, not {type(r).__name__}")
        if r.op is None:
            return r.value
        left = self.left(r.op)
        return left if r.kind == "left" else (-EFAULT if left else 0)


@dataclass
class CoresResult:
    """Machine.run of one program per core: the cycles from the earliest core's start to the
    last one's end, their seconds, the ops of all, and each core's RunResult (its own start
    to its end)."""
    cycles: int
    seconds: float
    ops: int
    cores: list


class CrashImage:
    """Bytes of the persistent regions after a simulated power failure (Machine.crash)."""

    def __init__(self, pages, regions):
        self.pages, self.regions = pages, regions

    def read(self, addr, n):
        """Bytes at [addr, addr+n) of a persistent region; never-written bytes are zero."""
        if not any(r["base"] <= addr and addr + n <= r["base"] + r["size_bytes"]
                   for r in self.regions.values()):
            raise ValueError(f"{addr:#x}+{n} is not inside one persistent region "
                             f"({', '.join(self.regions) or 'none in this profile'})")
        out = bytearray(n)
        pos = 0
        while pos < n:
            a = addr + pos
            page, off = a & ~(mm.PAGE_BYTES - 1), a & (mm.PAGE_BYTES - 1)
            k = min(n - pos, mm.PAGE_BYTES - off)
            if page in self.pages:
                out[pos:pos + k] = self.pages[page][off:off + k]
            pos += k
        return bytes(out)
