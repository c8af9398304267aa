"""The stream prefetcher's table (memmodel.prefetch.stream): declared with its clock and
set to `entries` empty rows."""
import numpy as np

from memmodel.layout import PRIVATE, clock
from memmodel.prefetch.stream import HEAD, N_ROW, ROW


def _roles(layout, S):
    """The table's clock and its rows' stamps, on clock "stream"."""
    st = layout.offsets["stream"]
    rows = st + N_ROW * np.arange(1, layout.shapes["stream"][0])
    return [(np.array([st + HEAD.CLOCK]), clock("stream", own=True)),
            (rows + ROW.STAMP, clock("stream"))]


def add_sections(layout, entries):
    layout.add("stream", (entries + 1, N_ROW), _roles, share=PRIVATE,   # a core's L2's
               signature=[HEAD.CLOCK])   # not the rows, which reorder


def init_sections(layout, S, entries):
    table = layout.view(S, "stream")
    table[0, HEAD.SIZE] = entries
    table[1:, ROW.PAGE] = -1
