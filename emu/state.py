"""Core (pipeline-side) sections of the state buffer S and the timing-parameter table.

tp and sc are the first two sections of S (memmodel.layout), so their fields have fixed
absolute indices: compiled code reads S[T_ROB] or S[S_NOW]. Python converts the profile
(ns, GB/s) into cycles here, once, before any program runs.
"""
from memmodel.layout import N_HEADER
from memmodel.media import FP
from memmodel.memory import SNAPSHOTS
from memmodel.prefetch import PF_NONE, PREFETCHER_IDS

_T_FIELDS = ("upc", "rob", "sb", "lfb", "wc", "lfence", "sfence", "mfence", "clflush",
             "clflushopt", "clwb", "stac", "clac", "movnt", "rep_start", "rep_line_fp",
             "rep_nrfo", "pf_l1", "pf_l2", "stream_dist", "stream_deg", "inclusive",
             "functional", "smap", "node", "levels", "store_commit", "mispredict",
             "index_mask", "fault_fixup", "mce", "branch_resolve", "peer")
(T_UPC, T_ROB, T_SB, T_LFB, T_WC, T_LFENCE, T_SFENCE, T_MFENCE, T_CLFLUSH, T_CLFLUSHOPT,
 T_CLWB, T_STAC, T_CLAC, T_MOVNT, T_REP_START, T_REP_LINE_FP, T_REP_NRFO, T_PF_L1, T_PF_L2,
 T_STREAM_DIST, T_STREAM_DEG, T_INCLUSIVE, T_FUNCTIONAL, T_SMAP, T_NODE,
 T_LEVELS, T_STORE_COMMIT, T_MISPREDICT, T_INDEX_MASK, T_FAULT_FIXUP,
 T_MCE, T_BRANCH_RESOLVE, T_PEER) = range(N_HEADER, N_HEADER + len(_T_FIELDS))
N_TP = len(_T_FIELDS)

_S_FIELDS = ("now", "uop_frac", "uop_seq", "loads_max", "dep_ready", "rob_head", "rob_count",
             "sb_head", "sb_count", "sb_last", "clflush_chain", "flush_unit", "wb_pending",
             "site", "site_start", "ac", "kernel", "end", "ops", "rep_frac", "mem_stamp",
             "site_ops", "reg_lo", "reg_hi", "page_ok", "pq_count", "pend_head", "pend_count",
             "spec", "val", "mask", "poison_n", "fault", "fault_addr")
(S_NOW, S_UOP_FRAC, S_UOP_SEQ, S_LOADS_MAX, S_DEP_READY, S_ROB_HEAD, S_ROB_COUNT, S_SB_HEAD,
 S_SB_COUNT, S_SB_LAST, S_CLFLUSH_CHAIN, S_FLUSH_UNIT, S_WB_PENDING, S_SITE, S_SITE_START,
 S_AC, S_KERNEL, S_END, S_OPS, S_REP_FRAC, S_MEM_STAMP, S_SITE_OPS, S_REG_LO, S_REG_HI,
 S_PAGE_OK, S_PQ_COUNT, S_PEND_HEAD, S_PEND_COUNT, S_SPEC, S_VAL, S_MASK, S_POISON_N,
 S_FAULT, S_FAULT_ADDR) = range(N_HEADER + N_TP, N_HEADER + N_TP + len(_S_FIELDS))
N_SC = len(_S_FIELDS)


# wc[buffer, field]
WC_LINE, WC_MASK, WC_BUSY, WC_STAMP = range(4)

SITE_COUNTER_NAMES = ("cycles", "ops", "l1d_misses", "llc_misses", "media_reads", "media_writes")
(SC_CYCLES, SC_OPS, SC_L1_MISSES, SC_LLC_MISSES, SC_MEDIA_READS, SC_MEDIA_WRITES) = range(6)
N_SCOUNT = len(SITE_COUNTER_NAMES)
REGION_COUNTER_NAMES = ("line_reads", "line_writes")
RC_READS, RC_WRITES = range(2)
N_RCOUNT = 2

