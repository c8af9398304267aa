"""Stream prefetcher (as the L2 streamer): tracks ascending runs of misses per 4 KiB page.

A miss on the line after the last one seen in a tracked page (or the same line) confirms
the stream; each confirmation issues up to `degree` lines, never more than `distance`
lines ahead of the miss nor past the page. Pages are tracked in a small table replaced
least recently used.
"""
from memmodel.jit import compiled
from memmodel.layout import H_STREAM

ENTRIES = 16
PAGE, LAST, NEXT, STAMP = range(4)   # columns of a table row; row 0 holds the clock


def add_sections(layout):
    layout.add("stream", (ENTRIES + 1, 4))


def init_sections(layout, S):
    layout.view(S, "stream")[1:, PAGE] = -1


@compiled
def train(S, line, distance, degree):
    page = line >> 6
    st = S[H_STREAM]
    S[st] += 1
    e = -1
    oldest = 1
    for i in range(1, ENTRIES + 1):
        if S[st + 4 * i + PAGE] == page:
            e = i
            break
        if S[st + 4 * i + STAMP] < S[st + 4 * oldest + STAMP]:
            oldest = i
    if e < 0:
        o = st + 4 * oldest
        S[o + PAGE] = page
        S[o + LAST] = line
        S[o + NEXT] = line + 1
        S[o + STAMP] = S[st]
        return 0, 0
    o = st + 4 * e
    S[o + STAMP] = S[st]
    last = S[o + LAST]
    S[o + LAST] = line
    if line != last + 1 and line != last:
        S[o + NEXT] = line + 1
        return 0, 0
    first = max(S[o + NEXT], line + 1)
    limit = min(line + distance, ((page + 1) << 6) - 1)
    count = max(0, min(degree, limit - first + 1))
    S[o + NEXT] = first + count
    return first, count
