"""Litmus tests for x86 memory ordering, with the verdict the literature gives each.

A test is a few threads of memory ops over named locations (all 0 unless `init` says
otherwise), and a condition on the final state: thread registers, named "T:reg" (thread
index, register name), and memory, named by the location. The verdict says whether x86
allows a run that ends in a state satisfying the condition. tests/reference_tso.py
enumerates every final state of a test under x86-TSO and under SC;
tests/test_reference_tso.py checks the enumerator's verdicts against the ones here.

The ops (x86 instruction in brackets):
* `st(addr, value, src=None)`: a store [mov [addr], imm]; with `src`, the value stored is
  `value` plus that register (a non-atomic increment is `ld` then `st(..., 1, src=reg)`).
* `ld(reg, addr)`: a load into a register [mov reg, [addr]].
* `MFENCE`, `SFENCE` [mfence, sfence]. On write-back memory x86-TSO gives sfence no effect
  (the store buffer already keeps stores in order); it is here so that a later emulator
  that models it is held to the same verdicts.
* `xchg(reg, addr, value)`: a locked exchange [xchg [addr], reg] (implicitly locked): reg
  gets the old value, memory the new.
* `lock_xadd(addr, value, reg=None)`: a locked add [lock xadd / lock add]; reg (if given)
  gets the old value. Linux's x86-64 `smp_mb()` is `lock; addl $0,-4(%rsp)`: a locked add
  of 0 to a location no other thread touches (arch/x86/include/asm/barrier.h).

Where each verdict comes from (`source` of each test):
* CACM: Sewell, Sarkar, Owens, Zappa Nardelli, Myreen, "x86-TSO: A Rigorous and Usable
  Programmer's Model for x86 Multiprocessors", CACM 53(7), July 2010, pp. 89-97. Read
  through the stored magazine pages: p. 93 (§2.2: IRIW, allowed by Intel's white paper
  and AMD3.14 but not observed, and forbidden by x86-TSO's single shared memory; n6,
  observable on an Intel Core 2 and allowed by x86-TSO) at
  https://mags.acm.org/communications/201007?pg=93 and p. 96 (§3.2: the SDM's examples 8-1
  to 8-6 with x86-TSO's verdict and reason for each; amd3) at
  https://mags.acm.org/communications/201007/?pg=96.
* SDM: Intel SDM vol. 3A §8.2.3, the examples the CACM paper's §3.2 walks through, and
  §8.2.3.8-8.2.3.9 (locked instructions have a total order; loads and stores are not
  reordered with locked instructions), read at
  https://xem.github.io/minix86/manual/intel-x86-and-64-manual-vol3/o_fe12b1e2a880e0ce-268.html
* Model: tests the papers do not list (fenced variants, R, S, 2+2W; n5, whose page of the
  CACM paper is not among the stored pages). Their verdict follows from x86-TSO's
  definition (CACM §3, Owens/Sarkar/Sewell TPHOLs 2009 §3): the only reordering is a
  store's delay in its thread's FIFO buffer past later loads of other locations, and
  mfence and locked instructions wait for the buffer to drain. Each such entry says why:
  for a forbidden one, the order of stores in memory its condition would need and why
  that order cannot be; for an allowed one, a schedule that reaches it (some of which
  tests/test_reference_tso.py follows by hand).
"""
from typing import NamedTuple

ALLOWED = "allowed"
FORBIDDEN = "forbidden"

KINDS = ("st", "ld", "mfence", "sfence", "xchg", "lock_xadd")
LOCKED = ("xchg", "lock_xadd")


class Op(NamedTuple):
    kind: str
    addr: str | None = None
    value: int = 0
    reg: str | None = None   # the register a load or a locked op writes
    src: str | None = None   # a store's value adds this register


def st(addr, value, src=None):
    return Op("st", addr, value, src=src)


def ld(reg, addr):
    return Op("ld", addr, reg=reg)


def xchg(reg, addr, value):
    return Op("xchg", addr, value, reg=reg)


def lock_xadd(addr, value, reg=None):
    return Op("lock_xadd", addr, value, reg=reg)


MFENCE = Op("mfence")
SFENCE = Op("sfence")


class LitmusTest(NamedTuple):
    name: str
    threads: tuple          # of tuples of Op
    cond: dict              # "T:reg" or location -> value
    verdict: str            # ALLOWED or FORBIDDEN: may a run end with `cond` true
    source: str
    init: dict = {}

    def registers(self):
        """The final-state names of the registers the threads write."""
        return sorted({f"{t}:{op.reg}" for t, ops in enumerate(self.threads) for op in ops
                       if op.reg is not None})

    def locations(self):
        return sorted({op.addr for ops in self.threads for op in ops if op.addr} | set(self.init))


