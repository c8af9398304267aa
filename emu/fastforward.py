"""Exact fast-forward of repeated work: Machine.run(program, repeat=N).

The body runs N times back to back (as one program of N copies of it: nothing drains in
between). After each repetition a signature of the small sections (clocks relative, older
values alike) is compared with those of the last MAX_PERIOD repetitions; one equal to the
signature p repetitions before proposes a period p, and the state then is matched, word
by word, against the state p repetitions later. Every word of the state is one of (by the
role it declares, memmodel.layout; CLASSIFIED):
- a point on a clock (emu.timeshift): it must have moved by the clock's advance over the p
  repetitions, or not at all ("stale": a value no repetition rewrote, which must lie
  strictly before every moving value of its clock and before the clock itself at the
  start, so that every comparison it takes part in comes out as it did);
- a slot of a ring (the ROB, the store buffer, each WPQ, the pending-snapshot ring with its
  snapshot bytes): the ring, turned by its head's advance, must be the old one moved along
  its clock (every slot rewritten);
- a counter (events, running totals and the sites' marks of them): it may change, by D;
- anything else (tags, flags, policy bits, queues, regions, memory): it must be equal,
  and so must every byte of functional memory.
Then the next p repetitions would do exactly what the last p did, moved along the clocks
(the model is time-translation invariant: tests/test_timeshift.py): k x p of the remaining
ones are applied at once (moving values += k x advance, counters += k x D, rings turned k
times), and the rest run. Where the state never repeats, everything runs
(RunResult.fast_forwarded = 0). The stale-value rule is an argument about how the model
uses times (a stored time is only ever compared with later ones), not a proof:
tests/test_fastforward.py holds repeat=N bit-identical to the N runs (cycles, every
counter, the state, memory and the crash image) on random bodies and profiles.
"""
import numpy as np

from emu import timeshift
from emu.state import SC
from memmodel import media as md
from memmodel import memory as mm
from memmodel.cache import N_LV
from memmodel.layout import LV, LV_AT, MEMO, MEMO_AT, MS
from memmodel.policies import packed, permutable
from memmodel.prefetch import stream

MAX_PERIOD = 64   # repetitions: WC buffers and fill buffers in rotation, uop phases
UNIT_WORDS = 16   # an op or cache line simulated costs about as much as tens of words copied
KEPT = 10         # snapshots a large body keeps: the fill buffers turn (10 on skylake-ddr4)
# the roles (memmodel.layout) of the words that may change by D each period; clocks and
# rings move, heads turn, and every other role must match word for word
COUNTING = ("counter", "total", "mark")
# what each role is to fast-forward: a role missing here fails tests/test_fastforward.py
CLASSIFIED = {"clock": "moves", "ring": "turns", "head": "turns", "counter": "counts",
              "total": "counts", "mark": "counts", "derived": "exact", "exact": "exact"}


