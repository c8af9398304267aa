"""Stream prefetcher (as the L2 streamer): tracks ascending runs of misses per 4 KiB page.

A miss on the line after the last one seen in a tracked page (or the same line) confirms
the stream; each confirmation issues up to `degree` lines, never more than `distance`
lines ahead of the miss nor past the page. Pages are tracked in a small table replaced
least recently used; the table size is the profile's prefetch.stream_entries.
"""
from memmodel.jit import compiled, ix
from memmodel.layout import MH, fields
from memmodel.prefetch import PREFETCHER_IDS

ID = PREFETCHER_IDS.index("stream")

ROW = fields("ROW", "PAGE LAST NEXT STAMP")   # columns of a table row
N_ROW = len(ROW)
HEAD = fields("HEAD", "CLOCK SIZE")           # row 0: the table's clock and its entries


def add_sections(layout, entries):
    layout.add("stream", (entries + 1, N_ROW))


def init_sections(layout, S, entries):
    table = layout.view(S, "stream")
    table[0, HEAD.SIZE] = entries
    table[1:, ROW.PAGE] = -1


@compiled
def train(S, line, distance, degree):
    page = line >> 6
    st = S[MH.STREAM]
    S[ix(st + HEAD.CLOCK)] += 1
    e = -1
    oldest = 1
    for i in range(1, S[ix(st + HEAD.SIZE)] + 1):
        if S[ix(st + N_ROW * i + ROW.PAGE)] == page:
            e = i
            break
        if S[ix(st + N_ROW * i + ROW.STAMP)] < S[ix(st + N_ROW * oldest + ROW.STAMP)]:
            oldest = i
    if e < 0:
        o = st + N_ROW * oldest
        S[ix(o + ROW.PAGE)] = page
        S[ix(o + ROW.LAST)] = line
        S[ix(o + ROW.NEXT)] = line + 1
        S[ix(o + ROW.STAMP)] = S[ix(st + HEAD.CLOCK)]
        return 0, 0, 1
    o = st + N_ROW * e
    S[ix(o + ROW.STAMP)] = S[ix(st + HEAD.CLOCK)]
    last = S[ix(o + ROW.LAST)]
    S[ix(o + ROW.LAST)] = line
    if line != last + 1 and line != last:
        S[ix(o + ROW.NEXT)] = line + 1
        return 0, 0, 1
    first = max(S[ix(o + ROW.NEXT)], line + 1)
    limit = min(line + distance, ((page + 1) << 6) - 1)
    count = max(0, min(degree, limit - first + 1))
    S[ix(o + ROW.NEXT)] = first + count
    return first, count, 1