# pq[entry, field]: write-backs of this op on their way to the persistence domain
PQ_LINE, PQ_MASK, PQ_KIND = range(3)
PQ_ENTRIES = 256
PK_NOW, PK_FENCED = 0, 1   # durable at once / at the next SFENCE or MFENCE
# pend[entry, field]: write-backs that become durable at the next fence; their bytes are
# snapshot in the reserved frames (memmodel.memory.SNAPSHOTS)
PE_LINE, PE_MASK = range(2)

# Run status (out[0]); out[1] = op index, out[2] = address, out[3] = detail.
ST_OK, ST_NEED_PAGES, ST_FAULT_UNMAPPED, ST_FAULT_SMAP, ST_FAULT_PRIVILEGE, ST_FAULT_MCE = range(6)


def add_sections(layout, values, n_regions, n_sites):
    core = values["core"]
    layout.add("tp", N_TP)
    layout.add("sc", N_SC)
    layout.add("rob_seq", core["rob_entries"])
    layout.add("rob_done", core["rob_entries"])
    layout.add("sb", core["store_buffer_entries"])
    layout.add("lfb", core["lfb_entries"])
    layout.add("wc", (core["wc_buffers"], 4))
    layout.add("site_ctr", (n_sites, N_SCOUNT))
    layout.add("region_ctr", (n_regions, N_RCOUNT))
    layout.add("pq", (PQ_ENTRIES, 3))
    layout.add("pend", (SNAPSHOTS, 2))


def init_sections(layout, S, values, functional, smap, node):
    core, instr, pf = values["core"], values["instr"], values["prefetch"]
    levels = list(values["cache"].values())
    if core["wc_buffers"] > 64:
        raise ValueError("at most 64 write-combining buffers are modelled")
    for lvl in levels[2:]:
        if lvl["prefetcher"] != "none":
            raise ValueError("prefetchers are modelled at l1d and l2 only")
    tp = {
        T_UPC: core["uops_per_cycle"], T_ROB: core["rob_entries"],
        T_SB: core["store_buffer_entries"], T_LFB: core["lfb_entries"], T_WC: core["wc_buffers"],
        T_LFENCE: instr["lfence_cycles"], T_SFENCE: instr["sfence_cycles"],
        T_MFENCE: instr["mfence_cycles"], T_CLFLUSH: instr["clflush_cycles"],
        T_CLFLUSHOPT: instr["clflushopt_cycles"], T_CLWB: instr["clwb_cycles"],
        T_STAC: instr["stac_cycles"], T_CLAC: instr["clac_cycles"], T_MOVNT: instr["movnt_cycles"],
        T_REP_START: instr["rep_movsb_startup_cycles"],
        T_REP_LINE_FP: int(round(64 / instr["rep_movsb_bytes_per_cycle"] * FP)),
        T_REP_NRFO: instr["rep_movsb_nrfo_threshold_bytes"],
        T_PF_L1: PREFETCHER_IDS.index(levels[0]["prefetcher"]),
        T_PF_L2: PREFETCHER_IDS.index(levels[1]["prefetcher"]) if len(levels) > 1 else PF_NONE,
        T_STREAM_DIST: pf["stream_distance_lines"], T_STREAM_DEG: pf["stream_degree_lines"],
        T_INCLUSIVE: 1 if levels[-1].get("inclusive") else 0,
        T_FUNCTIONAL: 1 if functional else 0, T_SMAP: 1 if smap else 0, T_NODE: node,
        T_LEVELS: len(levels), T_STORE_COMMIT: core["store_commit_cycles"],
        T_MISPREDICT: instr["branch_mispredict_cycles"], T_INDEX_MASK: instr["index_mask_cycles"],
        T_FAULT_FIXUP: instr["fault_fixup_cycles"], T_MCE: instr["machine_check_cycles"],
        T_BRANCH_RESOLVE: instr["branch_resolve_cycles"],
        T_PEER: int(round(levels[-1]["peer_hitm_ns"] * core["freq_ghz"])),
    }
    for k, v in tp.items():
        S[k] = v
    S[S_PAGE_OK] = -1
    S[S_KERNEL] = 1
    S[S_MASK] = -1
    layout.view(S, "wc")[:, WC_LINE] = -1