def check(test):
    """Raise ValueError naming the first thing wrong with `test`; return it otherwise."""
    if test.verdict not in (ALLOWED, FORBIDDEN):
        raise ValueError(f"{test.name}: verdict {test.verdict!r} is not {ALLOWED!r} "
                         f"or {FORBIDDEN!r}")
    if not test.source:
        raise ValueError(f"{test.name}: no source for its verdict")
    for t, ops in enumerate(test.threads):
        written = set()
        for op in ops:
            if op.kind not in KINDS:
                raise ValueError(f"{test.name}: thread {t}: unknown op kind {op.kind!r}")
            fence = op.kind in ("mfence", "sfence")
            if fence and op.addr is not None:
                raise ValueError(f"{test.name}: thread {t}: {op.kind} with address {op.addr!r}")
            if not fence and not op.addr:
                raise ValueError(f"{test.name}: thread {t}: {op.kind} without an address")
            if op.kind in ("ld", "xchg") and op.reg is None:
                raise ValueError(f"{test.name}: thread {t}: {op.kind} without a register")
            if op.src is not None and op.src not in written:
                raise ValueError(f"{test.name}: thread {t}: store reads register {op.src!r} "
                                 "before any op of the thread writes it")
            if op.reg is not None:
                written.add(op.reg)
    names = set(test.registers()) | set(test.locations())
    for key in test.cond:
        if key not in names:
            raise ValueError(f"{test.name}: condition names {key!r}, which is neither a "
                             f"register a thread writes nor a location ({sorted(names)})")
    return test


def _t(name, threads, cond, verdict, source, init=None):
    return check(LitmusTest(name, tuple(tuple(ops) for ops in threads), dict(cond), verdict,
                            source, dict(init or {})))


A, F = ALLOWED, FORBIDDEN
# A run of the program with a fence, or with a locked store in place of a plain one, is a
# run of the program without: such a variant of a forbidden test stays forbidden.
_FENCED = "Model: forbidden without fences ({}); a fence only removes outcomes"
_LOCKED = "Model: forbidden with plain stores; a locked store is drained too (SDM §8.2.3.9)"

