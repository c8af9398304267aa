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
    ch.background(S, p, row, t, S[ix(p + MP.KIND)] == optane.KIND)
    if S[ix(p + MP.KIND)] == optane.KIND:
        done = optane.read(S, p, m, row, addr, t, stamp)
    else:
        done = dram.read(S, p, m, row, addr, t, stamp)
    if remote:
        done += ch.link_lat(S)
    return done


@inlined
def write(S, m, addr, nbytes, t0, remote, stamp):
    """A posted write of `nbytes` (<= 64, one line) issued at t0, by any sender: an NT line,
    a write-back, an eviction. Returns (the cycle the memory controller accepts it: it
    enters the WPQ, the ADR persistence domain; the cycle an NT line's sender learns it was
    taken, what SFENCE waits for: wc_ack_ns after t0, plus numa.remote_latency_ns for a
    remote line; the cycle its WC buffer is free again: wc_hold_ns after t0, plus
    numa.remote_hold_ns for a remote line). The last two are later by whatever the write
    waited on the way (for the interconnect, for a WPQ slot) and never before the accept."""
    p = S[MH.MP] + m * N_MPARAMS
    row = ch.channel_row(S, p, addr)
    ch.mcount(S, m, MC.WRITES, 1)
    if nbytes < 64:
        ch.mcount(S, m, MC.PARTIAL_WRITES, 1)
    t = t0
    wait = 0
    if remote:
        t = ch.cross_link(S, t0)
        wait = t - t0 - ch.link_lat(S)   # the wait for the link
    ch.background(S, p, row, t, S[ix(p + MP.KIND)] == optane.KIND)
    slot, accept = ch.wpq_accept(S, p, m, row, t)
    wait += accept - t - S[ix(p + MP.ACCEPT_LAT)]   # the wait for a WPQ slot
    ack = t0 + S[ix(p + MP.ACK_LAT)] + wait
    hold = t0 + S[ix(p + MP.HOLD_LAT)] + wait
    if remote:
        ack += ch.link_lat(S)
        hold += ch.remote_hold(S)
    if S[ix(p + MP.KIND)] == optane.KIND:
        free = optane.write(S, p, m, row, addr, nbytes, accept, stamp)
    else:
        free = dram.write(S, p, m, row, addr, nbytes, accept, stamp)
    ch.wpq_release(S, p, row, slot, free)
    return accept, max(accept, ack), max(accept, hold)
