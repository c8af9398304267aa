"""L1 IP-based stride prefetcher: per load instruction, a regular stride of up to 2 KiB,
forward or backward, prefetches the line of the next address.

Source (memmodel.prefetch._manual.MANUAL), "Data Prefetch to L1 Data Cache": "Instruction
pointer (IP)-based stride prefetcher: This prefetcher keeps track of individual load
instructions. If a load instruction is detected to have a regular stride, then a prefetch
is sent to the next address which is the sum of the current address and the stride. This
prefetcher can prefetch forward or backward and can detect strides of up to 2K bytes."

Model: a table of prefetch.ip_stride_entries load instructions (the manual gives no size:
an assumption in the profile), told apart by their ip (a LOAD's COL_SRC; a load without
one does not train it), most recently trained first: a new ip takes the place of the
least recently trained one. An entry keeps the last address its load trained with and the
stride between its last two. A load trains it on its L1 miss and on its first hit on a
line a prefetcher brought in (without the prefetch that hit would have been the miss, so a
stride it prefetches keeps training; other hits do not train it: a simplification that
makes a stride below a line train as one of a line). When the stride between this address
and the last equals the one before (a, a + s, a + 2s), s is not 0 and |s| <= 2048, the line
of the next address, a + 3s, is prefetched, unless it is this line or in another 4 KiB
page (assumed as for the other prefetchers: they work on physical lines, and the next
page's frame is unknown to them).

Of the manual's conditions for any L1 prefetch only "within the same 4K byte page" is
modelled; "load is from writeback memory type", "no fence is in progress in the pipeline",
"not many other load misses are in progress" and "there is not a continuous stream of
stores" are not: a prefetch here may issue where the hardware would hold it back.

The table's order is its recency (no clock): rows move on each training, which keeps the
state free of time stamps (emu.fastforward matches it word for word).
"""
from memmodel.jit import compiled, ix
from memmodel.layout import MH, fields
from memmodel.prefetch import PREFETCHER_IDS

ID = PREFETCHER_IDS.index("ip_stride")
MAX_STRIDE = 2048   # bytes, either way (the manual's "strides of up to 2K bytes")

ROW = fields("ROW", "IP LAST STRIDE")   # columns of a table row; IP 0: an empty row
N_ROW = len(ROW)
HEAD = fields("HEAD", "SIZE")           # row 0: the table's entries


@compiled
def train(S, ip, addr):
    if ip == 0:
        return 0, 0, 1
    t = S[MH.IP_STRIDE]
    n = S[ix(t + HEAD.SIZE)]
    e = n   # not found: the last row (the least recently trained) makes way
    for i in range(1, n + 1):
        if S[ix(t + N_ROW * i + ROW.IP)] == ip:
            e = i
            break
    found = S[ix(t + N_ROW * e + ROW.IP)] == ip
    last, stride = S[ix(t + N_ROW * e + ROW.LAST)], S[ix(t + N_ROW * e + ROW.STRIDE)]
    for i in range(e, 1, -1):   # rows 1..e-1 move down one: row 1 is this load's
        for c in range(N_ROW):
            S[ix(t + N_ROW * i + c)] = S[ix(t + N_ROW * (i - 1) + c)]
    o = t + N_ROW
    S[ix(o + ROW.IP)] = ip
    S[ix(o + ROW.LAST)] = addr
    if not found:
        S[ix(o + ROW.STRIDE)] = 0
        return 0, 0, 1
    s = addr - last
    S[ix(o + ROW.STRIDE)] = s
    nxt = addr + s
    if s == 0 or s != stride or s > MAX_STRIDE or s < -MAX_STRIDE or nxt < 0 or \
            nxt >> 12 != addr >> 12 or nxt >> 6 == addr >> 6:
        return 0, 0, 1
    return nxt >> 6, 1, 1
