"""Scenario `dmapool-test`: DMA pool allocator metadata placement (mm/dmapool_test.c).

For each of the test's six pools, `--rounds` (default 100, the test's NR_TESTS) rounds of:
allocate `blocks` blocks, then free them in the same order; the metric is the time of all
rounds in microseconds, per row, as the test prints it (docs/scenarios.md §3). Variants
(kernels/dmapool.py): `orig`, the v6.4+ allocator with its free-list links inside the free
DMA blocks; `list`, RFC v2 with the block metadata in a per-page array and `dma_pool_free`
walking the page list; `maple`, as `list` but finding the block in a maple tree. The non-memory
work of each call is a declared cost, the same in every variant ([software] dma_pool_call_ns);
page allocation in the first round is not modelled. docs/scenarios.md gives no published figure:
the emulator predicts.
"""
from emu import profiler
from emu.machine import Machine
from emu.studies.costs import NS
from emu.studies.options import Option
from emu.studies.progress import progress
from isa import Program
from isa.event_rows import OpMemory
from kernels import dmapool
from memmodel.profile import ProfileError

NAME = "dmapool-test"
DEFAULT_PROFILE = "skylake-ddr4"
VARIANTS = dmapool.VARIANTS
METRIC = "time_us"
# the non-memory work of a dma_pool_alloc / dma_pool_free call, declared (emu.studies.costs)
COSTS = {"dma_pool_call_ns": NS}
SENSITIVE = ("software.dma_pool_call_ns", "instr.div64_cycles", "instr.lock_rmw_cycles",
             "instr.pushf_pop_cycles", "instr.cli_cycles", "instr.sti_cycles", "core.freq_ghz",
             "instr.branch_mispredict_cycles", "core.branch_history_bits")
# the walks' data-dependent exits are guessed by a predictor no source describes
READINGS = {
    "per-site counters": ("one 2-bit counter per branch site, no global history (Smith's "
                          "bimodal scheme): the walks' exits guessed worse",
                          {"core.branch_history_bits": 0}),
    "longer history": ("16 bits of global history over 65536 counters, nearer the "
                       "hardware's long histories: the walks' exits guessed better",
                       {"core.branch_predictor_entries": 65536, "core.branch_history_bits": 16}),
}
MAX_ROUNDS = 10 * dmapool.NR_TESTS   # about a second a round for all rows and variants


OPTIONS = (
    Option("rounds", int, dmapool.NR_TESTS, f"rounds of allocate-all, free-all per pool, at "
                                            f"most {MAX_ROUNDS} (default: %(default)s, the "
                                            f"test's NR_TESTS)", low=1, high=MAX_ROUNDS),
    Option("fast_forward", bool, True, "run every round (the same result: rounds the machine "
                                       "shows to repeat are otherwise applied at once, "
                                       "Machine.run_rounds)"),
)


def kernel_base(m):
    """Start of the kernel memory the pools live in: the first supervisor DRAM region of
    node 0 large enough for a test row."""
    for r in sorted(m.regions.values(), key=lambda r: r["base"]):
        if r["privilege"] == "supervisor" and r["node"] == 0 and r["size_bytes"] >= \
                dmapool.SPAN_BYTES and \
                m.profile.values["media"][r["media"]]["persistence"] == "none":
            return r["base"]
    raise ProfileError(f"profile {m.profile.name!r} has no supervisor DRAM region on node 0 of "
                       f"{dmapool.SPAN_BYTES >> 20} MiB or more for the pools")


def run_row(profile, overrides, variant, parms, rounds, fast_forward=True, memory=None):
    """Emulated microseconds of `rounds` rounds of one row, and the pool's page count;
    `memory`: an OpMemory the row's op arrays are taken from."""
    profiler.label(variant)
    m = Machine(profile, overrides or None)
    pool = dmapool.DmaPool(variant, *parms, kernel_base(m))
    blocks = dmapool.nr_blocks(parms[0])
    costs = dmapool.Costs.of(m.profile.values)
    m.run(dmapool.dma_pool_create(Program(), pool))
    # the allocator's state before a round decides its ops (the machine plays no part in
    # them), so the rounds cycle from the first state that comes again (the free list
    # alternates): order holds each round's program, up to that state's second round. A
    # state with fewer pages than the pool has now never comes again (pages only grow):
    # its round runs at once and its program is dropped (the first round's, which adds them)
    programs, order = {}, []
    cycles = 0   # summed whole, so that either way gives the same float
    for _ in range(rounds):
        key = (pool.pages, tuple(pool.free))
        if key in programs:
            break
        while order and order[0][0] < pool.pages:
            cycles += m.run(programs.pop(order.pop(0))).cycles
            rounds -= 1
        if memory and not order:
            memory.reset()   # no program of the row is alive: its buffer is free again
        programs[key] = dmapool.dmapool_test_alloc(pool, blocks, costs, memory)
        order.append(key)
    # the rounds after the cycle's first one run as one repeated sequence, fast-forwarded
    # where the machine repeats too (the state before it is then one the sequence's last
    # program left)
    if len(order) < rounds:
        first = len(order) + 1
        start = order.index(key) + 1
        order.append(key)
        order += [order[start - 1 + (i - start + 1) % (first - start)]
                  for i in range(first, rounds)]
    else:
        first = start = len(order)   # no cycle within the rounds: each runs alone
    period = first - start
    repeats = (len(order) - start) // period if fast_forward and period else 0
    for k in order[:start]:
        cycles += m.run(programs[k]).cycles
    if repeats:
        cycles += m.run_rounds([programs[k] for k in order[start:first]], repeats).cycles
    for k in order[start + repeats * period:]:
        cycles += m.run(programs[k]).cycles
    return cycles / (m.freq_ghz * 1e3), pool.pages


def run(options):
    profile = options.profile or DEFAULT_PROFILE
    overrides = dict(options.overrides)
    variants = {v: {METRIC: {}} for v in VARIANTS}
    rows, memory = {}, OpMemory()
    for parms in progress(dmapool.PARMS, NAME, options.progress):
        size, align, _ = parms
        key = dmapool.row_key(size, align, dmapool.nr_blocks(size))
        for v in VARIANTS:
            variants[v][METRIC][key], pages = run_row(profile, overrides, v, parms,
                                                      options.rounds, options.fast_forward,
                                                      memory)
            rows.setdefault(key, {})[f"pages_{v}"] = pages
    return {"scenario": NAME, "profile": profile, "rounds": options.rounds, "rows": rows,
            "variants": variants}


def table(res):
    lines = [f"dmapool-test on {res['profile']}: {res['rounds']} rounds per pool, time in us",
             "published: none in docs/scenarios.md; the emulator predicts",
             f"{'row':<34}{'pages':>6}" + "".join(f"{v:>12}" for v in res["variants"])
             + f"{'list/orig':>11}{'maple/orig':>11}"]
    for key, row in res["rows"].items():
        t = {v: d[METRIC][key] for v, d in res["variants"].items()}
        lines.append(f"{key:<34}{row['pages_list']:>6}" + "".join(f"{x:>12.1f}" for x in t.values())
                     + f"{t['list'] / t['orig']:>11.2f}{t['maple'] / t['orig']:>11.2f}")
    return "\n".join(lines) + "\n"
