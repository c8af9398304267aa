"""Stream prefetcher (as the L2 streamer): tracks ascending runs of misses per 4 KiB page.

A miss on the line after the last one seen in a tracked page (or the same line) confirms
the stream; each confirmation issues up to `degree` lines, never more than `distance`
lines ahead of the miss nor past the page. Pages are tracked in a small table replaced
least recently used; the table size is the profile's prefetch.stream_entries.
"""
from memmodel.jit import compiled, ix
from memmodel.layout import H_STREAM

PAGE, LAST, NEXT, STAMP = range(4)   # columns of a table row
CLOCK, SIZE = 0, 1                   # row 0: the table's clock and its number of entries


def add_sections(layout, entries):
    layout.add("stream", (entries + 1, 4))


def init_sections(layout, S, entries):
    table = layout.view(S, "stream")
    table[0, SIZE] = entries
    table[1:, PAGE] = -1


@compiled
def train(S, line, distance, degree):
    page = line >> 6
    st = S[H_STREAM]
    S[ix(st + CLOCK)] += 1
    e = -1
    oldest = 1
    for i in range(1, S[ix(st + SIZE)] + 1):
        if S[ix(st + 4 * i + PAGE)] == page:
            e = i
            break
        if S[ix(st + 4 * i + STAMP)] < S[ix(st + 4 * oldest + STAMP)]:
            oldest = i
    if e < 0:
        o = st + 4 * oldest
        S[ix(o + PAGE)] = page
        S[ix(o + LAST)] = line
        S[ix(o + NEXT)] = line + 1
        S[ix(o + STAMP)] = S[ix(st + CLOCK)]
        return 0, 0
    o = st + 4 * e
    S[ix(o + STAMP)] = S[ix(st + CLOCK)]
    last = S[ix(o + LAST)]
    S[ix(o + LAST)] = line
    if line != last + 1 and line != last:
        S[ix(o + NEXT)] = line + 1
        return 0, 0
    first = max(S[ix(o + NEXT)], line + 1)
    limit = min(line + distance, ((page + 1) << 6) - 1)
    count = max(0, min(degree, limit - first + 1))
    S[ix(o + NEXT)] = first + count
    return first, count