TESTS = (
    # SB: each thread's store waits in its buffer while its load reads the other's old value.
    _t("SB", [[st("x", 1), ld("eax", "y")], [st("y", 1), ld("ebx", "x")]],
       {"0:eax": 0, "1:ebx": 0}, A, "CACM §1 and §3.2 (SDM example 8-3)"),
    _t("SB+mfences", [[st("x", 1), MFENCE, ld("eax", "y")], [st("y", 1), MFENCE, ld("ebx", "x")]],
       {"0:eax": 0, "1:ebx": 0}, F,
       "Model: mfence waits for its buffer to drain (CACM §3), so each load follows its "
       "thread's store in memory"),
    _t("SB+mfence+po", [[st("x", 1), MFENCE, ld("eax", "y")], [st("y", 1), ld("ebx", "x")]],
       {"0:eax": 0, "1:ebx": 0}, A,
       "Model: thread 1's store still waits in its buffer while it reads x=0 and thread 0 "
       "runs to the end"),
    _t("SB+sfences", [[st("x", 1), SFENCE, ld("eax", "y")], [st("y", 1), SFENCE, ld("ebx", "x")]],
       {"0:eax": 0, "1:ebx": 0}, A, "Model: sfence orders stores only (no effect on WB memory)"),
    _t("SB+xchgs", [[xchg("r", "x", 1), ld("eax", "y")], [xchg("r", "y", 1), ld("ebx", "x")]],
       {"0:eax": 0, "1:ebx": 0}, F, "SDM §8.2.3.9 (loads are not reordered with locks)"),
    _t("SB+lock-adds", [[st("x", 1), lock_xadd("s0", 0), ld("eax", "y")],
                        [st("y", 1), lock_xadd("s1", 0), ld("ebx", "x")]],
       {"0:eax": 0, "1:ebx": 0}, F,
       "SDM §8.2.3.9; Linux smp_mb() is a locked add to a private location"),
    _t("amd3", [[st("x", 1), st("x", 2), ld("eax", "y")], [st("y", 1), st("y", 2), ld("ebx", "x")]],
       {"0:eax": 0, "1:ebx": 0}, A,
       "CACM §3.2 (amd3: SB with a second store of 2 in each thread)"),
    # Forwarding from the thread's own buffer.
    _t("SDM-8-4", [[st("x", 1), ld("eax", "x")]],
       {"0:eax": 0}, F, "CACM §3.2 (SDM example 8-4: eax=1 is required, reads check the buffer)"),
    _t("CoWWR", [[st("x", 1), st("x", 2), ld("eax", "x")]],
       {"0:eax": 1}, F, "Model: a load forwards the newest buffered store to its location, and "
       "the older one cannot reach memory after the newer"),
    _t("SDM-8-5", [[st("x", 1), ld("eax", "x"), ld("ebx", "y")],
                   [st("y", 1), ld("ecx", "y"), ld("edx", "x")]],
       {"0:eax": 1, "0:ebx": 0, "1:ecx": 1, "1:edx": 0}, A,
       "CACM §3.2 (SDM example 8-5, intra-processor forwarding, like 8-3)"),
    _t("n6", [[st("x", 1), ld("eax", "x"), ld("ebx", "y")], [st("y", 2), st("x", 2)]],
       {"0:eax": 1, "0:ebx": 0, "x": 1}, A,
       "CACM §2.2 (n6: observed on Intel Core 2, x86-TSO allows it)"),
    _t("n5", [[st("x", 1), ld("eax", "x")], [st("x", 2), ld("ebx", "x")]],
       {"0:eax": 2, "1:ebx": 1}, F,
       "Model: each load reads its own store or a later one in x's single store order; "
       "eax=2 puts 1 before 2, ebx=1 puts 2 before 1"),
    # MP: stores leave each buffer in order, loads are not reordered.
    _t("n6+mfence", [[st("x", 1), MFENCE, ld("eax", "x"), ld("ebx", "y")],
                     [st("y", 2), st("x", 2)]],
       {"0:eax": 1, "0:ebx": 0, "x": 1}, F,
       "Model: x=1 puts x:=2, so y:=2 (FIFO), in memory before x:=1, which mfence drains "
       "before the loads"),
    _t("n6+xchg", [[xchg("r", "x", 1), ld("eax", "x"), ld("ebx", "y")], [st("y", 2), st("x", 2)]],
       {"0:eax": 1, "0:ebx": 0, "x": 1}, F, "Model: as n6+mfence, the locked store is in memory"),
    _t("MP", [[st("x", 1), st("y", 1)], [ld("eax", "y"), ld("ebx", "x")]],
       {"1:eax": 1, "1:ebx": 0}, F, "CACM §3.2 (SDM example 8-1: the store buffer is FIFO)"),
    _t("MP+sfence", [[st("x", 1), SFENCE, st("y", 1)], [ld("eax", "y"), ld("ebx", "x")]],
       {"1:eax": 1, "1:ebx": 0}, F, _FENCED.format("CACM §3.2")),
    _t("MP+mfences", [[st("x", 1), MFENCE, st("y", 1)], [ld("eax", "y"), MFENCE, ld("ebx", "x")]],
       {"1:eax": 1, "1:ebx": 0}, F, _FENCED.format("CACM §3.2")),
    _t("MP+xchg", [[st("x", 1), xchg("r", "y", 1)], [ld("eax", "y"), ld("ebx", "x")]],
       {"1:eax": 1, "1:ebx": 0}, F, "SDM §8.2.3.9 (stores are not reordered with locks)"),
    # LB: a load is never delayed past a later store.
    _t("LB", [[ld("eax", "x"), st("y", 1)], [ld("ebx", "y"), st("x", 1)]],
       {"0:eax": 1, "1:ebx": 1}, F, "CACM §3.2 (SDM example 8-2: reads are never delayed)"),
    _t("LB+mfences", [[ld("eax", "x"), MFENCE, st("y", 1)], [ld("ebx", "y"), MFENCE, st("x", 1)]],
       {"0:eax": 1, "1:ebx": 1}, F, _FENCED.format("CACM §3.2")),
    # Write atomicity: one memory, so every thread sees stores in one order.
    _t("LB+xchgs", [[ld("eax", "x"), xchg("r", "y", 1)], [ld("ebx", "y"), xchg("r", "x", 1)]],
       {"0:eax": 1, "1:ebx": 1}, F, _LOCKED),
    _t("WRC", [[st("x", 1)], [ld("eax", "x"), st("y", 1)], [ld("ebx", "y"), ld("ecx", "x")]],
       {"1:eax": 1, "2:ebx": 1, "2:ecx": 0}, F,
       "CACM §3.2 (SDM example 8-6: stores are transitively visible)"),
    _t("IRIW", [[st("x", 1)], [st("y", 1)], [ld("eax", "x"), ld("ebx", "y")],
                [ld("ecx", "y"), ld("edx", "x")]],
       {"2:eax": 1, "2:ebx": 0, "3:ecx": 1, "3:edx": 0}, F,
       "CACM §2.2 (IWP/AMD3.14 allowed IRIW; x86-TSO forbids it)"),
    _t("IRIW+mfences", [[st("x", 1)], [st("y", 1)], [ld("eax", "x"), MFENCE, ld("ebx", "y")],
                        [ld("ecx", "y"), MFENCE, ld("edx", "x")]],
       {"2:eax": 1, "2:ebx": 0, "3:ecx": 1, "3:edx": 0}, F, _FENCED.format("CACM §2.2")),
    _t("IRIW+xchgs", [[xchg("r", "x", 1)], [xchg("r", "y", 1)], [ld("eax", "x"), ld("ebx", "y")],
                      [ld("ecx", "y"), ld("edx", "x")]],
       {"2:eax": 1, "2:ebx": 0, "3:ecx": 1, "3:edx": 0}, F,
       "SDM §8.2.3.8 (locked instructions have a total order)"),
    # Store-store order between two threads.
    _t("2+2W", [[st("x", 2), st("y", 1)], [st("y", 2), st("x", 1)]],
       {"x": 2, "y": 2}, F,
       "Model: x=2 puts thread 1's x:=1 first, so its y:=2 (FIFO) before thread 0's y:=1"),
    _t("2+2W+mfences", [[st("x", 2), MFENCE, st("y", 1)], [st("y", 2), MFENCE, st("x", 1)]],
       {"x": 2, "y": 2}, F, _FENCED.format("above")),
    _t("2+2W+xchgs", [[st("x", 2), xchg("r", "y", 1)], [st("y", 2), xchg("r", "x", 1)]],
       {"x": 2, "y": 2}, F, _LOCKED),
    _t("S", [[st("x", 2), st("y", 1)], [ld("eax", "y"), st("x", 1)]],
       {"x": 2, "1:eax": 1}, F,
       "Model: eax=1 means x:=2 (FIFO before y:=1) is in memory before thread 1 reads, and "
       "its x:=1 is buffered after that read, so x ends 1"),
    _t("S+mfences", [[st("x", 2), MFENCE, st("y", 1)], [ld("eax", "y"), MFENCE, st("x", 1)]],
       {"x": 2, "1:eax": 1}, F, _FENCED.format("above")),
    _t("S+xchg", [[st("x", 2), xchg("r", "y", 1)], [ld("eax", "y"), st("x", 1)]],
       {"x": 2, "1:eax": 1}, F, _LOCKED),
    _t("R", [[st("x", 1), st("y", 1)], [st("y", 2), ld("eax", "x")]],
       {"y": 2, "1:eax": 0}, A,
       "Model: thread 1 buffers y:=2, reads x=0, thread 0 runs and drains, then y:=2 drains"),
    _t("R+po+mfence", [[st("x", 1), st("y", 1)], [st("y", 2), MFENCE, ld("eax", "x")]],
       {"y": 2, "1:eax": 0}, F,
       "Model: y=2 puts y:=1, so x:=1 (FIFO), in memory before y:=2, which mfence drains "
       "before the load"),
    _t("R+mfence+po", [[st("x", 1), MFENCE, st("y", 1)], [st("y", 2), ld("eax", "x")]],
       {"y": 2, "1:eax": 0}, A, "Model: the schedule of R; thread 0's mfence changes nothing"),
    # Atomicity of a read-modify-write: locked increments never lose an update.
    _t("R+po+xchg", [[st("x", 1), st("y", 1)], [xchg("r", "y", 2), ld("eax", "x")]],
       {"y": 2, "1:eax": 0}, F, "SDM §8.2.3.9 (as R+po+mfence: the locked store is in memory "
       "before the load)"),
    _t("INC", [[ld("r", "x"), st("x", 1, src="r")], [ld("r", "x"), st("x", 1, src="r")]],
       {"x": 1}, A, "Model: both loads read 0 before either store reaches memory"),
    _t("INC+locks", [[lock_xadd("x", 1)], [lock_xadd("x", 1)]],
       {"x": 1}, F, "SDM §8.2.3.8 (a locked instruction is one atomic step in a total order)"),
)

BY_NAME = {t.name: t for t in TESTS}
