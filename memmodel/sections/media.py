"""The media side's sections (memmodel.media): the media's parameter rows, counters, channel
rows and the interconnect, declared with their roles and set from the profile's [media.*] and
[numa] tables."""
import numpy as np

from memmodel.jit import reciprocal_bits
from memmodel.layout import COUNTER, EXACT, HEAD, SHARED, clock, ring
from memmodel.media import (CH, KIND_IDS, MP, N_MCOUNTERS, N_MPARAMS, PERSISTENCE, XP, G, cycles,
                            module, occ_fp)

GOLDEN = (5 ** 0.5 - 1) / 2


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
    # the memory side the cores share: parameters, counters, channels, the interconnect
    layout.add("mp", (len(media), N_MPARAMS), EXACT, share=SHARED)
    layout.add("mcnt", (len(media), N_MCOUNTERS), COUNTER, share=SHARED)
    layout.add("chan", (channels, CH.WPQ0 + max_q + len(XP) * max_x), _chan_roles,
               share=SHARED)
    layout.add("mglob", len(G), {G.LINK_BUSY_FP: clock("fp"),
                                 **dict.fromkeys(list(G)[1:], EXACT)}, share=SHARED)


def init_sections(layout, S, media, freq_ghz, numa, background=None):
    """`media`: list of resolved [media.*] dicts (order = media id); `background`: one
    (read_gbps, write_gbps) per media (None: none), spread evenly over its channels."""
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
