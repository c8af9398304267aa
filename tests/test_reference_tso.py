"""The x86-TSO reference (tests/reference_tso.py) against the litmus table (tests/litmus.py).

Expected values come from the literature (each verdict's `source`), from hand enumeration
(the outcome sets below) and from a second formulation of x86-TSO, as axioms over
candidate executions (at the end), whose final states must equal the machine's on every
test; never from the enumerator itself. The mutants show that the checks can fail: each
breaks one rule of the machine and must get named verdicts wrong.
"""
import itertools

import pytest
from litmus import (ALLOWED, BY_NAME, FORBIDDEN, MFENCE, TESTS, LitmusTest, check, ld,
                    lock_xadd, st)
from reference_tso import (SCMachine, TSOMachine, relaxed_outcomes, sc_outcomes, tso_outcomes,
                           verdict)

IDS = [t.name for t in TESTS]


@pytest.mark.parametrize("test", TESTS, ids=IDS)
def test_tso_verdict_is_the_papers(test):
    assert verdict(test, tso_outcomes(test)) == test.verdict, test.source


@pytest.mark.parametrize("test", TESTS, ids=IDS)
def test_sc_outcomes_are_tso_outcomes(test):
    assert sc_outcomes(test) <= tso_outcomes(test)


def test_allowed_outcomes_are_relaxed_except_the_lost_update():
    """Every allowed condition in the table but INC's is a cycle SC forbids (that is why
    it is a litmus test), so under SC all of them are forbidden, and TSO's outcome set is
    strictly larger exactly there."""
    for test in TESTS:
        if test.name == "INC":
            assert verdict(test, sc_outcomes(test)) == ALLOWED
            continue
        assert verdict(test, sc_outcomes(test)) == FORBIDDEN, test.name
        if test.verdict == ALLOWED:
            assert relaxed_outcomes(test), test.name


def _pairs(outcomes, *names):
    return {tuple(dict(o)[n] for n in names) for o in outcomes}


def test_sb_outcomes_by_hand():
    """SB: under SC some store comes first, so one load sees 1; under TSO both stores may
    wait in their buffers while both loads read 0. Memory always ends x=y=1."""
    sb = BY_NAME["SB"]
    assert _pairs(tso_outcomes(sb), "0:eax", "1:ebx") == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert _pairs(sc_outcomes(sb), "0:eax", "1:ebx") == {(0, 1), (1, 0), (1, 1)}
    assert _pairs(tso_outcomes(sb), "x", "y") == {(1, 1)}
    assert tso_outcomes(BY_NAME["SB+mfences"]) == sc_outcomes(BY_NAME["SB+mfences"])


def test_mp_outcomes_by_hand():
    """MP: the reader sees neither store, only x, or both; TSO adds nothing to SC here."""
    mp = BY_NAME["MP"]
    assert _pairs(tso_outcomes(mp), "1:eax", "1:ebx") == {(0, 0), (0, 1), (1, 1)}
    assert tso_outcomes(mp) == sc_outcomes(mp)


@pytest.mark.parametrize("name, state", [
    # thread 0 buffers x:=1 and forwards eax=1; thread 1 buffers y:=2, x:=2; thread 0
    # reads y=0 from memory; thread 1 drains (x=2), then thread 0 drains (x=1)
    ("n6", {"0:eax": 1, "0:ebx": 0, "x": 1, "y": 2}),
    # thread 1 buffers y:=2 and reads x=0; thread 0 runs and drains; y:=2 drains last
    ("R", {"1:eax": 0, "x": 1, "y": 2}),
    # each thread buffers both its stores and reads the other's location, still 0
    ("amd3", {"0:eax": 0, "1:ebx": 0, "x": 2, "y": 2}),
])
def test_relaxed_states_by_hand(name, state):
    want = tuple(sorted(state.items()))
    assert want in tso_outcomes(BY_NAME[name])
    assert want not in sc_outcomes(BY_NAME[name])


def test_locked_increments_never_lose_an_update():
    assert _pairs(tso_outcomes(BY_NAME["INC+locks"]), "x") == {(2,)}
    assert _pairs(tso_outcomes(BY_NAME["INC"]), "x") == {(1,), (2,)}
    add = check(LitmusTest("xadd", ((lock_xadd("x", 5, reg="old"),), (lock_xadd("x", 3),)),
                           {"0:old": 3}, ALLOWED, "hand"))
    assert _pairs(tso_outcomes(add), "0:old", "x") == {(0, 8), (3, 8)}


def test_init_values_are_used():
    t = check(LitmusTest("init", ((ld("eax", "x"),),), {"0:eax": 7}, ALLOWED, "hand", {"x": 7}))
    assert tso_outcomes(t) == {(("0:eax", 7), ("x", 7))}


