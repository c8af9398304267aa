"""Programs built event by event from column arrays, put in order in one compiled pass, for
kernel paths whose ops are computed for a whole array of calls at once (kernels.dmapool's
rounds); and a buffer their op arrays are carved from."""
import sys

import numpy as np

from isa._rows import put_rows
from isa.ops import FLAG_DEPENDENT as DEP
from isa.ops import N_COLS, Op
from isa.program import Program
from isa.sourcelines import line_ip

STEPS = 1 << 24   # steps per event in the row ordering


class EventRows:
    """A program's op rows, added a column array at a time (one row per event of an array
    of events) and put in order at the end: row (event k, step j) runs after (k, j - 1)
    and before anything of event k + 1. `sites`: the program's site names."""

    def __init__(self, sites):
        self.keys, self.parts = [], []
        self.sites = tuple(sites)
        self._site = {name: i for i, name in enumerate(self.sites)}

    def add(self, event, step, op, addr=0, imm=0, flags=0, size=8, src=0):
        event = np.asarray(event, dtype=np.int64)
        self.keys.append(np.broadcast_to(event * STEPS + step, (event.size,)))
        self.parts.append([np.ravel(np.asarray(v, dtype=np.int64))
                           for v in (op, addr, size, src, imm, flags)])

    def site(self, event, step, name):
        self.add(event, step, Op.SITE, imm=self._site[name])

    def load(self, event, step, addr, dependent=False, size=8):
        """One load instruction of the kernel, run once per event: its ip is the caller's
        line (isa.sourcelines.line_ip), as for Program(line_ips=True)."""
        self.add(event, step, Op.LOAD, addr, flags=DEP if dependent else 0, size=size,
                 src=line_ip(sys._getframe(1)))

    def store(self, event, step, addr, value, size=8):
        self.add(event, step, Op.STORE, addr, imm=value, size=size,
                 src=line_ip(sys._getframe(1)))

    def exit_branch(self, event, step, index, limit, ip):
        """A loop's data-dependent exit test on the load just before it (an empty body: the
        loop goes on while index < limit, so its outcome is the walk's, known when the
        rows are built; it resolves once that load's data is there), at branch site ip."""
        self.add(event, step, Op.BRANCH, index, size=limit, flags=DEP, src=ip)

    def program(self, memory=None):
        """The Program, its op array taken from `memory` (an OpMemory) if given.
        Each part's rows go straight to their places in a compiled pass (numpy's row
        scatter through blocks of rows was several times slower); Machine.run validates
        them."""
        keys = np.concatenate(self.keys)
        place = np.empty(len(keys), dtype=np.int64)
        place[np.argsort(keys, kind="stable")] = np.arange(len(keys))
        ops = memory.take(len(keys)) if memory else np.empty((len(keys), N_COLS), np.int64)
        at = 0
        for key, part in zip(self.keys, self.parts):
            put_rows(ops, place[at:at + len(key)], *part)
            at += len(key)
        return Program.from_array(ops, site_names=self.sites, copy=False, check=False)


class OpMemory:
    """One buffer op arrays are carved from, reused once none of them is alive: a study's
    rounds may take GiBs of op arrays, and memory the process has not touched costs a page
    fault a page (and a mapping of its own for every array over glibc's 32 MiB)."""

    def __init__(self):
        self.buf, self.used, self.wanted = None, 0, 0

    def reset(self):
        """The arrays after this: the buffer is reused only if no array of it is alive; when
        it was too small, it grows to twice what was asked of it (a page is only touched,
        so only counted, when used)."""
        if self.buf is not None and (sys.getrefcount(self.buf) > 2 or self.wanted > len(self.buf)):
            self.buf = None
        if self.buf is None and self.wanted:
            self.buf = np.empty((2 * self.wanted, N_COLS), dtype=np.int64)
        self.used, self.wanted = 0, 0

    def take(self, rows):
        self.wanted += rows
        if self.buf is None or self.used + rows > len(self.buf):
            return np.empty((rows, N_COLS), dtype=np.int64)
        self.used += rows
        return self.buf[self.used - rows:self.used]
