"""A slow, obviously correct x86-TSO reference: every final state of a litmus test.

The abstract machine of x86-TSO (Sewell et al., CACM 2010, §3; Owens, Sarkar, Sewell,
TPHOLs 2009): one shared memory, and per thread a FIFO store buffer. In each step one
thread does one thing:
* a store appends (location, value) to its thread's buffer;
* a load reads the newest entry for its location in its own buffer (store forwarding),
  or memory if there is none;
* the oldest entry of a non-empty buffer leaves for memory (at any time: flushes are
  nondeterministic, and the search tries every point);
* mfence waits until its thread's buffer is empty;
* sfence does nothing (stores already leave the buffer in order, on write-back memory);
* a locked op (xchg, lock xadd) waits until its thread's buffer is empty, then reads and
  writes memory in one step. The paper's machine takes a global lock, lets the
  instruction's writes go through the buffer and drains it before unlocking, while no
  other thread reads memory or flushes; the other threads can only buffer stores or read
  their own buffers meanwhile, which commute with the locked step, so both machines reach
  the same final states.
A run ends when every thread has run its ops and every buffer is empty. `tso_outcomes`
searches every interleaving of those steps (depth first, each machine state once) and
returns the set of final states; `sc_outcomes` does the same with stores written to
memory at once (sequential consistency: plain interleavings). Each final state is a tuple
of sorted (name, value) pairs: registers as "T:reg", memory by location.

The hooks (`_read`, `_flushable`, `_store`, `_fence_waits`, `_lock_waits`) are the points
where a wrong machine would differ: tests/test_reference_tso.py subclasses them to show that
a machine without forwarding, with non-FIFO buffers, with fences or locks that do not drain,
or with no buffers at all gets some litmus verdicts wrong.

How the multi-core emulator (issue 39 §3) is to be checked against this: each litmus test
becomes one program per core (a store, load, mfence, sfence or locked op per op here; a
load's register is read back from the core's results), run many times with random timing
perturbations (start cycles, WORK padding between ops, which core's line is cached where,
seeds). Every final state the emulator produces must be in `tso_outcomes(test)` (so a
forbidden outcome never appears), and over the runs it must also produce the relaxed ones
(`relaxed_outcomes(test)`: TSO-allowed, not SC), as SB, amd3, R and n6 have, or the
perturbations do not reach the store buffer's window and the check proves little. The
emulator's results are never compared with themselves: this module is the expected side.
"""
from litmus import ALLOWED, FORBIDDEN, LOCKED, check


class TSOMachine:
    """Enumerate the final states of one litmus test on the x86-TSO abstract machine."""

    def __init__(self, test):
        self.test = check(test)
        self.threads = test.threads
        self.loc_names = test.locations()
        self.loc = {name: i for i, name in enumerate(self.loc_names)}
        self.reg_names = test.registers()
        self.reg = {name: i for i, name in enumerate(self.reg_names)}

    # The machine's rules, one hook each. A buffer is a tuple of (location, value), oldest first.
    def _read(self, mem, buf, loc):
        for where, value in reversed(buf):
            if where == loc:
                return value
        return mem[loc]

    def _flushable(self, buf):
        """Indices of the entries that may leave the buffer next."""
        return (0,) if buf else ()

    def _store(self, mem, buf, loc, value):
        """(mem, buf) after a store."""
        return mem, buf + ((loc, value),)

    def _fence_waits(self, buf):
        return bool(buf)

    def _lock_waits(self, buf):
        return bool(buf)

    def _steps(self, state):
        """Every state one step of one thread leads to."""
        pcs, regs, mem, bufs = state
        for t, ops in enumerate(self.threads):
            buf = bufs[t]
            for i in self._flushable(buf):
                loc, value = buf[i]
                yield (pcs, regs, _set(mem, loc, value), _set(bufs, t, buf[:i] + buf[i + 1:]))
            if pcs[t] == len(ops):
                continue
            op = ops[pcs[t]]
            pcs_next = _set(pcs, t, pcs[t] + 1)
            loc = self.loc.get(op.addr)
            reg = self.reg[f"{t}:{op.reg}"] if op.reg else None
            if op.kind == "st":
                value = op.value + (regs[self.reg[f"{t}:{op.src}"]] if op.src else 0)
                mem_next, buf_next = self._store(mem, buf, loc, value)
                yield (pcs_next, regs, mem_next, _set(bufs, t, buf_next))
            elif op.kind == "ld":
                yield (pcs_next, _set(regs, reg, self._read(mem, buf, loc)), mem, bufs)
            elif op.kind == "mfence":
                if not self._fence_waits(buf):
                    yield (pcs_next, regs, mem, bufs)
            elif op.kind == "sfence":
                yield (pcs_next, regs, mem, bufs)
            elif op.kind in LOCKED:
                if not self._lock_waits(buf):
                    old = self._read(mem, buf, loc)
                    new = op.value if op.kind == "xchg" else old + op.value
                    regs_next = regs if reg is None else _set(regs, reg, old)
                    yield (pcs_next, regs_next, _set(mem, loc, new), bufs)
            else:
                raise ValueError(f"{self.test.name}: thread {t}: no rule for op {op.kind!r}")

    def outcomes(self):
        init = tuple(self.test.init.get(name, 0) for name in self.loc_names)
        start = ((0,) * len(self.threads), (0,) * len(self.reg_names), init,
                 ((),) * len(self.threads))
        seen = {start}
        todo = [start]
        finals = set()
        while todo:
            state = todo.pop()
            ends = True
            for nxt in self._steps(state):
                ends = False
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
            if ends:
                pcs, regs, mem, bufs = state
                if any(pcs[t] != len(ops) for t, ops in enumerate(self.threads)) or any(bufs):
                    raise RuntimeError(f"{self.test.name}: the machine is stuck at {state}")
                finals.add(tuple(sorted(zip(self.reg_names + self.loc_names, regs + mem))))
        return frozenset(finals)


class SCMachine(TSOMachine):
    """Sequential consistency: a store goes straight to memory."""

    def _store(self, mem, buf, loc, value):
        return _set(mem, loc, value), buf


def _set(tup, i, value):
    return tup[:i] + (value,) + tup[i + 1:]


def tso_outcomes(test):
    return TSOMachine(test).outcomes()


def sc_outcomes(test):
    return SCMachine(test).outcomes()


def relaxed_outcomes(test):
    """The final states x86-TSO allows and SC does not."""
    return tso_outcomes(test) - sc_outcomes(test)


def satisfies(outcome, cond):
    values = dict(outcome)
    return all(values[name] == value for name, value in cond.items())


def verdict(test, outcomes):
    """ALLOWED if some final state in `outcomes` satisfies the test's condition."""
    return ALLOWED if any(satisfies(o, test.cond) for o in outcomes) else FORBIDDEN
