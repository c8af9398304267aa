"""The IP-stride prefetcher's table (memmodel.prefetch.ip_stride): `entries` empty rows
(the table's order is its recency: no clock)."""
from memmodel.layout import EXACT, PRIVATE
from memmodel.prefetch.ip_stride import HEAD, N_ROW


def add_sections(layout, entries):
    layout.add("ip_stride", (entries + 1, N_ROW), EXACT, share=PRIVATE)   # a core's L1 prefetcher


def init_sections(layout, S, entries):
    layout.view(S, "ip_stride")[0, HEAD.SIZE] = entries
