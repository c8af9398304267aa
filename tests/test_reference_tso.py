"""The x86-TSO reference (tests/reference_tso.py) against the litmus table (tests/litmus.py).

Expected values come from the literature (each verdict's `source`) and from hand
enumeration (the outcome sets below), never from the enumerator itself. The mutants show
that the checks can fail: each breaks one rule of the machine and must get named verdicts
wrong.
"""
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
    (((st("x", 1)._replace(kind="clflush"),),), {}, "unknown op kind 'clflush'"),
])
def test_a_bad_test_is_refused_by_name(threads, cond, message):
    with pytest.raises(ValueError, match="bad: .*" + message.replace("(", r"\(")):
        TSOMachine(LitmusTest("bad", threads, cond, ALLOWED, "hand"))