# Mutants: one rule of the machine broken each.
class NoForwarding(TSOMachine):
    def _read(self, mem, buf, loc):
        return mem[loc]


class OldestForwarding(TSOMachine):
    def _read(self, mem, buf, loc):
        for where, value in buf:
            if where == loc:
                return value
        return mem[loc]


class AnyOrderFlush(TSOMachine):
    def _flushable(self, buf):
        return range(len(buf))


class FenceDoesNotDrain(TSOMachine):
    def _fence_waits(self, buf):
        return False


class LockDoesNotDrain(TSOMachine):
    def _lock_waits(self, buf):
        return False


@pytest.mark.parametrize("mutant, wrong", [pytest.param(m, w, id=m.__name__) for m, w in (
    (NoForwarding, {"SDM-8-4", "SDM-8-5", "n5", "n6"}),
    (OldestForwarding, {"CoWWR"}),
    (AnyOrderFlush, {"MP", "MP+sfence", "2+2W", "S", "R+po+mfence"}),
    (FenceDoesNotDrain, {"SB+mfences", "R+po+mfence", "n6+mfence"}),
    (LockDoesNotDrain, {"SB+lock-adds", "MP+xchg", "2+2W+xchgs"}),
    (SCMachine, {"SB", "amd3", "SDM-8-5", "n6", "R", "SB+mfence+po", "R+mfence+po"}),
)])
def test_a_broken_machine_gets_verdicts_wrong(mutant, wrong):
    got = {t.name for t in TESTS if verdict(t, mutant(t).outcomes()) != t.verdict}
    assert wrong <= got


def test_every_family_has_fenced_and_locked_variants():
    for family in ("SB", "MP", "LB", "IRIW", "2+2W", "S", "R", "n6"):
        variants = [n for n in BY_NAME if n == family or n.startswith(family + "+")]
        assert any("fence" in n for n in variants), family
        assert any("xchg" in n or "lock" in n for n in variants), family


def test_names_are_unique_and_sources_given():
    assert len(BY_NAME) == len(TESTS)
    assert all(t.source for t in TESTS)


@pytest.mark.parametrize("threads, cond, message", [
    (((ld("eax", "x"),),), {"0:ebx": 0}, "'0:ebx'"),
    (((st("x", 1, src="r"),),), {"x": 1}, "register 'r' before"),
    (((MFENCE._replace(addr="x"),),), {}, "mfence with address 'x'"),
    (((ld("eax", None),),), {}, "ld without an address"),
    (((st("x", 1)._replace(kind="clflush"),),), {}, "unknown op kind 'clflush'"),
])
def test_a_bad_test_is_refused_by_name(threads, cond, message):
    with pytest.raises(ValueError, match="bad: .*" + message.replace("(", r"\(")):
        TSOMachine(LitmusTest("bad", threads, cond, ALLOWED, "hand"))


# A second, independent formulation: x86-TSO as axioms over candidate executions, as
# herdtools7's herd/libdir/x86tso.cat states them (uniproc, atomicity, acyclic ghb =
# mfence | implied | WW(po) | RM(po) | rfe | fr | co); Owens, Sarkar and Sewell (TPHOLs
# 2009) prove their axiomatic x86-TSO and the abstract machine equivalent. A candidate
# picks, for each read, the write it reads from (rf), and for each location a total order
# of its writes (co, the initial write first); fr relates a read to the writes co-after
# the one it read. It is an x86-TSO execution if
#   po-loc | rf | co | fr is acyclic (each location on its own is sequentially consistent),
#   no write comes between a locked op's read and write in co (atomicity), and
#   ppo | rfe | co | fr | fences is acyclic, where ppo is program order except store->load
#   (the buffer), rfe is rf between threads (a thread's own rf is forwarding), and
#   mfence and locked ops order everything before them with everything after (x86tso.cat
#   orders only store->load pairs with a locked end, the rest being in ppo already; the
#   closures are the same).
def _events(test):
    """Per thread, (thread, kind R/W/F, location, locked, op, register) in program order."""
    events = []
    for t, ops in enumerate(test.threads):
        for op in ops:
            if op.kind == "st":
                events.append((t, "W", op.addr, False, op, None))
            elif op.kind == "ld":
                events.append((t, "R", op.addr, False, op, op.reg))
            elif op.kind == "mfence":
                events.append((t, "F", None, False, op, None))
            elif op.kind in ("xchg", "lock_xadd"):
                events.append((t, "R", op.addr, True, op, op.reg))
                events.append((t, "W", op.addr, True, op, None))
    return events


def _acyclic(n, edges):
    succ = {i: set() for i in range(n)}
    for a, b in edges:
        succ[a].add(b)
    state = [0] * n   # 0 unseen, 1 on the path, 2 done

    def visit(i):
        state[i] = 1
        for j in succ[i]:
            if state[j] == 1 or (state[j] == 0 and not visit(j)):
                return False
        state[i] = 2
        return True
    return all(state[i] or visit(i) for i in range(n))


