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

Each media kind is declared by the module of this package that times it (every module not
named _*, found, not listed): as literals, KINDS (the kinds it times), PROFILE_KEYS (the
keys they add to a profile's [media.NAME] table, as memmodel.profile's (type, sourced,
minimum, maximum) specs) and PARAMS (its own parameter columns, space-separated: after the
shared ones of MP, at own_params(PARAMS)); then ROW (its per-channel state, an OwnRow, or
None), REPORTS (which of MEDIA_COUNTER_NAMES its media report in stats()), init_params(),
read() and write() (as dram.py describes) and `KIND = KIND_IDS.index(NAME)`. This module
reads the literals from the modules' source, not by importing them: it imports nothing
compiled, so that memmodel.profile takes the kinds' names and keys without numba; the kinds'
modules are imported when a machine is built. A kind's id, its index in KIND_IDS, is what
compiled code dispatches on: its one branch in each of memmodel.media._dispatch's read and
write. PERSISTENCE names the persistence domains; a profile's [media.NAME] `kind` and
`persistence` are names here. The sections' set-up: memmodel.sections.media.
"""
import ast
from collections import namedtuple
from importlib import import_module
from pathlib import Path

from memmodel.layout import fields

FP = 1024
_LITERALS = ("KINDS", "PROFILE_KEYS", "PARAMS")


def _declared(path):
    """{name: value} of the literals (_LITERALS) at the top of the kind module at `path`."""
    out = {}
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                getattr(node.targets[0], "id", None) in _LITERALS:
            out[node.targets[0].id] = ast.literal_eval(node.value)
    missing = [name for name in _LITERALS if name not in out]
    if missing:
        raise ValueError(f"{path}: a media kind's module declares {', '.join(missing)} "
                         f"(a literal each, at its top)")
    return out


# module name -> its literals, for the kind modules in the order of their names
_MODULES = {path.stem: _declared(path) for path in sorted(Path(__file__).parent.glob("[!_]*.py"))}
# kind -> (the module that times it, the profile keys it adds)
KINDS = {kind: (stem, declared["PROFILE_KEYS"])
         for stem, declared in _MODULES.items() for kind in declared["KINDS"]}
KIND_IDS = tuple(KINDS)
PERSISTENCE = ("none", "adr", "eadr")

# mp[media, field]: the columns every kind has (latencies in cycles, occupancies in FP units;
# UNIT_BYTES: what the media moves per access, the XPLine on Optane), then those of the
# media's kind (its PARAMS, own_params): a row is as wide as the most a kind declares
MP = fields("MP", "KIND READ_LAT ACCEPT_LAT HOLD_LAT ACK_LAT RD_OCC_FP WR_OCC_FP INTAKE_OCC_FP "
            "CHANNELS CH_INV INTERLEAVE CHAN0 WPQ UNIT_BYTES SHARED_BUSY PERSIST")
N_MPARAMS = len(MP) + max(len(d["PARAMS"].split()) for d in _MODULES.values())


def own_params(names):
    """The fields of a kind's own parameter columns `names` (its PARAMS) in its media's mp row."""
    return fields("OWN", names, start=len(MP))


# mcnt[media, counter]. READS/WRITES: 64 B lines at the controller; MEDIA_LINE_*: the
# media's own accesses, an XPLine on Optane, a 64 B line (the same count as READS/WRITES) on
# a DRAM-like kind.
MC = fields("MC", "READS WRITES PARTIAL_WRITES MEDIA_LINE_READS MEDIA_LINE_WRITES "
            "READ_MODIFY_WRITES XPBUFFER_HITS WPQ_FULL_STALL_CYCLES READ_QUEUE_CYCLES")
# stats()'s names of MC, one name per quantity with its unit (docs/machine.md, "Counters"):
# the compiled code's enum keeps its names, these are the API's; each kind's module says
# which of them its media report (REPORTS).
MEDIA_COUNTER_NAMES = ("line_reads", "line_writes", "partial_writes", "xpline_reads",
                       "xpline_writes", "read_modify_writes", "xpbuffer_hits",
                       "wpq_full_stall_cycles", "read_queue_cycles")
N_MCOUNTERS = len(MC)

# mglob[]: interconnect (a read's extra latency, a WC buffer's extra hold) and the shape of a
# chan row: its width, where the kinds' own words start
G = fields("G", "LINK_BUSY_FP LINK_OCC_FP LINK_LAT REMOTE_HOLD CHAN_STRIDE OWN0")
# chan[channel, ...]: RD_BUSY, WR_BUSY, MEDIA_BUSY (FP: the read side, the write side, and
# Optane's media behind its XPBuffer, here because the channels' background streams take it
# too), WPQ_HEAD, the background streams (other cores' traffic, memmodel.media._channels.background: the FP time
# of the next read and write arrival, -1 for none, and their periods in FP units, 0 for none),
# WPQ slots from WPQ0 (the cycle each is free again), then from G.OWN0 the channel's state of
# its media's kind (its ROW). A row has room for the most WPQ slots and kind's words of the
# profile's media.
CH = fields("CH", "RD_BUSY WR_BUSY MEDIA_BUSY WPQ_HEAD BG_RD_NEXT BG_RD_PERIOD BG_WR_NEXT "
            "BG_WR_PERIOD WPQ0")
# A kind's per-channel state (its ROW): a table of as many entries as its media's profile key
# `entries` says, stored field by field (`fields`, an IntEnum: field f of entry s is word
# f x entries + s from G.OWN0); `roles`: {field: Role} (memmodel.layout; the rest EXACT);
# `empty`: {field: its value in an empty entry} (the rest 0).
OwnRow = namedtuple("OwnRow", "fields entries roles empty")


def module(kind):
    """The module that times media of `kind`."""
    return import_module(f"{__name__}.{KINDS[kind][0]}")


def counter_names(kind):
    """(index in mcnt, name) of the counters media of `kind` reports in stats()."""
    reports = module(kind).REPORTS
    return tuple((i, n) for i, n in enumerate(MEDIA_COUNTER_NAMES) if n in reports)


def kind_keys(kind):
    """The keys media of `kind` add to a profile's [media.NAME] table ({} for an unknown
    kind, which the profile rejects by its `kind` key)."""
    return KINDS[kind][1] if kind in KIND_IDS else {}


def cycles(ns, freq_ghz):
    return int(round(ns * freq_ghz))


def occ_fp(nbytes, gbps, freq_ghz):
    """Channel occupancy in FP units for moving `nbytes` at `gbps` (GB/s = bytes/ns)."""
    return max(1, int(round(nbytes * freq_ghz / gbps * FP)))