class _Layout:
    """The classification of every word of m.S (for the current layout)."""

    def __init__(self, m):
        S, lay = m.S, m.layout
        n = len(S)
        rings = self.rings = []   # (head index, size, [(flat slots (size, width), clock)])
        ring_words = np.zeros(n, dtype=bool)

        parts = {}   # a ring's head: its [(slots (size, width), clock)], in declaration order
        for idx, role in lay.words(S):
            if role.kind == "ring":
                parts.setdefault(int(role.head), []).append((np.asarray(idx), role.clock))
                ring_words[np.asarray(idx).reshape(-1)] = True
        for head, ps in parts.items():
            rings.append((head, len(ps[0][0]), ps))
        self.pend = list(parts).index(MS.PEND_HEAD)   # the ring of the snapshots' frames
        counter = np.zeros(n, dtype=bool)
        counter[lay.where(S, *COUNTING)] = True
        self.counter = np.flatnonzero(counter)
        self.clocks = {}
        clock_word = np.zeros(n, dtype=bool)
        for (clock, neg), idx in timeshift.fields(m).items():
            idx = idx[~ring_words[idx]]
            self.clocks[(clock, neg)] = idx
            clock_word[idx] = True
        head_words = lay.where(S, "head")
        exact = ~(counter | clock_word | ring_words)
        exact[head_words] = False
        self.exact = exact
        # the signature: the small sections, clocks taken relative to their own value, a
        # cheap first test of a repetition (match() then checks every word)
        small = lay.signature_words()
        heads = np.zeros(n, dtype=bool)
        heads[[h for h, _, _ in rings]] = True
        self.sig = small[~counter[small] & ~heads[small]]
        in_sig = np.zeros(n, dtype=bool)
        in_sig[self.sig] = True
        clock_of = {}   # of the signature's words (a clock's word array of S: 21 MB fresh)
        for (clock, _), idx in self.clocks.items():
            clock_of.update(dict.fromkeys(idx[in_sig[idx]].tolist(), clock))
        self.sig_clock = [clock_of.get(w) for w in self.sig.tolist()]
        # the cache blocks, which a level of LRU or FIFO may hold in other ways from one
        # period to the next: (first block, sets, ways) of each such level
        self.blocks = {name: lay.offsets[name] for name in ("tags", "repl", "ready", "flags")}
        self.n_blocks = int(np.prod(lay.shapes["tags"]))
        rows = [S[LV_AT + lv * N_LV:LV_AT + (lv + 1) * N_LV] for lv in range(len(m.level_names))]
        self.permutable = [(int(r[LV.BASE]), int(r[LV.SETS]), int(r[LV.WAYS])) for r in rows
                           if permutable(r[LV.POLICY])]
        # ... of the levels whose sets keep an order word of way numbers (LRU): it does not
        # move with the ways, its numbers are renamed (_renamed)
        self.packed = [(int(r[LV.BASE]), int(r[LV.SETS]), int(r[LV.WAYS])) for r in rows
                       if packed(r[LV.POLICY])]
        st = lay.offsets["stream"]
        self.stream_rows = (st + stream.N_ROW, lay.shapes["stream"][0] - 1)   # row 0: clock
        in_block = np.zeros(n, dtype=bool)
        for off, size in self._regions():
            in_block[off:off + size] = True
        self.in_block = in_block
        self.scratch = np.empty_like(S)   # match's copy of a state, reused: no fresh memory
        # each clock's own value (its "now"), for the stale test
        self.now = {r.clock: int(np.asarray(idx).reshape(-1)[0]) for idx, r in lay.words(S)
                    if r.kind == "clock" and r.own}
        # the signature's clock values, per clock: (positions, the clock's word, its scale)
        groups = {}
        for j, clock in enumerate(self.sig_clock):
            if clock is not None:
                groups.setdefault(clock, []).append(j)
        self.sig_groups = [(np.array(js), int(self.now.get(c, SC.NOW)), md.FP if c == "fp" else 1)
                           for c, js in groups.items()]

    def _regions(self):
        """(offset, words) of the parts of S whose order may change from one period to the
        next: the cache blocks' four sections and the stream prefetcher's rows."""
        return [(off, self.n_blocks) for off in self.blocks.values()] + [
            (self.stream_rows[0], self.stream_rows[1] * stream.N_ROW)]


def _advances(lay, a, b):
    d = {c: int(b[i] - a[i]) for c, i in lay.now.items()}
    d["fp"] = d["cycles"] * md.FP
    return d


def _order(ka, kb):
    """(rows, sub) for rows of keys ka, kb (one group per row): the rows whose keys differ
    and, for each, sub with kb[r, j] == ka[r, sub[j]] (equal keys keep their order); or None
    if a group's keys differ as a set."""
    moved = np.flatnonzero((ka != kb).any(axis=1))   # only these rows need sorting
    ka, kb = ka[moved], kb[moved]
    oa, ob = np.argsort(ka, axis=1, kind="stable"), np.argsort(kb, axis=1, kind="stable")
    if not np.array_equal(np.take_along_axis(ka, oa, 1), np.take_along_axis(kb, ob, 1)):
        return None
    sub = np.empty_like(oa)
    np.put_along_axis(sub, ob, oa, 1)
    return moved, sub


class _Map:
    """A word map of a region of S of `size` words by the words it moves: word words[i]
    (ascending) takes what word src[i] held, every other word keeps its own. The moved
    words map onto themselves, so a map's powers stay on them (a cache's few)."""

    def __init__(self, words, src, size):
        self.words, self.src, self.size = words, src, size

    @classmethod
    def of_rows(cls, levels, size):
        """The map moving, in each level (base, sets, ways, rows, sub), row r's ways by sub."""
        none = [np.zeros(0, dtype=np.int64)]
        first = [(base + rows * ways)[:, None] for base, _, ways, rows, _ in levels]
        words = np.concatenate([(f + np.arange(lv[2])).reshape(-1) for f, lv in zip(first, levels)]
                               + none)
        src = np.concatenate([(f + lv[4]).reshape(-1) for f, lv in zip(first, levels)] + none)
        keep = words != src
        order = np.argsort(words[keep], kind="stable")
        return cls(words[keep][order], src[keep][order], size)

    def find(self, w):
        """(i, hit): for words w, whether the map moves each (words[i] == w where hit)."""
        i = np.searchsorted(self.words, w)
        hit = i < len(self.words)
        hit[hit] = self.words[i[hit]] == w[hit]
        return i, hit

    def at(self, w):
        """The words the map takes into words w."""
        out = np.array(w, dtype=np.int64)
        i, hit = self.find(out)
        out[hit] = self.src[i[hit]]
        return out

    def source_of(self, v):
        """The word that takes what word v held."""
        i = np.flatnonzero(self.src == v)
        return int(self.words[i[0]]) if len(i) else int(v)


