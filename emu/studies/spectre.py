"""Spectre v1 (bounds check bypass) gadgets and what a flush+reload attacker sees.

Each gadget is the classic victim of Kocher et al., "Spectre Attacks" (2019), §4:

    if (x < array1_size)                       BRANCH, predicted "in bounds"
        y = array2[array1[x] * 4096];          LOAD array1[x]; indexed LOAD of array2

run with an out-of-bounds x that reaches a secret byte. The attacker has flushed array2
(the probe array) and array1_size, so the bounds check waits for memory while the body
runs transiently. Afterwards the probe lines that became cached betray the secret.

Gadgets: "v1" (no barrier), "v1-lfence" (LFENCE after the check, barrier_nospec),
"v1-nospec" (x masked by array_index_nospec before the load): their branch is guessed "in
bounds" statically. The trained gadgets have a branch site (an ip) that the predictor
guesses; as in Kocher et al. §4 the victim is first called TRAIN_CALLS times in bounds,
which trains the site's counter to "in", then the attacker flushes and calls it out of
bounds. "v1-trained": the check compares x with array1_size as loaded (a value-dependent
bound); "v1-nested": the secret access sits behind a second check of x, against
array1_cap (also loaded, also flushed): the window stays open through it; "v1-loaded":
as v1-trained, but the body loads x again (READ_ONCE of the caller's request field, which
the caller has just written: cached) and indexes array1 with the loaded value;
"v1-nospec-loaded": the same with array_index_nospec on that loaded index (its mitigation
cost is beside v1-loaded's).
The probe stride is 4096 bytes, as in the paper, so that no probe line shares a page (and
a prefetch stream) with another.

What a mitigation costs is measured apart from the attack (whose cycles are the attacker's
flushes and the bound's miss, the same for every gadget): `mitigation_cost` runs the gadget
called in bounds, warm, on a fresh machine, and reports cycles per call beside plain v1's.
"""
from emu.machine import Machine
from isa import LOADED, Program

GADGETS = ("v1", "v1-lfence", "v1-nospec", "v1-trained", "v1-nested", "v1-loaded",
           "v1-nospec-loaded")
TRAINED = GADGETS[3:]      # a predicted branch site, trained before the attack
LOADED_X = ("v1-loaded", "v1-nospec-loaded")   # x read from memory, at XPTR
BASELINE = {"v1-nospec-loaded": "v1-loaded"}    # the unmitigated gadget a cost is beside
ARRAY1 = 0x100000          # array1: 16 bytes of public data
ARRAY1_SIZE = 16
BOUND = 0x200000           # the 8-byte variable array1_size
PROBE = 0x400000           # array2: 256 probe lines, 4096 bytes apart
STRIDE = 4096
SECRET_OFFSET = 0x3000     # x: the secret's distance from array1
CAP = 0x240000             # v1-nested: the 8-byte array1_cap (16), checked second
XPTR = 0x280000            # LOADED_X: the caller's x, 8-byte slot k holding k (k < 16)...
XPTR_ATTACK = ARRAY1_SIZE  # ... and this slot the attack's x, SECRET_OFFSET
IP_CHECK = 0x401000        # the branch sites of the trained gadgets (any distinct ips)
IP_INNER = 0x401040
TRAIN_CALLS = 16           # in-bounds calls before the attack: with h history bits (12 in
                           # the profiles) the attack's counter is trained from call h + 1 on
MAX_TRAIN_CALLS = 10_000   # what the command line accepts (a program of 5 ops a call)


COST_CALLS = 1000         # calls of the in-bounds loop of mitigation_cost
COST_INDICES = 4          # its x cycles over 0..3: with array1 and the bound, whose addresses
                          # are 4 KiB-aligned like the probe lines, 6 lines of one L1D set


def _check(gadget):
    if gadget not in GADGETS:
        raise ValueError(f"unknown gadget {gadget!r} (one of {', '.join(GADGETS)})")


