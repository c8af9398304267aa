"""L2 stream prefetcher, ascending only: the model of the L2 streamer before it knew
descending streams, kept so that a profile naming "stream" runs as it did. The streamer as
Intel documents it, in both directions, is memmodel.prefetch.streamer; both use this table
and this train() (`both`: descending streams too).

It tracks runs of misses per 4 KiB page. A miss on the line after the last one seen in a
tracked page (or the same line) confirms an ascending stream; with `both`, a miss on the
line before it confirms a descending one (and the same line goes on in the stream's
direction). Each confirmation issues up to `degree` lines in the stream's direction, never
more than `distance` lines ahead of the miss nor out of the page. Pages are tracked in a
small table replaced least recently used; the table size is the profile's
prefetch.stream_entries. A page holds one stream, of one direction, at a time (the manual's
streamer may keep one forward and one backward stream per page: a simplification).
"""
from memmodel.jit import compiled, ix
from memmodel.layout import MH, fields
from memmodel.prefetch import PREFETCHER_IDS

ID = PREFETCHER_IDS.index("stream")

ROW = fields("ROW", "PAGE LAST NEXT STAMP DIR")   # columns of a table row (DIR: +1 or -1)
N_ROW = len(ROW)
HEAD = fields("HEAD", "CLOCK SIZE")           # row 0: the table's clock and its entries


@compiled
def train(S, line, distance, degree, both):
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
        S[ix(o + ROW.DIR)] = 1
        return 0, 0, 1
    o = st + N_ROW * e
    S[ix(o + ROW.STAMP)] = S[ix(st + HEAD.CLOCK)]
    last = S[ix(o + ROW.LAST)]
    S[ix(o + ROW.LAST)] = line
    if line == last + 1:
        S[ix(o + ROW.DIR)] = 1
    elif both and line == last - 1:
        S[ix(o + ROW.DIR)] = -1
    elif line != last:
        S[ix(o + ROW.NEXT)] = line + 1
        S[ix(o + ROW.DIR)] = 1
        return 0, 0, 1
    if S[ix(o + ROW.DIR)] > 0:
        first = max(S[ix(o + ROW.NEXT)], line + 1)
        limit = min(line + distance, ((page + 1) << 6) - 1)
        count = max(0, min(degree, limit - first + 1))
        S[ix(o + ROW.NEXT)] = first + count
        return first, count, 1
    first = min(S[ix(o + ROW.NEXT)], line - 1)
    limit = max(line - distance, page << 6)
    count = max(0, min(degree, first - limit + 1))
    S[ix(o + ROW.NEXT)] = first - count
    return first, count, -1