def axiomatic_outcomes(test, sc=False):
    """Final states of the executions the axioms allow; with `sc`, ppo is all of program
    order and rf counts in full (SC's axiom: po | rf | co | fr acyclic)."""
    ev = _events(test)
    locs = test.locations()
    init = {loc: len(ev) + i for i, loc in enumerate(locs)}   # one initial write per location
    n = len(ev) + len(locs)
    thread = [e[0] for e in ev] + [-1] * len(locs)
    loc_of = [e[2] for e in ev] + locs
    is_w = [e[1] == "W" for e in ev] + [True] * len(locs)
    reads = [i for i, e in enumerate(ev) if e[1] == "R"]
    writes = {loc: [i for i, e in enumerate(ev) if e[1] == "W" and e[2] == loc] for loc in locs}
    po = [(a, b) for a in range(len(ev)) for b in range(a + 1, len(ev)) if ev[a][0] == ev[b][0]]
    po_loc = [(a, b) for a, b in po if ev[a][2] is not None and ev[a][2] == ev[b][2]]
    mem = [(a, b) for a, b in po if ev[a][1] != "F" and ev[b][1] != "F"]
    ppo = mem if sc else [(a, b) for a, b in mem if not (ev[a][1] == "W" and ev[b][1] == "R")]
    fenced = [(a, b) for a, b in mem if any(
        a < c < b and (ev[c][1] == "F" or ev[c][3]) for c in range(len(ev)))
        or ev[a][3] or ev[b][3]]
    rmw = [(i, i + 1) for i, e in enumerate(ev) if e[1] == "R" and e[3]]
    outcomes = set()
    for rf_src in itertools.product(*[[init[ev[r][2]]] + writes[ev[r][2]] for r in reads]):
        rf = dict(zip(reads, rf_src))
        for orders in itertools.product(*[itertools.permutations(writes[loc]) for loc in locs]):
            co_seq = {loc: [init[loc], *order] for loc, order in zip(locs, orders)}
            rank = {w: k for seq in co_seq.values() for k, w in enumerate(seq)}
            co = [(a, b) for seq in co_seq.values() for k, a in enumerate(seq) for b in seq[k + 1:]]
            fr = [(r, w) for r, src in rf.items() for w in co_seq[ev[r][2]] if rank[w] > rank[src]]
            rf_edges = [(w, r) for r, w in rf.items()]
            rfe = [(w, r) for w, r in rf_edges if sc or thread[w] != thread[r]]
            if not _acyclic(n, po_loc + rf_edges + co + fr):
                continue
            if any(rank[w] != rank[rf[r]] + 1 for r, w in rmw):
                continue
            if not _acyclic(n, ppo + fenced + rfe + co + fr):
                continue
            outcomes.add(_final_state(test, ev, init, rf, co_seq, is_w, loc_of))
    return frozenset(outcomes)


def _final_state(test, ev, init, rf, co_seq, is_w, loc_of):
    """Values flow along po and rf; the axioms above make that acyclic, so repeating
    passes until nothing changes resolves every value."""
    value = {init[loc]: test.init.get(loc, 0) for loc in init}
    regs = {}
    for _ in range(len(ev) + 1):
        if len(value) == len(ev) + len(init):
            break
        for i, (t, kind, loc, locked, op, reg) in enumerate(ev):
            if i in value or kind == "F":
                value.setdefault(i, None)
                continue
            if kind == "R" and rf[i] in value:
                value[i] = value[rf[i]]
            elif kind == "W" and op.kind == "lock_xadd" and i - 1 in value:
                value[i] = value[i - 1] + op.value
            elif kind == "W" and op.kind != "lock_xadd":
                before = [j for j in range(i) if ev[j][0] == t and ev[j][5] == op.src]
                if op.src is None:
                    value[i] = op.value
                elif before[-1] in value:
                    value[i] = op.value + value[before[-1]]
    else:
        raise RuntimeError(f"{test.name}: values depend on each other in a cycle")
    for i, (t, kind, loc, locked, op, reg) in enumerate(ev):
        if kind == "R" and reg is not None:
            regs[f"{t}:{reg}"] = value[i]   # program order: the last read of a register wins
    final = {**regs, **{loc: value[seq[-1]] for loc, seq in co_seq.items()}}
    return tuple(sorted(final.items()))


@pytest.mark.parametrize("test", TESTS, ids=IDS)
def test_the_machine_and_the_axioms_agree(test):
    assert tso_outcomes(test) == axiomatic_outcomes(test)
    assert sc_outcomes(test) == axiomatic_outcomes(test, sc=True)