def _ways(lay, a, b):
    """(a with each cache set's ways and the stream table's rows in b's order, {region
    offset: its _Map: b's word j of the region holds what a's word P[j] held}, the moved
    rows of each level as (base, sets, ways, rows, sub)), or None where a set's lines or
    the table's pages differ. Sets of a level without a stamp per way keep their order."""
    tags = lay.blocks["tags"]
    levels = []
    for base, sets, ways in lay.permutable:
        at = slice(tags + base, tags + base + sets * ways)
        order = _order(a[at].reshape(sets, ways), b[at].reshape(sets, ways))
        if order is None:
            return None
        levels.append((base, sets, ways) + order)
    off, rows = lay.stream_rows
    page = off + np.arange(rows) * stream.N_ROW + stream.ROW.PAGE
    order = _order(a[page][None, :], b[page][None, :])
    if order is None:
        return None
    P = _Map.of_rows(levels, lay.n_blocks)
    maps = {o: P for o in lay.blocks.values()}
    if lay.packed:   # an LRU set's order word stays; its way numbers are renamed below
        maps[lay.blocks["repl"]] = _Map.of_rows(
            [lv for lv in levels if lv[:3] not in lay.packed], lay.n_blocks)
    R = _Map.of_rows([(0, 1, rows) + order], rows)   # the table's rows, then their words
    maps[off] = _Map(*((x[:, None] * stream.N_ROW + np.arange(stream.N_ROW)).reshape(-1)
                       for x in (R.words, R.src)), rows * stream.N_ROW)
    a0, a = a, lay.scratch
    np.copyto(a, a0)
    for o, M in maps.items():
        a[o + M.words] = a0[o + M.src]
    _renamed(lay, a, P, levels)
    memo = MEMO_AT + MEMO.BLOCK
    if 0 <= a[memo] < lay.n_blocks:   # the L1 block found last moves with its line
        a[memo] = P.source_of(a[memo])
    return a, maps, levels


def _renamed(lay, S, P, levels):
    """Rename the way numbers in the order words of S's LRU sets after their ways moved by
    the block map P (block j now holds what block P[j] held: the line of way v is in way j,
    P[j] = v); `levels`' rows are those P may move."""
    repl = lay.blocks["repl"]
    for base, sets, ways, rows, _ in levels:
        if (base, sets, ways) not in lay.packed or not len(rows):
            continue
        first = base + rows * ways
        where = P.at(first[:, None] + np.arange(ways)) - first[:, None]
        to = np.argsort(where, axis=1)   # to[v]: the way that holds way v's line
        nib = 4 * np.arange(ways, dtype=np.uint64)
        words = S[repl + first].view(np.uint64)
        ways_at = ((words[:, None] >> nib) & np.uint64(15)).astype(np.int64)
        renamed = np.take_along_axis(to, ways_at, 1).astype(np.uint64) << nib
        S[repl + first] = np.bitwise_or.reduce(renamed, axis=1).view(np.int64)