def gadget_ops(p, gadget, x):
    """Emit one call of the gadget with index x: load the bound (or x), check, body."""
    if gadget in TRAINED:
        return _trained_ops(p, gadget, x)
    p.load(BOUND, 8)
    with p.guarded(x, ARRAY1_SIZE, predict_in=True, dependent=True):
        if gadget == "v1-lfence":
            p.lfence()
        if gadget == "v1-nospec":
            p.index_mask(x, ARRAY1_SIZE, dependent=True)   # its cmp reads the loaded bound
            p.load_masked(ARRAY1 + x, ARRAY1, 1)
        else:
            p.load(ARRAY1 + x, 1)
        p.load_indexed(PROBE, STRIDE, 1)
    return p


def _trained_ops(p, gadget, x):
    """A trained gadget's call: its checks at predicted branch sites, on loaded bounds; a
    gadget of LOADED_X loads x in the body from its slot (XPTR + 8 * x; the attack's:
    XPTR_ATTACK)."""
    p.load(BOUND, 8)
    with p.guarded(x, LOADED, ip=IP_CHECK):
        if gadget == "v1-nested":
            p.load(CAP, 8)
            with p.guarded(x, LOADED, ip=IP_INNER):
                p.load(ARRAY1 + x, 1).load_indexed(PROBE, STRIDE, 1)
        elif gadget in LOADED_X:
            nospec = gadget == "v1-nospec-loaded"
            p.load(XPTR + 8 * (x if x < ARRAY1_SIZE else XPTR_ATTACK), 8)
            if nospec:
                p.index_mask(LOADED, ARRAY1_SIZE)
            p.load_indexed(ARRAY1, 1, 1, masked=nospec).load_indexed(PROBE, STRIDE, 1)
        else:
            p.load(ARRAY1 + x, 1).load_indexed(PROBE, STRIDE, 1)
    return p


def gadget_program(gadget, x=SECRET_OFFSET, train_calls=TRAIN_CALLS):
    """The attack: the victim touches its secret (and, for a trained gadget, is called
    `train_calls` times in bounds), the attacker flushes the probe array and the values
    the checks load, then the victim runs the gadget with index x."""
    _check(gadget)
    p = Program()
    p.site("victim").load(ARRAY1 + x, 1)
    if gadget in LOADED_X:   # the caller writes its request: x's slot is cached
        p.load(XPTR + 8 * XPTR_ATTACK, 8)
    if gadget in TRAINED:
        p.site("training")
        for k in range(train_calls):
            gadget_ops(p, gadget, k % COST_INDICES)
    p.site("attacker_flush")
    for v in range(256):
        p.clflush(PROBE + v * STRIDE)
    p.clflush(BOUND)
    if gadget == "v1-nested":
        p.clflush(CAP)
    p.mfence()
    return gadget_ops(p.site("gadget"), gadget, x)


def _machine(profile, overrides, secret=0):
    m = Machine(profile, overrides)
    m.write(ARRAY1, bytes(range(1, ARRAY1_SIZE + 1)))
    m.write(ARRAY1 + SECRET_OFFSET, bytes([secret]))
    m.write(BOUND, ARRAY1_SIZE.to_bytes(8, "little"))
    m.write(CAP, ARRAY1_SIZE.to_bytes(8, "little"))
    m.write(XPTR, b"".join(k.to_bytes(8, "little") for k in range(COST_INDICES)))
    m.write(XPTR + 8 * XPTR_ATTACK, SECRET_OFFSET.to_bytes(8, "little"))
    return m


def calls_program(gadget, calls=COST_CALLS):
    """The common case: `calls` calls of the gadget in bounds (x = 0..COST_INDICES-1 in
    turn), one after another, in the site "gadget"."""
    _check(gadget)
    p = Program().site("gadget")
    for k in range(calls):
        gadget_ops(p, gadget, k % COST_INDICES)
    return p


def _calls_cycles(gadget, profile, overrides, calls):
    """The gadget site's cycles of `calls` in-bounds calls on a fresh machine with warm
    caches (the loop run once before; the bound cached, as on a hot path)."""
    m = _machine(profile, overrides)
    p = calls_program(gadget, calls)
    m.run(p)
    m.reset_stats()
    m.run(p)
    return m.stats()["sites"]["gadget"]["cycles"]


