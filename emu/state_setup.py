"""The core's sections (emu.state) declared with their roles and set from the profile's
[core] and [instr] tables: Python only, out of the compiled modules."""
import numpy as np

from emu.state import EH, N_SCOUNT, PS, SC, SC_ROLES, TP, TS
from memmodel.layout import COUNTER, EXACT, HEAD, PRIVATE, clock, ring
from memmodel.media import FP


def add_sections(layout, values, n_sites):
    core = values["core"]
    # all the core's own: its parameters, scalars, window, store buffer, sites' counters and
    # branch predictor
    layout.add("tp", len(TP), EXACT, share=PRIVATE)
    layout.add("sc", len(SC), SC_ROLES, share=PRIVATE, signature=True)
    # the ROB's slots: one ring of four sections, on their clocks
    for name, c in (("rob_seq", "uops"), ("rob_lseq", "loads"), ("rob_done", "cycles"),
                    ("rob_ops", None)):
        layout.add(name, core["rob_entries"], ring(SC.ROB_HEAD, c), share=PRIVATE)
    layout.add("sb", core["store_buffer_entries"], ring(SC.SB_HEAD, "cycles"), share=PRIVATE)
    layout.add("site_ctr", (n_sites, N_SCOUNT), COUNTER, share=PRIVATE)
    # the branch predictor's 2-bit counters (emu._speculation); model state, as the caches'
    # contents: reset_stats() leaves them, state_hash() covers them
    layout.add("bpred", core["branch_predictor_entries"], EXACT, share=PRIVATE)
    # the stores not yet in functional memory (emu.state TS): several cores only. A slot a
    # store buffer entry each, and two more: a store that crosses a line takes two entries
    # in the timing ring, one here, and the ring fills before its entries' drain times pass
    slots = core["store_buffer_entries"] + 2 if layout.cores > 1 else 0
    layout.add("tso", len(TS) + slots * len(PS) if slots else 0, _tso_roles, share=PRIVATE)


def _tso_roles(layout, S):
    """The tso section's head, and its slots' drain cycles (-1 in an empty slot)."""
    size = int(np.prod(layout.shapes["tso"]))
    if not size:
        return []
    off = layout.offsets["tso"]
    slots = np.arange(off + len(TS), off + size).reshape(-1, len(PS))
    return [(np.array([off + TS.HEAD]), HEAD), (slots[:, PS.DRAIN], clock("cycles", none=True))]


def init_sections(S, values, smap, cores=1):
    core, instr = values["core"], values["instr"]
    tp = {
        TP.UPC: core["uops_per_cycle"], TP.RETIRE: core["retire_uops_per_cycle"],
        TP.ROB: core["rob_entries"],
        TP.LB: core["load_buffer_entries"],
        TP.SB: core["store_buffer_entries"],
        TP.LFENCE: instr["lfence_cycles"], TP.SFENCE: instr["sfence_cycles"],
        TP.MFENCE: instr["mfence_cycles"], TP.CLFLUSH: instr["clflush_cycles"],
        TP.CLFLUSHOPT: instr["clflushopt_cycles"], TP.CLWB: instr["clwb_cycles"],
        TP.STAC: instr["stac_cycles"], TP.CLAC: instr["clac_cycles"],
        TP.MOVNT: instr["movnt_cycles"],
        TP.REP_START: instr["rep_movsb_startup_cycles"],
        TP.REP_LINE_FP: int(round(64 / instr["rep_movsb_bytes_per_cycle"] * FP)),
        TP.REP_NRFO: instr["rep_movsb_nrfo_threshold_bytes"],
        TP.SMAP: 1 if smap else 0, TP.STORE_COMMIT: core["store_commit_cycles"],
        TP.MISPREDICT: instr["branch_mispredict_cycles"], TP.INDEX_MASK: instr["index_mask_cycles"],
        TP.FAULT_FIXUP: instr["fault_fixup_cycles"], TP.MCE: instr["machine_check_cycles"],
        TP.BRANCH_RESOLVE: instr["branch_resolve_cycles"],
        TP.LOCK_RMW: instr["lock_rmw_cycles"], TP.STAC_SERIAL: instr["stac_clac_serialize"],
        TP.RFO_AHEAD: core["rfo_ahead_stores"], TP.LFENCE_REFILL: instr["lfence_refill_cycles"],
        TP.BP_ENTRIES: core["branch_predictor_entries"],
        TP.BP_HISTORY: core["branch_history_bits"],
    }
    for k, v in tp.items():
        S[k] = v
    S[SC.PAGE_OK] = -1
    S[SC.KERNEL] = 1
    S[SC.MASK] = -1
    S[S[EH.BPRED]:S[EH.BPRED] + core["branch_predictor_entries"]] = core["branch_counter_init"]
    if cores > 1:
        t = S[EH.TSO]
        slots = core["store_buffer_entries"] + 2
        S[t + TS.SLOTS], S[t + TS.PAUSE] = slots, instr["pause_cycles"]
        S[t + len(TS) + PS.DRAIN:t + len(TS) + slots * len(PS):len(PS)] = -1
