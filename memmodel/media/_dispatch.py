"""The media side's one dispatch on kind: a read or a posted write goes through the
channel its address interleaves to (memmodel.media._channels), and the kind's module times
the media behind it. The last branch takes the DRAM-like kinds."""
from memmodel.jit import inlined, ix
from memmodel.layout import MH
from memmodel.media import MC, MP, N_MPARAMS, dram, optane
from memmodel.media import _channels as ch


@inlined
def read(S, m, addr, t0, remote, stamp):
    """A 64-byte read of media `m` by a load that started at cycle t0; returns the cycle
    its data is back (idle: t0 + the media's load-to-use latency)."""
    p = S[MH.MP] + m * N_MPARAMS
    row = ch.channel_row(S, p, addr)
    ch.mcount(S, m, MC.READS, 1)
    t = t0
    if remote:   # the request crosses the link now, the data's latency is paid on return
        t = ch.cross_link(S, t0) - ch.link_lat(S)
    if S[ix(p + MP.KIND)] == optane.KIND:
        done = optane.read(S, p, m, row, addr, t, stamp)
    else:
        done = dram.read(S, p, m, row, addr, t, stamp)
    if remote:
        done += ch.link_lat(S)
    return done


@inlined
def write(S, m, addr, nbytes, t0, remote, stamp):
    """A posted write of `nbytes` (<= 64, one line) issued at t0; returns (the cycle the
    memory controller accepts it: it enters the WPQ, the ADR persistence domain; the cycle
    the sender learns it was posted). The second is the posting round trip after t0
    (wc_post_ns, plus numa.remote_post_ns for a remote write) and whatever the write waited
    on the way: for the interconnect, for a WPQ slot. It is never before the accept."""
    p = S[MH.MP] + m * N_MPARAMS
    row = ch.channel_row(S, p, addr)
    ch.mcount(S, m, MC.WRITES, 1)
    if nbytes < 64:
        ch.mcount(S, m, MC.PARTIAL_WRITES, 1)
    t = t0
    posted = t0 + S[ix(p + MP.POST_LAT)]
    if remote:
        t = ch.cross_link(S, t0)
        # the wait for the link (t - t0 beyond its latency) delays the post too
        posted += ch.remote_post(S) + t - t0 - ch.link_lat(S)
    slot, accept = ch.wpq_accept(S, p, m, row, t)
    posted += accept - t - S[ix(p + MP.ACCEPT_LAT)]   # the wait for a WPQ slot
    if S[ix(p + MP.KIND)] == optane.KIND:
        free = optane.write(S, p, m, row, addr, nbytes, accept, stamp)
    else:
        free = dram.write(S, p, m, row, addr, nbytes, accept, stamp)
    ch.wpq_release(S, p, row, slot, free)
    return accept, max(accept, posted)