def cycles_per_call(gadget, profile="skylake-ddr4", overrides=None, calls=COST_CALLS):
    """Cycles per in-bounds call of the gadget, warm (see _calls_cycles)."""
    return _calls_cycles(gadget, profile, overrides, calls) / calls


def mitigation_cost(gadget, profile="skylake-ddr4", overrides=None, calls=COST_CALLS):
    """Cycles per in-bounds call of `gadget` and of plain v1 on the same profile, and the
    difference: what barrier_nospec or array_index_nospec costs per call. A gadget of
    BASELINE has its cost beside that gadget instead (`baseline`, its cycles per call)."""
    mine = _calls_cycles(gadget, profile, overrides, calls)
    v1 = mine if gadget == "v1" else _calls_cycles("v1", profile, overrides, calls)
    out = {"calls": calls, "cycles_per_call": mine / calls, "v1_cycles_per_call": v1 / calls,
           "mitigation_cycles_per_call": (mine - v1) / calls}
    if gadget in TRAINED:
        name = BASELINE.get(gadget, "v1")
        base = v1 if name == "v1" else _calls_cycles(name, profile, overrides, calls)
        out.update(baseline=name, baseline_cycles_per_call=base / calls,
                   mitigation_cycles_per_call=(mine - base) / calls)
    return out


def run_gadget(gadget, secret=0x5A, profile="skylake-ddr4", overrides=None,
               train_calls=TRAIN_CALLS):
    """Run a gadget on a fresh machine; returns a report of the transiently filled lines,
    what the attacker decodes from the probe array, the cycles of the run and of its
    gadget site, and the gadget's mitigation_cost (in-bounds cycles per call). A trained
    gadget is called `train_calls` times in bounds first (0: its predictor untrained)."""
    m = _machine(profile, overrides, secret)
    r = m.run(gadget_program(gadget, train_calls=train_calls))
    lines = m.transient_lines()
    probe_hits = sorted((ln * 64 - PROBE) // STRIDE for ln in lines
                        if PROBE <= ln * 64 < PROBE + 256 * STRIDE and (ln * 64 - PROBE) % STRIDE == 0)
    trained = {"train_calls": train_calls} if gadget in TRAINED else {}
    return {"gadget": gadget, "profile": m.profile.name, "secret": secret, "cycles": r.cycles,
            **trained, "transient_lines": [ln * 64 for ln in lines], "probe_values": probe_hits,
            "leaked": secret in probe_hits,
            "gadget_cycles": m.stats()["sites"]["gadget"]["cycles"],
            **mitigation_cost(gadget, profile, overrides)}


def table(report):
    out = [f"gadget   {report['gadget']}  (profile {report['profile']})\n",
           f"secret   {report['secret']:#04x}\n"]
    if "train_calls" in report:
        out.append(f"trained  {report['train_calls']} calls in bounds before the attack\n")
    out += [f"attack   {report['cycles']} cycles, {report['gadget_cycles']} in the gadget site\n",
            "lines filled only transiently (what flush+reload sees):\n"]
    out += [f"  {a:#x}\n" for a in report["transient_lines"]] or ["  none\n"]
    vals = ", ".join(f"{v:#04x}" for v in report["probe_values"]) or "none"
    out.append(f"probe values decoded: {vals}\n")
    out.append(f"secret leaked: {'YES' if report['leaked'] else 'no'}\n")
    base = report.get("baseline", "v1")
    w = max(9, len(report["gadget"]), len(base))
    out.append(f"mitigation cost, {report['calls']} calls in bounds (warm, the bound cached):\n"
               f"  {report['gadget']:<{w}} {report['cycles_per_call']:7.3f} cycles per call\n")
    if report["gadget"] != base:
        cycles = report.get("baseline_cycles_per_call", report["v1_cycles_per_call"])
        cost = report["mitigation_cycles_per_call"]
        out.append(f"  {base:<{w}} {cycles:7.3f} cycles per call\n"
                   f"  {'cost':<{w}} {cost:+7.3f} cycles per call\n")
    return "".join(out)
