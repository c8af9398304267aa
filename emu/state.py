"""Core (pipeline-side) sections of the state buffer S and the timing-parameter table.

emu's block of S starts where memmodel's ends (memmodel.layout): the header slots of its
variable sections (EH), then tp and sc at fixed absolute offsets, so compiled code reads
S[TP.ROB] or S[SC.NOW]. Python converts the profile (ns, GB/s) into cycles once, before
any program runs (emu.state_setup).
"""
from memmodel.layout import EXACT, HEAD, MM, PRIVATE, TOTAL, Block, clock, fields, mark

EH = fields("EH", "ROB_SEQ ROB_LSEQ ROB_DONE ROB_OPS SB SITE_CTR BPRED TSO", start=MM.end)
# tp: timing parameters and switches of the core (cycles unless named otherwise)
_TP = ("UPC RETIRE ROB LB SB LFENCE SFENCE MFENCE CLFLUSH CLFLUSHOPT CLWB STAC CLAC MOVNT REP_START "
       "REP_LINE_FP REP_NRFO SMAP STORE_COMMIT MISPREDICT INDEX_MASK FAULT_FIXUP MCE "
       "BRANCH_RESOLVE LOCK_RMW STAC_SERIAL RFO_AHEAD LFENCE_REFILL BP_ENTRIES BP_HISTORY")
# sc: the pipeline's scalars (issue cycle, ring heads and counts, the current site and the
# memory side's event totals at its start, ..., the branch predictor's global history)
_SC = ("NOW UOP_FRAC UOP_SEQ LSEQ DONE_MAX WORK_END DEP_READY ROB_HEAD ROB_COUNT ROB_SLOTS "
       "SB_HEAD SB_COUNT SB_LAST CLFLUSH_CHAIN FLUSH_UNIT SITE SITE_START AC KERNEL END OPS "
       "REP_FRAC SITE_OPS REG_LO REG_HI PAGE_OK VAL MASK POISON_N FAULT FAULT_ADDR "
       "SITE_L1D_MISSES SITE_LLC_MISSES SITE_MEDIA_READS SITE_MEDIA_WRITES "
       "SITE_L1D_STORE_MISSES SITE_LLC_STORE_MISSES SITE_L1D_PENDING SITE_LLC_PENDING "
       "SITE_LOADS SITE_STORES BP_HIST")
EMU = Block(EH, (("tp", len(_TP.split()), PRIVATE), ("sc", len(_SC.split()), PRIVATE)))
TP = fields("TP", _TP, start=EMU.at("tp"))
SC = fields("SC", _SC, start=EMU.at("sc"))
# the roles of sc's words (memmodel.layout)
SC_ROLES = {
    **dict.fromkeys((SC.UOP_FRAC, SC.ROB_COUNT, SC.ROB_SLOTS, SC.SB_COUNT, SC.SITE, SC.AC,
                     SC.KERNEL, SC.REP_FRAC, SC.REG_LO, SC.REG_HI, SC.PAGE_OK, SC.VAL, SC.MASK,
                     SC.POISON_N, SC.FAULT, SC.FAULT_ADDR, SC.BP_HIST), EXACT),
    SC.NOW: clock("cycles", own=True),
    **dict.fromkeys((SC.DONE_MAX, SC.WORK_END, SC.DEP_READY, SC.SB_LAST,
                     SC.CLFLUSH_CHAIN, SC.FLUSH_UNIT, SC.SITE_START, SC.END), clock("cycles")),
    SC.UOP_SEQ: clock("uops", own=True), SC.LSEQ: clock("loads", own=True),
    SC.ROB_HEAD: HEAD, SC.SB_HEAD: HEAD,
    # the ops, the sites' marks of them and of the memory side's totals (memmodel.layout.MS)
    **dict.fromkeys((SC.OPS, SC.SITE_OPS, SC.SITE_L1D_MISSES, SC.SITE_LLC_MISSES,
                     SC.SITE_MEDIA_READS, SC.SITE_MEDIA_WRITES, SC.SITE_L1D_STORE_MISSES,
                     SC.SITE_LLC_STORE_MISSES, SC.SITE_L1D_PENDING, SC.SITE_LLC_PENDING),
                    TOTAL),
    SC.SITE_LOADS: mark("ccnt"), SC.SITE_STORES: mark("ccnt"),   # of the L1D's counters
}
BLOCKS = (MM, EMU)

# site_ctr[site, counter]; stats() names them in lower case. The ops, the L1D's load and
# store accesses (as its level counters count them: a copy's every word), the memory side's
# events (the misses, of which stores; 64 B lines read and written at the media; cycles with
# a demand L1D / LLC miss outstanding, counted to the site that issued it, as perf's
# CYCLE_ACTIVITY), then the stall causes: the
# cycles dispatch waited, within the site, for a ROB or load buffer entry, a store buffer
# entry, a line fill buffer, a load's data, a fence or locked op (an SFENCE's wait for the
# write-backs and NT stores before it included), a store buffer full of flushes, STAC/CLAC, the
# declared WORK, a mispredicted branch, a fault's fixup or machine check, and at the site's
# end for its ops to complete (RETIRE_WAIT). The causes partition the site's cycles with
# the time spent issuing (the rest: emu.profiler's "busy").
_SCTR_EVENTS = ("CYCLES OPS LOADS STORES L1D_MISSES LLC_MISSES MEDIA_READS MEDIA_WRITES "
                "L1D_STORE_MISSES LLC_STORE_MISSES L1D_PENDING LLC_PENDING")
_SCTR_STALLS = "WINDOW STORE_BUFFER FILL_BUFFER DEPENDENCY FENCE FLUSH SMAP WORK MISPREDICT FAULT " \
    "RETIRE_WAIT"
SCTR = fields("SCTR", f"{_SCTR_EVENTS} {_SCTR_STALLS}")
# stats()'s names of SCTR: MEDIA_READS/MEDIA_WRITES are 64 B lines, named as the media's and
# the regions' counts of them (docs/machine.md, "Counters"); the compiled code's enum keeps
# its names.
_RENAMED = {"media_reads": "line_reads", "media_writes": "line_writes"}
SITE_COUNTER_NAMES = tuple(_RENAMED.get(c.name.lower(), c.name.lower()) for c in SCTR)
STALL_CAUSES = tuple(n.lower() for n in _SCTR_STALLS.split())
N_SCOUNT = len(SCTR)

# tso: with several cores, the stores a core issued that functional memory does not hold yet
# (x86-TSO's store buffer, emu._tso): its head, count and slots, the PAUSE instruction's
# cycles (a WAIT's failed check), then the slots, oldest first from HEAD, each a store:
# when it drains (leaves the store buffer: emu._pipeline.sb_push's cycle), its address and
# size, its data's offset in the program's blob or -1, and its immediate bytes. Empty with one
# core: its stores write memory at once.
TS = fields("TS", "HEAD COUNT SLOTS PAUSE", start=0)
PS = fields("PS", "DRAIN ADDR SIZE DATA IMM", start=0)
N_TS, N_PS = len(TS), len(PS)

# Run status (out[0]); out[1] = op index, out[2] = address, out[3] = detail. ST_WAIT: op
# out[1] (a WAIT, or a spinning LOCK CMPXCHG) found out[3] at out[2], not what it waits for,
# and has not run: the core spins (with several cores), or no other core can change it.
ST_OK, ST_NEED_PAGES, ST_FAULT_UNMAPPED, ST_FAULT_SMAP, ST_FAULT_PRIVILEGE, ST_FAULT_MCE, \
    ST_WAIT = range(7)
