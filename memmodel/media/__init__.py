"""Media backends: DRAM, NVDIMM-N and Optane DCPMM behind per-channel queues.

Time is in core cycles; channel occupancy is kept in fixed point (FP units per cycle) so
that bandwidths that are not a whole number of bytes per cycle are not rounded away.
A read starts at max(arrival, channel free), holds the channel for bytes/bandwidth and
returns after the media's idle load-to-use latency. Every write (an NT line from a
write-combining buffer, a CLWB/CLFLUSHOPT/CLFLUSH write-back, an eviction) takes one path:
accepted into the channel's write-pending queue (WPQ) when it has a free slot, the slot
free again when the channel's write side (a DIMM's write intake) has moved it on. A write-
combining buffer that sent a line learns it was taken wc_ack_ns after sending it (what
SFENCE waits for) and is free again wc_hold_ns after (what bounds a stream), each later by
any wait for a WPQ slot. A remote (other NUMA node) request also crosses the interconnect, a
shared link with its own bandwidth and latency (numa.remote_latency_ns for a read and for a
remote line's acknowledgement, numa.remote_hold_ns added to a buffer's hold). What all kinds
share (channel rows, interleave, WPQ, the link) is in _channels.py; each kind's module times the
media itself: dram.py (DRAM and NVDIMM-N), optane.py (the XPBuffer of 256-byte XPLines).

KINDS is the one list of media kinds and PERSISTENCE of persistence domains: a profile's
[media.NAME] `kind` and `persistence` are names here. A kind's id, its index in KIND_IDS,
is what compiled code dispatches on, in memmodel.media._dispatch. This module imports
nothing compiled, so that memmodel.profile can take the names and each kind's profile keys
from it without numba; the kinds' modules are imported when a machine is built.

Adding a media kind: a module NAME.py with init_params(), read() and write() (as in
dram.py) and `KIND = KIND_IDS.index("NAME")`, its line in KINDS (with the profile keys it
adds), and one branch for it in _dispatch.read and _dispatch.write. A kind with DRAM-like
timing needs only its line in KINDS, naming "dram".
"""
from importlib import import_module

import numpy as np

from memmodel.layout import COUNTER, EXACT, HEAD, clock, fields, ring

FP = 1024
GOLDEN = (5 ** 0.5 - 1) / 2

# kind -> (the module of this package that times it, the keys it adds to its profile
# [media.NAME] table, as memmodel.profile's (type, sourced, minimum, maximum) specs).
# Optane: an XPLine's written-chunk mask is one int64 (a bit per 64 bytes), and the
# XPBuffer is scanned per access and has room in every channel row.
KINDS = {
    "dram": ("dram", {}),
    "nvdimm-n": ("dram", {}),
    "optane": ("optane", {
        "buffer_read_latency_ns": ("num", True, 0, 10**6),
        "xpline_bytes": ("int", True, 64, 2048),
        "xpbuffer_entries": ("int", True, 1, 1024),
        "bus_gbps": ("num", True, 1e-3, 10**4),   # one DIMM's bus: its write intake
    }),
}
KIND_IDS = tuple(KINDS)
PERSISTENCE = ("none", "adr", "eadr")

# mp[media, field] (latencies in cycles, occupancies in FP units)
MP = fields("MP", "KIND READ_LAT BUF_READ_LAT ACCEPT_LAT HOLD_LAT ACK_LAT RD_OCC_FP WR_OCC_FP "
            "BUS_OCC_FP INTAKE_OCC_FP "
            "CHANNELS CH_INV INTERLEAVE CHAN0 WPQ XPL_BYTES XPBUF SHARED_BUSY PERSIST")
N_MPARAMS = len(MP)

# mcnt[media, counter]. READS/WRITES: 64 B lines at the controller; MEDIA_LINE_*: the
# media's own accesses, an XPLine on Optane, a 64 B line (the same count as READS/WRITES) on
# a DRAM-like kind.
MC = fields("MC", "READS WRITES PARTIAL_WRITES MEDIA_LINE_READS MEDIA_LINE_WRITES "
            "READ_MODIFY_WRITES XPBUFFER_HITS WPQ_FULL_STALL_CYCLES READ_QUEUE_CYCLES")
# stats()'s names of MC, one name per quantity with its unit (docs/machine.md, "Counters"):
# the compiled code's enum keeps its names, these are the API's.
MEDIA_COUNTER_NAMES = ("line_reads", "line_writes", "partial_writes", "xpline_reads",
                       "xpline_writes", "read_modify_writes", "xpbuffer_hits",
                       "wpq_full_stall_cycles", "read_queue_cycles")