def match(lay, a, b, mem_a, mem_b):
    """The plan that applies one more period to state b (states a and b, p repetitions
    apart), or None if b is not a after one period. mem_*: (pt, frames)."""
    ways = _ways(lay, a, b)
    if ways is None:
        return None
    a, maps, levels = ways
    if lay.exact[np.flatnonzero(a != b)].any():   # few words differ: no gather of the rest
        return None
    if mem_a[0].shape != mem_b[0].shape or not np.array_equal(mem_a[0], mem_b[0]):
        return None
    fa, fb = mem_a[1], mem_b[1]
    if fa.shape != fb.shape:
        return None
    snaps = mm.RESERVED_FRAMES
    if not np.array_equal(fa[snaps:], fb[snaps:]):
        return None
    adv = _advances(lay, a, b)
    moving = {}
    for (clock, neg), idx in lay.clocks.items():
        d = adv.get(clock, 0)
        va, vb = a[idx], b[idx]
        if neg:
            none = (va < 0) | (vb < 0)
            if not np.array_equal(va[none], vb[none]):
                return None
        else:
            none = np.zeros(len(idx), dtype=bool)
        moved = (vb == va + d) & ~none
        stale = (vb == va) & ~none & ~moved
        if not np.all(moved | stale | none):
            return None
        if d and stale.any():
            bound = a[lay.now[clock]] if clock in lay.now else a[SC.NOW] * md.FP
            if moved.any():
                bound = min(bound, va[moved].min())
            if va[stale].max() >= bound:
                return None
        moving[(clock, neg)] = idx[moved] if d else idx[:0]
    turns, ring_moved = [], []
    for head, size, parts in lay.rings:
        t = int(b[head] - a[head]) % size
        for slots, clock in parts:
            d = adv.get(clock, 0) if clock else 0
            va, vb = np.roll(a[slots], t, axis=0), b[slots]
            moved = vb == va + d
            if t == 0 and d and not moved.all():
                # a ring that did not turn: slots no repetition wrote are stale values
                stale = (vb == va) & ~moved
                if not (moved | stale).all() or va[stale].max() >= min(
                        a[lay.now[clock]], va[moved].min() if moved.any() else a[lay.now[clock]]):
                    return None
            elif not moved.all():
                return None
            ring_moved.append(moved)
        turns.append(t)
    pend_turn = turns[lay.pend]
    if not np.array_equal(np.roll(fa[:snaps].reshape(mm.SNAPSHOTS, 64), pend_turn, axis=0),
                          fb[:snaps].reshape(mm.SNAPSHOTS, 64)):
        return None
    return {"adv": adv, "moving": moving, "turns": turns, "ring_moved": ring_moved,
            "counts": b[lay.counter] - a[lay.counter], "maps": maps, "levels": levels}


def _power(Q, cs, k):
    """(Q', [c', ...]) of k applications of x -> x[Q] + c, for each c of cs (one word map
    shared by several sections: its powers once), by squaring."""
    qp, qcs = np.arange(len(Q)), [np.zeros(len(Q), dtype=np.int64) for _ in cs]
    while k:
        if k & 1:
            qp, qcs = qp[Q], [qc[Q] + c for qc, c in zip(qcs, cs)]
        Q, cs = Q[Q], [c[Q] + c for c in cs]
        k >>= 1
    return qp, qcs


def apply(m, lay, plan, k):
    """Move machine m by k periods of `plan`."""
    S = m.S
    maps = plan["maps"]
    adds = {o: [] for o in maps}   # per region: (words, advance) of its moving clock values
    for (clock, _), idx in plan["moving"].items():
        d = plan["adv"].get(clock, 0)
        inside = lay.in_block[idx]   # these move with their ways or rows: below
        for o, M in maps.items():
            adds[o].append((idx[inside & (idx >= o) & (idx < o + M.size)] - o, d))
        S[idx[~inside]] += k * d
    # Only the words a map moves are permuted; of the others, the moving clock values just
    # add k x advance.
    powers, shared = {}, {}
    for o, M in maps.items():
        shared.setdefault(id(M), (M, []))[1].append(o)
    for M, offs in shared.values():
        moved, cs = M.words, []
        for o in offs:
            c = np.zeros(len(moved), dtype=np.int64)
            for w, d in adds[o]:
                at, hit = M.find(w)
                c[at[hit]] = d
                S[o + w[~hit]] += k * d
            cs.append(c)
        qp, qcs = _power(np.searchsorted(moved, M.src), cs, k)
        powers[id(M)] = _Map(moved, moved[qp], M.size)
        for o, qc in zip(offs, qcs):
            S[o + moved] = S[o + moved[qp]] + qc
    P = powers[id(maps[lay.blocks["tags"]])]
    _renamed(lay, S, P, plan["levels"])
    memo = MEMO_AT + MEMO.BLOCK
    if 0 <= S[memo] < lay.n_blocks:   # the L1 block found last moves with its line
        S[memo] = P.source_of(S[memo])
    S[lay.counter] += k * plan["counts"]
    moved = iter(plan["ring_moved"])
    for (head, size, parts), t in zip(lay.rings, plan["turns"]):
        turn = (k * t) % size
        for slots, clock in parts:
            d = plan["adv"].get(clock, 0) if clock else 0
            S[slots] = np.roll(S[slots], turn, axis=0) + k * d * next(moved)
        S[head] = (S[head] + turn) % size
    snaps = mm.RESERVED_FRAMES
    turn = (k * plan["turns"][lay.pend]) % mm.SNAPSHOTS
    m.frames[:snaps] = np.roll(m.frames[:snaps].reshape(mm.SNAPSHOTS, 64), turn,
                               axis=0).reshape(snaps, mm.PAGE_BYTES)


