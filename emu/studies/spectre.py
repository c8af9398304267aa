"""Spectre v1 (bounds check bypass) gadgets and what a flush+reload attacker sees.

Each gadget is the classic victim of Kocher et al., "Spectre Attacks" (2019), §4:

    if (x < array1_size)                       BRANCH, predicted "in bounds"
        y = array2[array1[x] * 4096];          LOAD array1[x]; indexed LOAD of array2

run with an out-of-bounds x that reaches a secret byte. The attacker has flushed array2
(the probe array) and array1_size, so the bounds check waits for memory while the body
runs transiently. Afterwards the probe lines that became cached betray the secret.

Gadgets: "v1" (no barrier), "v1-lfence" (LFENCE after the check, barrier_nospec),
"v1-nospec" (x masked by array_index_nospec before the load).
The probe stride is 4096 bytes, as in the paper, so that no probe line shares a page (and
a prefetch stream) with another.

What a mitigation costs is measured apart from the attack (whose cycles are the attacker's
flushes and the bound's miss, the same for every gadget): `mitigation_cost` runs the gadget
called in bounds, warm, on a fresh machine, and reports cycles per call beside plain v1's.
"""
from emu.machine import Machine
from isa import Program

GADGETS = ("v1", "v1-lfence", "v1-nospec")
ARRAY1 = 0x100000          # array1: 16 bytes of public data
ARRAY1_SIZE = 16
BOUND = 0x200000           # the 8-byte variable array1_size
PROBE = 0x400000           # array2: 256 probe lines, 4096 bytes apart
STRIDE = 4096
SECRET_OFFSET = 0x3000     # x: the secret's distance from array1


COST_CALLS = 1000         # calls of the in-bounds loop of mitigation_cost
COST_INDICES = 4          # its x cycles over 0..3: with array1 and the bound, whose addresses
                          # are 4 KiB-aligned like the probe lines, 6 lines of one L1D set


def _check(gadget):
    if gadget not in GADGETS:
        raise ValueError(f"unknown gadget {gadget!r} (one of {', '.join(GADGETS)})")


def gadget_ops(p, gadget, x):
    """Emit one call of the gadget with index x: load the bound, check, body."""
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


def gadget_program(gadget, x=SECRET_OFFSET):
    """The attack: the victim touches its secret, the attacker flushes the probe array and
    the bound, then the victim runs the gadget with index x."""
    _check(gadget)
    p = Program()
    p.site("victim").load(ARRAY1 + x, 1)
    p.site("attacker_flush")
    for v in range(256):
        p.clflush(PROBE + v * STRIDE)
    p.clflush(BOUND).mfence()
    return gadget_ops(p.site("gadget"), gadget, x)


def _machine(profile, overrides, secret=0):
    m = Machine(profile, overrides)
    m.write(ARRAY1, bytes(range(1, ARRAY1_SIZE + 1)))
    m.write(ARRAY1 + SECRET_OFFSET, bytes([secret]))
    m.write(BOUND, ARRAY1_SIZE.to_bytes(8, "little"))
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
    difference: what barrier_nospec or array_index_nospec costs per call."""
    mine = _calls_cycles(gadget, profile, overrides, calls)
    v1 = mine if gadget == "v1" else _calls_cycles("v1", profile, overrides, calls)
    return {"calls": calls, "cycles_per_call": mine / calls, "v1_cycles_per_call": v1 / calls,
            "mitigation_cycles_per_call": (mine - v1) / calls}


def run_gadget(gadget, secret=0x5A, profile="skylake-ddr4", overrides=None):
    """Run a gadget on a fresh machine; returns a report of the transiently filled lines,
    what the attacker decodes from the probe array, the cycles of the run and of its
    gadget site, and the gadget's mitigation_cost (in-bounds cycles per call)."""
    m = _machine(profile, overrides, secret)
    r = m.run(gadget_program(gadget))
    lines = m.transient_lines()
    probe_hits = sorted((ln * 64 - PROBE) // STRIDE for ln in lines
                        if PROBE <= ln * 64 < PROBE + 256 * STRIDE and (ln * 64 - PROBE) % STRIDE == 0)
    return {"gadget": gadget, "profile": m.profile.name, "secret": secret, "cycles": r.cycles,
            "transient_lines": [ln * 64 for ln in lines], "probe_values": probe_hits,
            "leaked": secret in probe_hits,
            "gadget_cycles": m.stats()["sites"]["gadget"]["cycles"],
            **mitigation_cost(gadget, profile, overrides)}


def table(report):
    out = [f"gadget   {report['gadget']}  (profile {report['profile']})\n",
           f"secret   {report['secret']:#04x}\n",
           f"attack   {report['cycles']} cycles, {report['gadget_cycles']} in the gadget site\n",
           "lines filled only transiently (what flush+reload sees):\n"]
    out += [f"  {a:#x}\n" for a in report["transient_lines"]] or ["  none\n"]
    vals = ", ".join(f"{v:#04x}" for v in report["probe_values"]) or "none"
    out.append(f"probe values decoded: {vals}\n")
    out.append(f"secret leaked: {'YES' if report['leaked'] else 'no'}\n")
    out.append(f"mitigation cost, {report['calls']} calls in bounds (warm, the bound cached):\n"
               f"  {report['gadget']:<9} {report['cycles_per_call']:7.3f} cycles per call\n")
    if report["gadget"] != "v1":
        out.append(f"  {'v1':<9} {report['v1_cycles_per_call']:7.3f} cycles per call\n"
                   f"  cost      {report['mitigation_cycles_per_call']:+7.3f} cycles per call\n")
    return "".join(out)