# Reported only by a kind timed in XPLines (optane.py): a DRAM-like kind's media reads and
# writes 64 B lines, which line_reads and line_writes count already.
XPLINE_COUNTERS = ("xpline_reads", "xpline_writes")
N_MCOUNTERS = len(MC)

# mglob[]: interconnect (a read's extra latency, a WC buffer's extra hold) and the shape of a
# chan row
G = fields("G", "LINK_BUSY_FP LINK_OCC_FP LINK_LAT REMOTE_HOLD CHAN_STRIDE XP0 XP_MAX")
# chan[channel, ...]: RD_BUSY, WR_BUSY, MEDIA_BUSY (FP: the read side, the write side, Optane's
# media behind its XPBuffer), WPQ_HEAD, the background streams (other cores' traffic,
# memmodel.media._channels.background: the FP time of the next read and write arrival, -1 for
# none, and their periods in FP units, 0 for none), WPQ slots from WPQ0 (the cycle each is free
# again), then XPBuffer entries (memmodel.media.optane) from G.XP0 as runs of G.XP_MAX (XP):
# tag, written-chunk mask, loaded, LRU stamp, the cycle the entry's media work is done (READY),
# the FP start of its media write not yet begun (WB), the cycle the read that loaded it from the
# media delivers its data (ARRIVE; -1: none). A row has room for the largest XPBuffer of the
# profile's media (one entry if none has one); other kinds leave it empty.
CH = fields("CH", "RD_BUSY WR_BUSY MEDIA_BUSY WPQ_HEAD BG_RD_NEXT BG_RD_PERIOD BG_WR_NEXT "
            "BG_WR_PERIOD WPQ0")
XP = fields("XP", "TAG MASK LOADED STAMP READY WB ARRIVE")


def module(kind):
    """The module that times media of `kind`."""
    return import_module(f"{__name__}.{KINDS[kind][0]}")


def counter_names(kind):
    """(index in mcnt, name) of the counters media of `kind` reports in stats()."""
    xplines = KINDS[kind][0] == "optane"
    return tuple((i, n) for i, n in enumerate(MEDIA_COUNTER_NAMES)
                 if xplines or n not in XPLINE_COUNTERS)


def kind_keys(kind):
    """The keys media of `kind` add to a profile's [media.NAME] table ({} for an unknown
    kind, which the profile rejects by its `kind` key)."""
    return KINDS[kind][1] if kind in KIND_IDS else {}


def cycles(ns, freq_ghz):
    return int(round(ns * freq_ghz))


def occ_fp(nbytes, gbps, freq_ghz):
    """Channel occupancy in FP units for moving `nbytes` at `gbps` (GB/s = bytes/ns)."""
    return max(1, int(round(nbytes * freq_ghz / gbps * FP)))


def _shape(media):
    channels = sum(m["channels"] for m in media)
    max_q = max(m["wpq_entries"] for m in media)
    max_x = max([m.get("xpbuffer_entries", 1) for m in media])
    return channels, max_q, max_x


def _init_background(rows, m, freq_ghz, read_gbps, write_gbps):
    """A media's background streams: one arrival a period on every channel, each moving the
    kind's unit (an XPLine on Optane, a 64-byte line else). Channel c's first arrival is at
    the fraction c x 0.618... (mod 1) of a period: streams in phase on every channel would
    meet a dependent chain of reads, which hops channels, at the same phase every time
    (it waits always or never)."""
    unit = m.get("xpline_bytes", 64)
    ch = m["channels"]
    for nxt, period, gbps in ((CH.BG_RD_NEXT, CH.BG_RD_PERIOD, read_gbps),
                              (CH.BG_WR_NEXT, CH.BG_WR_PERIOD, write_gbps)):
        per = occ_fp(unit, gbps / ch, freq_ghz) if gbps > 0 else 0
        rows[:, period] = per
        rows[:, nxt] = [int(per * (c * GOLDEN % 1)) if per else -1 for c in range(ch)]


