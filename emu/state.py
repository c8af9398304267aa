"""Core (pipeline-side) sections of the state buffer S and the timing-parameter table.

emu's block of S starts where memmodel's ends (memmodel.layout): the header slots of its
variable sections (EH), then tp and sc at fixed absolute offsets, so compiled code reads
S[TP.ROB] or S[SC.NOW]. Python converts the profile (ns, GB/s) into cycles here, once,
before any program runs.
"""
from memmodel.layout import MM, Block, fields
from memmodel.media import FP
from memmodel.memory import SNAPSHOTS
from memmodel.prefetch import PF_NONE, PREFETCHER_IDS

EH = fields("EH", "ROB_SEQ ROB_DONE SB LFB WC SITE_CTR REGION_CTR PQ PEND", start=MM.end)
# tp: timing parameters and machine switches (cycles unless named otherwise)
_TP = ("UPC ROB SB LFB WC LFENCE SFENCE MFENCE CLFLUSH CLFLUSHOPT CLWB STAC CLAC MOVNT "
       "REP_START REP_LINE_FP REP_NRFO PF_L1 PF_L2 STREAM_DIST STREAM_DEG INCLUSIVE FUNCTIONAL "
       "SMAP NODE LEVELS STORE_COMMIT MISPREDICT INDEX_MASK FAULT_FIXUP MCE BRANCH_RESOLVE PEER")
# sc: the pipeline's scalars (issue cycle, ring heads and counts, the current site, ...)
_SC = ("NOW UOP_FRAC UOP_SEQ LOADS_MAX DEP_READY ROB_HEAD ROB_COUNT SB_HEAD SB_COUNT SB_LAST "
       "CLFLUSH_CHAIN FLUSH_UNIT WB_PENDING SITE SITE_START AC KERNEL END OPS REP_FRAC MEM_STAMP "
       "SITE_OPS REG_LO REG_HI PAGE_OK PQ_COUNT PEND_HEAD PEND_COUNT SPEC VAL MASK POISON_N "
       "FAULT FAULT_ADDR")
EMU = Block(EH, (("tp", len(_TP.split())), ("sc", len(_SC.split()))))
TP = fields("TP", _TP, start=EMU.at("tp"))
SC = fields("SC", _SC, start=EMU.at("sc"))
BLOCKS = (MM, EMU)

# wc[buffer, field]
WC = fields("WC", "LINE MASK BUSY STAMP")
N_WC = len(WC)

# site_ctr[site, counter] and region_ctr[region, counter]; stats() names them in lower case
SCTR = fields("SCTR", "CYCLES OPS L1D_MISSES LLC_MISSES MEDIA_READS MEDIA_WRITES")
SITE_COUNTER_NAMES = tuple(c.name.lower() for c in SCTR)
N_SCOUNT = len(SCTR)
RCTR = fields("RCTR", "LINE_READS LINE_WRITES")
REGION_COUNTER_NAMES = tuple(c.name.lower() for c in RCTR)
N_RCOUNT = len(RCTR)

# pq[entry, field]: write-backs of this op on their way to the persistence domain
PQ = fields("PQ", "LINE MASK KIND")
N_PQ = len(PQ)
PQ_ENTRIES = 256
PK_NOW, PK_FENCED = 0, 1   # durable at once / at the next SFENCE or MFENCE
# pend[entry, field]: write-backs that become durable at the next fence; their bytes are
# snapshot in the reserved frames (memmodel.memory.SNAPSHOTS)
PE = fields("PE", "LINE MASK")
N_PE = len(PE)

# Run status (out[0]); out[1] = op index, out[2] = address, out[3] = detail.
ST_OK, ST_NEED_PAGES, ST_FAULT_UNMAPPED, ST_FAULT_SMAP, ST_FAULT_PRIVILEGE, ST_FAULT_MCE = range(6)


def add_sections(layout, values, n_regions, n_sites):
    core = values["core"]
    layout.add("tp", len(TP))
    layout.add("sc", len(SC))
    layout.add("rob_seq", core["rob_entries"])
    layout.add("rob_done", core["rob_entries"])
    layout.add("sb", core["store_buffer_entries"])
    layout.add("lfb", core["lfb_entries"])
    layout.add("wc", (core["wc_buffers"], N_WC))
    layout.add("site_ctr", (n_sites, N_SCOUNT))
    layout.add("region_ctr", (n_regions, N_RCOUNT))
    layout.add("pq", (PQ_ENTRIES, N_PQ))
    layout.add("pend", (SNAPSHOTS, N_PE))


def init_sections(layout, S, values, functional, smap, node):
    core, instr, pf = values["core"], values["instr"], values["prefetch"]
    levels = list(values["cache"].values())
    if core["wc_buffers"] > 64:
        raise ValueError("at most 64 write-combining buffers are modelled")
    for lvl in levels[2:]:
        if lvl["prefetcher"] != "none":
            raise ValueError("prefetchers are modelled at l1d and l2 only")
    tp = {
        TP.UPC: core["uops_per_cycle"], TP.ROB: core["rob_entries"],
        TP.SB: core["store_buffer_entries"], TP.LFB: core["lfb_entries"], TP.WC: core["wc_buffers"],
        TP.LFENCE: instr["lfence_cycles"], TP.SFENCE: instr["sfence_cycles"],
        TP.MFENCE: instr["mfence_cycles"], TP.CLFLUSH: instr["clflush_cycles"],
        TP.CLFLUSHOPT: instr["clflushopt_cycles"], TP.CLWB: instr["clwb_cycles"],
        TP.STAC: instr["stac_cycles"], TP.CLAC: instr["clac_cycles"], TP.MOVNT: instr["movnt_cycles"],
        TP.REP_START: instr["rep_movsb_startup_cycles"],
        TP.REP_LINE_FP: int(round(64 / instr["rep_movsb_bytes_per_cycle"] * FP)),
        TP.REP_NRFO: instr["rep_movsb_nrfo_threshold_bytes"],
        TP.PF_L1: PREFETCHER_IDS.index(levels[0]["prefetcher"]),
        TP.PF_L2: PREFETCHER_IDS.index(levels[1]["prefetcher"]) if len(levels) > 1 else PF_NONE,
        TP.STREAM_DIST: pf["stream_distance_lines"], TP.STREAM_DEG: pf["stream_degree_lines"],
        TP.INCLUSIVE: 1 if levels[-1].get("inclusive") else 0,
        TP.FUNCTIONAL: 1 if functional else 0, TP.SMAP: 1 if smap else 0, TP.NODE: node,
        TP.LEVELS: len(levels), TP.STORE_COMMIT: core["store_commit_cycles"],
        TP.MISPREDICT: instr["branch_mispredict_cycles"], TP.INDEX_MASK: instr["index_mask_cycles"],
        TP.FAULT_FIXUP: instr["fault_fixup_cycles"], TP.MCE: instr["machine_check_cycles"],
        TP.BRANCH_RESOLVE: instr["branch_resolve_cycles"],
        TP.PEER: int(round(levels[-1]["peer_hitm_ns"] * core["freq_ghz"])),
    }
    for k, v in tp.items():
        S[k] = v
    S[SC.PAGE_OK] = -1
    S[SC.KERNEL] = 1
    S[SC.MASK] = -1
    layout.view(S, "wc")[:, WC.LINE] = -1