def _signature(lay, S, before):
    """The small sections (ring heads left out), each clock value relative to its clock,
    the values older than the last repetition (`before`: the clocks then) all alike: equal
    for states p repetitions apart in a repeating run, and cheap. Only a filter: match()
    decides."""
    v = S[lay.sig].copy()
    for js, i, scale in lay.sig_groups:
        vals = v[js]
        v[js] = np.where(vals >= before[i] * scale, vals - S[i] * scale, np.iinfo(np.int64).min)
    return v.tobytes()


class _Snapshots:
    """Copies of the machine's state, in buffers used again once nothing holds them: a copy
    of the 20 MB state into fresh memory costs several times one into memory used before
    (the first touch of each page)."""

    def __init__(self, m):
        self.m, self.buffers = m, []

    def take(self, *held):
        """A copy of the state now, in a buffer none of `held` (snapshots, lists of them,
        or None) is."""
        m = self.m
        busy = {id(s) for h in held for s in (h if isinstance(h, list) else [h])}
        shape = (m.S.shape, m.pt.shape, m.frames.shape)
        self.buffers = [s for s in self.buffers if id(s) in busy or (
            s[0].shape, s[1][0].shape, s[1][1].shape) == shape]   # memory grew: stale ones
        for s in self.buffers:
            if id(s) not in busy:
                for dst, src in zip((s[0],) + s[1], (m.S, m.pt, m.frames)):
                    np.copyto(dst, src)
                return s
        s = m.S.copy(), (m.pt.copy(), m.frames.copy())
        self.buffers.append(s)
        return s


def run_repeated(m, runs, n, drain_each, units):
    """Call the `runs` (run(drain) of one program each on machine m, their sites already
    in its tables) in turn, n times over: back to back as one program (drain_each false:
    nothing drained between them), or each drained as run() drains it; returns the
    repetitions fast-forwarded. A repetition whose signature equals one p before proposes
    a period p; the state then and p repetitions later are matched word by word. A body
    that costs more than its snapshot (`units`: its ops and cache lines touched, each worth
    UNIT_WORDS of the state's and memory's words) keeps the states after its last KEPT
    repetitions, so that a period of up to KEPT is matched when it is proposed, not a
    period later, and the first repetition is matched against the state before it (no
    signature then). A machine of several cores runs every repetition (0 fast-forwarded):
    the signature and the clocks it shifts by are core 0's."""
    if m.cores > 1:
        for _ in range(n):
            for run in runs:
                run(drain_each)
        return 0
    lay, sigs, kept, candidate, snaps = _Layout(m), [], [], None, _Snapshots(m)
    keep = units * UNIT_WORDS >= len(m.S) + m.pt.size + m.frames.size // 8
    initial = snaps.take() if keep else None
    done = skipped = 0
    while done < n:
        before = {i: int(m.S[i]) for i in lay.now.values()}
        for run in runs:
            run(drain_each)
        done += 1
        sig = _signature(lay, m.S, before)
        now = snaps.take(kept, candidate and candidate[2], initial) if keep else None
        if candidate is None and keep:
            if done == 1:
                candidate, initial = (0, 1, initial), None
            for p in range(1, len(kept) + 1):
                if candidate is None and sigs[-p] == sig:
                    candidate = (done - p, p, kept[-p])
        if candidate is not None and done == candidate[0] + candidate[1]:
            _, p, old = candidate
            candidate = None
            now = now if now is not None else snaps.take(kept, old)
            plan = match(lay, old[0], now[0], old[1], now[1])
            k = (n - done) // p if plan is not None else 0
            if k:
                apply(m, lay, plan, k)
                done += k * p
                skipped += k * p
                sigs, kept = [], []
                continue
        if candidate is None:
            for p in range(1, len(sigs) + 1):
                if sigs[-p] == sig and n - done >= 2 * p:
                    candidate = (done, p, now if now is not None else snaps.take(kept))
                    break
        sigs = (sigs + [sig])[-MAX_PERIOD:]
        kept = (kept + [now])[-KEPT:] if keep else kept
    return skipped