def _chan_roles(layout, S):
    """A channel row's busy times (FP) and next background arrivals (FP, -1: none), its WPQ
    (a ring of the media's entries; the row's further slots unused, "cycles"), and its
    XPBuffer's stamps, ready and arrival cycles and write-back times (FP, -1: none)."""
    width = layout.shapes["chan"][1]
    rows = layout.offsets["chan"] + width * np.arange(layout.shapes["chan"][0])
    g = layout.offsets["mglob"]
    x0, nmax = S[g + G.XP0], S[g + G.XP_MAX]
    out = [(rows + c, clock("fp")) for c in (CH.RD_BUSY, CH.WR_BUSY, CH.MEDIA_BUSY)]
    out += [(rows + c, clock("fp", none=True)) for c in (CH.BG_RD_NEXT, CH.BG_WR_NEXT)]
    out.append((rows + CH.WPQ_HEAD, HEAD))
    mp = layout.view(S, "mp")
    row = iter(rows)
    for media in range(mp.shape[0]):
        wpq = int(mp[media, MP.WPQ])
        for _ in range(int(mp[media, MP.CHANNELS])):
            r = next(row)
            out.append(((r + CH.WPQ0 + np.arange(wpq))[:, None], ring(r + CH.WPQ_HEAD, "cycles")))
            out.append((r + np.arange(CH.WPQ0 + wpq, x0), clock("cycles")))
    for field, role in ((XP.STAMP, clock("mem")), (XP.READY, clock("cycles")),
                        (XP.WB, clock("fp", none=True)), (XP.ARRIVE, clock("cycles", none=True))):
        out.append(((rows + x0 + field * nmax)[:, None] + np.arange(nmax), role))
    return out


def add_sections(layout, media):
    channels, max_q, max_x = _shape(media)
    layout.add("mp", (len(media), N_MPARAMS), EXACT)
    layout.add("mcnt", (len(media), N_MCOUNTERS), COUNTER)
    layout.add("chan", (channels, CH.WPQ0 + max_q + len(XP) * max_x), _chan_roles)
    layout.add("mglob", len(G), {G.LINK_BUSY_FP: clock("fp"),
                                 **dict.fromkeys(list(G)[1:], EXACT)})


def init_sections(layout, S, media, freq_ghz, numa, background=None):
    """`media`: list of resolved [media.*] dicts (order = media id); `background`: one
    (read_gbps, write_gbps) per media (None: none), spread evenly over its channels."""
    from memmodel.jit import reciprocal_bits   # a machine is being built: numba is in
    params = layout.view(S, "mp")
    channels, max_q, max_x = _shape(media)
    chan0 = 0
    for i, m in enumerate(media):
        ch = m["channels"]
        p = params[i]
        p[MP.KIND] = KIND_IDS.index(m["kind"])
        p[MP.READ_LAT] = cycles(m["read_latency_ns"], freq_ghz)
        p[MP.ACCEPT_LAT] = cycles(m["write_accept_ns"], freq_ghz)
        p[MP.HOLD_LAT] = cycles(m["wc_hold_ns"], freq_ghz)
        p[MP.ACK_LAT] = cycles(m["wc_ack_ns"], freq_ghz)
        p[MP.CHANNELS] = ch
        p[MP.CH_INV] = reciprocal_bits(ch)   # _channels.channel_row's remainder
        p[MP.INTERLEAVE] = m["interleave_bytes"]
        p[MP.CHAN0] = chan0
        p[MP.WPQ] = m["wpq_entries"]
        p[MP.SHARED_BUSY] = 1 if m["reads_wait_for_writes"] else 0
        p[MP.PERSIST] = PERSISTENCE.index(m["persistence"])
        module(m["kind"]).init_params(p, m, freq_ghz, m["read_bw_gbps"] / ch,
                                      m["write_bw_gbps"] / ch)
        if background is not None:
            _init_background(layout.view(S, "chan")[chan0:chan0 + ch], m, freq_ghz,
                             *background[i])
        chan0 += ch
    g = layout.view(S, "mglob")
    g[G.LINK_OCC_FP] = occ_fp(64, numa["remote_bw_gbps"], freq_ghz)
    g[G.LINK_LAT] = cycles(numa["remote_latency_ns"], freq_ghz)
    g[G.REMOTE_HOLD] = cycles(numa["remote_hold_ns"], freq_ghz)
    g[G.CHAN_STRIDE] = CH.WPQ0 + max_q + len(XP) * max_x
    g[G.XP0] = CH.WPQ0 + max_q
    g[G.XP_MAX] = max_x
    chan = layout.view(S, "chan")
    chan[:, CH.WPQ0 + max_q:CH.WPQ0 + max_q + max_x] = -1  # XPBuffer tags: empty
    if background is None:
        chan[:, CH.BG_RD_NEXT] = chan[:, CH.BG_WR_NEXT] = -1
