"""LRU's order word (memmodel.policies.lru) against a list kept in recency order: after
every use the word's nibbles are that list and the victim is its last way, for every set
width it holds (1-16 ways), hits and fills (a fill of the victim, at the back, is a rotation;
of an invalid way, anywhere), compiled and as plain Python (the no-JIT pass runs this file)."""
import numpy as np
import pytest
from numba import njit

from memmodel.policies import PACKED_WAYS, lru


@njit   # not cached: numba's cache would not see an edit of lru.py (as tests/test_jit.py's)
def _uses(S, r0, ways, seq, fills, victims):
    """Hit (or, where fills[i], fill) the ways of `seq` in turn; victims[i]: the victim
    after use i."""
    for i in range(len(seq)):
        if fills[i]:
            lru.on_fill(S, r0, ways, seq[i], 0)
        else:
            lru.on_hit(S, r0, ways, seq[i], 0)
        victims[i] = lru.victim(S, r0, ways, 0)


def _order(word, ways):
    return [(int(word) >> (4 * p)) & 15 for p in range(ways)]


def _word(order):
    return np.uint64(sum(int(w) << (4 * p) for p, w in enumerate(order))).view(np.int64)


@pytest.mark.parametrize("ways", [1, 2, 3, 8, 11, 15, 16])
def test_order_word_is_the_recency_list(ways):
    rng = np.random.default_rng(ways)
    # runs on one way (a hit on the front changes nothing) and uses of the last way (the
    # nibble at the top of a 16-way word, where a shift would reach bit 64)
    seq = rng.integers(0, ways, 400)
    seq[100:110] = seq[99]
    seq[200::7] = ways - 1
    fills = rng.integers(0, 2, len(seq))
    S = np.zeros(3, dtype=np.int64)
    S[1] = lru.first_order(ways)
    order = list(range(ways))
    victims = np.zeros(len(seq), dtype=np.int64)
    for i, w in enumerate(seq):   # one use at a time: the word is checked after each
        if fills[i] and i % 3:   # most fills take the victim, as a full set's do
            seq[i] = w = order[-1]
        _uses(S, 1, ways, seq[i:i + 1], fills[i:i + 1], victims[i:i + 1])
        order.remove(w)
        order.insert(0, w)
        assert _order(S[1], ways) == order, i
        assert S[1] == _word(order), i   # and nothing above the set's nibbles
        assert victims[i] == order[-1]
    assert S[0] == 0 and S[2] == 0   # the neighbours are untouched


def test_the_word_holds_sixteen_ways():
    assert PACKED_WAYS == 16
    word = lru.first_order(16)
    assert _order(word, 16) == list(range(16)) and word < 0   # way 15 sets the sign bit


@njit
def _oldest(S, ways):
    return lru.oldest(S, 0, ways, 0)


@pytest.mark.parametrize("ways", [1, 2, 7, 8, 9, 16, 20])
def test_the_oldest_stamp_is_the_first_least(ways):
    """The stamp victim (an L1's LRU, a set wider than the order word) against numpy's
    argmin, which takes the first of equal values: stamps drawn from a few values, so
    that ties are common, wherever they fall."""
    rng = np.random.default_rng(ways)
    for _ in range(300):
        S = rng.integers(0, 4, ways).astype(np.int64)
        assert _oldest(S, ways) == np.argmin(S), S
