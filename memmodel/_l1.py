"""The L1 data cache's hit: its lookup, its hit step and the memo of the blocks found last,
for the demand access (memmodel._hierarchy.demand) and for emu's register-resident path
(emu._fast.plain_run), which keeps the level's use stamp and two memo entries in registers.

A memo entry (line, first block of its set, block) is a derived cache, not model state: it
is valid while the block still holds the line, which `holds` checks at each use, so nothing
else (fills, evictions, invalidations) has to update it. The demand access keeps one entry
in S (memmodel.layout.MEMO); plain_run starts from that one and writes its own first back.
"""
from memmodel import cache as cm
from memmodel.jit import inlined, ix
from memmodel.layout import LV, LV_AT, MEMO, MEMO_AT, MH

# the L1's use stamp: level 0's row of the level table (a private level uses its own row)
STAMP_AT = LV_AT + LV.STAMP


@inlined
def remember(S, line, i0, b):
    """The memo entry in S: `line` is in block b of the set whose first block is i0."""
    S[MEMO_AT + MEMO.LINE] = line
    S[MEMO_AT + MEMO.SET] = i0
    S[MEMO_AT + MEMO.BLOCK] = b


@inlined
def recall(S):
    """The memo entry in S, as (line, set's first block, block)."""
    return S[MEMO_AT + MEMO.LINE], S[MEMO_AT + MEMO.SET], S[MEMO_AT + MEMO.BLOCK]


@inlined
def valid(S, tags, ml, mb):
    """Whether the memo entry (line ml, block mb) is still valid: the block holds the line
    (`tags`: the tags section's offset, S[MH.TAGS])."""
    return S[ix(tags + mb)] == ml


@inlined
def holds(S, tags, line, ml, mb):
    """Whether the memo entry (line ml, block mb) is `line`'s and still valid."""
    return line == ml and valid(S, tags, line, mb)


@inlined
def search(S, line):
    """(first block of `line`'s L1 set, block holding it or -1): the set index and the way
    scan, which a valid memo entry skips."""
    i0 = cm.set_start(S, 0, line)
    return i0, cm.find(S, 0, i0, line)


@inlined
def lookup(S, line):
    """(first block of `line`'s L1 set, block holding it or -1), through the memo entry in
    S. Consecutive accesses to one line (sequential 8-byte loads: 8 a line) skip the set
    index and the way scan."""
    ml, ms, mb = recall(S)
    if holds(S, S[MH.TAGS], line, ml, mb):
        return ms, mb
    i0, b = search(S, line)
    if b >= 0:
        remember(S, line, i0, b)
    return i0, b


@inlined
def use(S, policy, repl, ways, i0, b, stamp):
    """The replacement update of a hit on block b of the set at i0, with the level's
    `policy`, `ways` and replacement section `repl` (S[MH.REPL]) and use stamp `stamp` in
    registers. Returns the stamp after."""
    stamp += 1
    cm.policy_hit(S, policy, repl + i0, ways, b - i0, stamp)
    return stamp


@inlined
def hit(S, policy, repl, ways, i0, b, stamp, t0, lat, flg, rdy, store):
    """A hit issued at t0 on block b of the set at i0 (latency `lat`; `flg`, `rdy`: the
    flags and ready sections' offsets): its use, the dirty flag of a store, and (the stamp
    after, the cycle its data is ready). Whatever else the block's flags ask (a first use,
    an upgrade of a shared line) the caller has done."""
    stamp = use(S, policy, repl, ways, i0, b, stamp)
    if store:
        S[ix(flg + b)] |= cm.F_DIRTY
    return stamp, max(t0 + lat, S[ix(rdy + b)])
