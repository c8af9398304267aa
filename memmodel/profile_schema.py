"""The profile schema: every section's keys, their types and ranges (memmodel.profile loads
and checks a profile against it). Numbers are (type, sourced, minimum, maximum), other values
(type, sourced, allowed names or None); sourced numbers need value + source or assumption.
The media kinds' own keys (each kind module's PROFILE_KEYS, memmodel.media.KINDS) and the
studies' declared costs (emu.studies.costs) are specs of the same form, with the types spelt
as these strings. Every number has a finite range: the maxima are generous for real hardware
and keep what is derived from a value (cycles, FP occupancies, the sizes of the state
buffer's sections) well inside int64 and of bounded size.
"""
from memmodel.media import KIND_IDS, PERSISTENCE
from memmodel.policies import POLICY_IDS
from memmodel.prefetch import PREFETCHER_IDS

CACHE_LEVELS = ("l1d", "l2", "llc")
PRIVILEGE = ("user", "supervisor")
CPU_FEATURES = ("erms", "fsrm", "clflushopt", "clwb", "avx2", "avx512f", "smap")


NUM = "num"
INT = "int"
STR = "str"
BOOL = "bool"
LIST = "list"   # of strings from an allowed set
NAMES = "names"  # one name, "none", "a,b" or a list of names: a tuple of names ("none": ())

# Times: at most 1e6 ns or 1e6 cycles per event, at up to 10 GHz: a latency is at most 1e7
# cycles. Bandwidths from 1 MB/s to 10 TB/s: a channel occupancy in FP units (memmodel.media
# occ_fp) is then 1 to ~1e12 per access. The FP clocks count cycles x 1024, so a run can
# emulate 2**63 / 1024 cycles (ten days at 10 GHz) whatever the values.
NS_RANGE = (0, 10**6)
CYCLES_RANGE = (0, 10**6)
GBPS_RANGE = (0.001, 10**4)

# Entry counts size state sections (two ROB arrays, the store buffer, the line fill buffers)
# and are scanned per access; real cores have a few hundred ROB entries and ~10-16 LFBs.
CORE = {
    "freq_ghz": (NUM, True, 0.1, 10),
    "rob_entries": (INT, True, 1, 4096),
    "store_buffer_entries": (INT, True, 1, 4096),
    "load_buffer_entries": (INT, True, 1, 4096),
    "lfb_entries": (INT, True, 1, 256),
    "wc_buffers": (INT, True, 1, 64),   # memmodel.tables.MAX_WC_BUFFERS
    "uops_per_cycle": (INT, True, 1, 64),
    "retire_uops_per_cycle": (INT, True, 1, 64),
    "store_commit_cycles": (INT, True, 1, CYCLES_RANGE[1]),
    # younger stores whose RFO goes out before an older flush's write-back (0: none ahead)
    "rfo_ahead_stores": (INT, True, 0, 4096),
    # the branch predictor of branches with an ip (emu._speculation): 2-bit counters, a
    # state section scanned never (one indexed per branch); history bits 0: per site only
    "branch_predictor_entries": (INT, True, 1, 1 << 16),
    "branch_history_bits": (INT, True, 0, 16),
    "branch_counter_init": (INT, True, 0, 3),
    # CPUID features that pick code paths (PMDK's flush/memcpy choice, rep movsb, SMAP)
    "cpu_features": (LIST, False, CPU_FEATURES),
    # the cores a socket has, each a copy of the core's state (Machine(cores=N) up to it);
    # optional: a profile without it has one core
    "cores_per_socket": (INT, True, 1, 1024),
    # the sockets the machine has (Machine(sockets=S) up to it), each with its cores and
    # its LLC; optional: a profile without it has one. The one home of a machine's socket
    # count (sockets() below)
    "sockets": (INT, True, 1, 8),
}
# A level of 1 GiB (more than any LLC a core sees) is 16 Mi blocks, 512 MiB of the four
# per-block sections of memmodel.cache; a set is scanned way by way.
CACHE = {
    "size_bytes": (INT, True, 64, 1 << 30),
    "ways": (INT, True, 1, 1024),
    "hit_cycles": (INT, True, 1, CYCLES_RANGE[1]),
    "policy": (STR, False, POLICY_IDS),
    "prefetcher": (NAMES, False, PREFETCHER_IDS),   # the level runs each of them
}
# remote_*: a line sent from the other socket's caches (modified there: a remote HITM;
# clean); optional, needed by Machine(sockets=2) only
LLC_EXTRA = {"inclusive": (BOOL, False, None), "peer_hitm_ns": (NUM, True, *NS_RANGE),
              "peer_hit_ns": (NUM, True, *NS_RANGE), "remote_hitm_ns": (NUM, True, *NS_RANGE),
              "remote_hit_ns": (NUM, True, *NS_RANGE),
              # the snoop filter's extended directory (memmodel._snoopfilter): its ways a
              # set, the sets the level's; optional (none: the directory is exact), and only
              # for a non-inclusive level (an inclusive one is its own snoop filter)
              "directory_ways": (INT, True, 1, 64)}
