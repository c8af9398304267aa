"""The media side's sections (memmodel.media): the media's parameter rows, counters, channel
rows and the interconnect, declared with their roles and set from the profile's [media.*] and
[numa] tables."""
from functools import partial

import numpy as np

from memmodel.jit import reciprocal_bits
from memmodel.layout import COUNTER, EXACT, HEAD, SHARED, clock, ring
from memmodel.media import (CH, KIND_IDS, MP, N_MCOUNTERS, N_MPARAMS, PERSISTENCE, G, cycles,
                            module, occ_fp)

GOLDEN = (5 ** 0.5 - 1) / 2


def _own(m):
    """(the ROW of media `m`'s kind, its entries): (None, 0) for a kind without one."""
    row = module(m["kind"]).ROW
    return (row, m[row.entries]) if row else (None, 0)


def _shape(media):
    """(channels, where a chan row's own words start (G.OWN0), its width): room for the most
    WPQ slots and the most words of its own a kind of `media` keeps."""
    channels = sum(m["channels"] for m in media)
    own0 = CH.WPQ0 + max(m["wpq_entries"] for m in media)
    own_words = max(len(row.fields) * n if row else 0 for row, n in map(_own, media))
    return channels, own0, own0 + own_words


def _init_background(rows, unit_bytes, freq_ghz, read_gbps, write_gbps):
    """A media's background streams: one arrival a period on every channel, each moving the
    kind's unit. Channel c's first arrival is at the fraction c x 0.618... (mod 1) of a
    period: streams in phase on every channel would meet a dependent chain of reads, which
    hops channels, at the same phase every time (it waits always or never)."""
    ch = len(rows)
    for nxt, period, gbps in ((CH.BG_RD_NEXT, CH.BG_RD_PERIOD, read_gbps),
                              (CH.BG_WR_NEXT, CH.BG_WR_PERIOD, write_gbps)):
        per = occ_fp(unit_bytes, gbps / ch, freq_ghz) if gbps > 0 else 0
        rows[:, period] = per
        rows[:, nxt] = [int(per * (c * GOLDEN % 1)) if per else -1 for c in range(ch)]


def _chan_roles(media, layout, S):
    """A channel row's busy times (FP) and next background arrivals (FP, -1: none), its WPQ
    (a ring of its media's entries; the row's further slots unused, "cycles"), and its
    kind's own words, with the roles the kind declares (its ROW)."""
    width = layout.shapes["chan"][1]
    rows = layout.offsets["chan"] + width * np.arange(layout.shapes["chan"][0])
    own0 = S[layout.offsets["mglob"] + G.OWN0]
    out = [(rows + c, clock("fp")) for c in (CH.RD_BUSY, CH.WR_BUSY, CH.MEDIA_BUSY)]
    out += [(rows + c, clock("fp", none=True)) for c in (CH.BG_RD_NEXT, CH.BG_WR_NEXT)]
    out.append((rows + CH.WPQ_HEAD, HEAD))
    chan0 = 0
    for m in media:
        mine = rows[chan0:chan0 + m["channels"]]
        chan0 += m["channels"]
        wpq = m["wpq_entries"]
        for r in mine:
            out.append(((r + CH.WPQ0 + np.arange(wpq))[:, None], ring(r + CH.WPQ_HEAD, "cycles")))
        out.append((mine[:, None] + np.arange(CH.WPQ0 + wpq, own0), clock("cycles")))
        row, n = _own(m)
        for field, role in (row.roles.items() if row else ()):
            out.append((mine[:, None] + own0 + field * n + np.arange(n), role))
    return out


def add_sections(layout, media):
    channels, _, width = _shape(media)
    # the memory side the cores share: parameters, counters, channels, the interconnect
    layout.add("mp", (len(media), N_MPARAMS), EXACT, share=SHARED)
    layout.add("mcnt", (len(media), N_MCOUNTERS), COUNTER, share=SHARED)
    layout.add("chan", (channels, width), partial(_chan_roles, media), share=SHARED)
    layout.add("mglob", len(G), {G.LINK_BUSY_FP: clock("fp"),
                                 **dict.fromkeys(list(G)[1:], EXACT)}, share=SHARED)


def init_sections(layout, S, media, freq_ghz, numa, background=None):
    """`media`: list of resolved [media.*] dicts (order = media id); `background`: one
    (read_gbps, write_gbps) per media (None: none), spread evenly over its channels."""
    params = layout.view(S, "mp")
    chan = layout.view(S, "chan")
    _, own0, width = _shape(media)
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
        mine = chan[chan0:chan0 + ch]
        row, n = _own(m)
        for field, value in (row.empty.items() if row else ()):
            mine[:, own0 + field * n:own0 + (field + 1) * n] = value
        if background is not None:
            _init_background(mine, int(p[MP.UNIT_BYTES]), freq_ghz, *background[i])
        chan0 += ch
    g = layout.view(S, "mglob")
    g[G.LINK_OCC_FP] = occ_fp(64, numa["remote_bw_gbps"], freq_ghz)
    g[G.LINK_LAT] = cycles(numa["remote_latency_ns"], freq_ghz)
    g[G.REMOTE_HOLD] = cycles(numa["remote_hold_ns"], freq_ghz)
    g[G.CHAN_STRIDE] = width
    g[G.OWN0] = own0
    if background is None:
        chan[:, CH.BG_RD_NEXT] = chan[:, CH.BG_WR_NEXT] = -1