LLC_REMOTE_KEYS = ("remote_hitm_ns", "remote_hit_ns")
LLC_OPTIONAL_KEYS = LLC_REMOTE_KEYS + ("directory_ways",)
# the L2's outstanding misses to the uncore, demand and prefetch (Intel's superqueue): an
# entry count that sizes a state section, scanned per L2 miss
L2_EXTRA = {"mshr_entries": (INT, True, 1, 256)}
INSTR = {
    "lfence_cycles": (INT, True, *CYCLES_RANGE),
    # from a draining LFENCE's end to a younger op's execution: the younger uops issue only
    # once it has retired, then go through allocation and the scheduler
    "lfence_refill_cycles": (INT, True, *CYCLES_RANGE),
    "sfence_cycles": (INT, True, *CYCLES_RANGE),
    "mfence_cycles": (INT, True, *CYCLES_RANGE),
    "clflush_cycles": (INT, True, *CYCLES_RANGE),
    "clflushopt_cycles": (INT, True, *CYCLES_RANGE),
    "clwb_cycles": (INT, True, *CYCLES_RANGE),
    "stac_cycles": (INT, True, *CYCLES_RANGE),
    "clac_cycles": (INT, True, *CYCLES_RANGE),
    "movnt_cycles": (INT, True, *CYCLES_RANGE),
    "rep_movsb_startup_cycles": (INT, True, *CYCLES_RANGE),
    "rep_movsb_bytes_per_cycle": (NUM, True, 1, 1024),
    "rep_movsb_nrfo_threshold_bytes": (INT, True, 0, 1 << 30),
    "branch_mispredict_cycles": (INT, True, *CYCLES_RANGE),
    "branch_resolve_cycles": (INT, True, *CYCLES_RANGE),
    "index_mask_cycles": (INT, True, *CYCLES_RANGE),
    "div64_cycles": (INT, True, *CYCLES_RANGE),
    "fault_fixup_cycles": (INT, True, *CYCLES_RANGE),
    "machine_check_cycles": (INT, True, *CYCLES_RANGE),
    "lock_rmw_cycles": (INT, True, *CYCLES_RANGE),
    "pause_cycles": (INT, True, *CYCLES_RANGE),   # a spin-wait's PAUSE (a WAIT's failed check)
    # spin_lock_irqsave / spin_unlock_irqrestore (v6.4): PUSHF; POP, CLI; STI, no POPF
    "pushf_pop_cycles": (INT, True, *CYCLES_RANGE),
    "cli_cycles": (INT, True, *CYCLES_RANGE),
    "sti_cycles": (INT, True, *CYCLES_RANGE),
    "stac_clac_serialize": (INT, True, 0, 1),   # 1: STAC/CLAC wait like LFENCE
}
# The stream prefetcher stays within a 4 KiB page (64 lines) and scans its table per miss;
# so does the IP-stride prefetcher per load it trains on.
PREFETCH = {
    "stream_distance_lines": (INT, True, 1, 64),
    "stream_degree_lines": (INT, True, 1, 64),
    "stream_entries": (INT, True, 1, 256),
    "ip_stride_entries": (INT, True, 1, 256),
}
# remote_latency_ns: what a remote read adds (and a remote NT line's acknowledgement: the
# same request there and reply back); remote_hold_ns: what a remote line adds to the time a
# write-combining buffer is held (memmodel._wc)
NUMA = {
    "remote_latency_ns": (NUM, True, *NS_RANGE),
    "remote_hold_ns": (NUM, True, *NS_RANGE),
    "remote_bw_gbps": (NUM, True, *GBPS_RANGE),
}
# Each channel is a row of the chan section with a slot per WPQ entry (and its kind's own
# state: memmodel.media's ROW).
MEDIA = {
    "kind": (STR, False, KIND_IDS),
    "read_latency_ns": (NUM, True, *NS_RANGE),
    "write_accept_ns": (NUM, True, *NS_RANGE),
    # a WC buffer's line: how long the buffer is held, when SFENCE learns it was taken
    # (memmodel._wc)
    "wc_hold_ns": (NUM, True, *NS_RANGE),
    "wc_ack_ns": (NUM, True, *NS_RANGE),
    "read_bw_gbps": (NUM, True, *GBPS_RANGE),
    "write_bw_gbps": (NUM, True, *GBPS_RANGE),
    "channels": (INT, True, 1, 64),
    "interleave_bytes": (INT, True, 64, 1 << 30),
    "wpq_entries": (INT, True, 1, 4096),
    "persistence": (STR, False, PERSISTENCE),
    "reads_wait_for_writes": (BOOL, False, None),
}
# [software]: work the emulator does not model, declared per operation (docs/design.md
# "Honesty rules"), which the studies emit as WORK ops, the same for every variant. The keys
# are the studies' (each scenario declares those it reads: emu.studies.costs, which checks
# them); here only the table's shape: each entry a sourced number of ns.
SOFTWARE_VALUE = (NUM, True, *NS_RANGE)
# Regions lie in the physical address space (isa.ops.PHYS_LIMIT, whose package loads numba:
# tests/test_bad_values.py checks the two agree). Functional memory has a directory entry
# per 2 MiB of every region (memmodel.memory): MAPPED_BYTES in all (64 TiB, more than any
# one machine's memory) is 32 Mi entries, 256 MiB. Nodes: Linux's MAX_NUMNODES is 1024.
PHYS_LIMIT = 1 << 52
MAPPED_BYTES = 1 << 46
REGION = {
    "name": (STR, False, None),
    "base": (INT, False, 0, PHYS_LIMIT - 4096),
    "size_bytes": (INT, False, 4096, MAPPED_BYTES),
    "media": (STR, False, None),
    "node": (INT, False, 0, 1023),
    "privilege": (STR, False, PRIVILEGE),
}
TOP = ("profile", "core", "cache", "instr", "prefetch", "numa", "software", "media", "region")
