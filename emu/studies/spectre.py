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


def gadget_program(gadget, x=SECRET_OFFSET):
    """The attack: the victim touches its secret, the attacker flushes the probe array and
    the bound, then the victim runs the gadget with index x."""
    if gadget not in GADGETS:
        raise ValueError(f"unknown gadget {gadget!r} (one of {', '.join(GADGETS)})")
    p = Program()
    p.site("victim").load(ARRAY1 + x, 1)
    p.site("attacker_flush")
    for v in range(256):
        p.clflush(PROBE + v * STRIDE)
    p.clflush(BOUND).mfence()
    p.site("gadget").load(BOUND, 8)
    with p.guarded(x, ARRAY1_SIZE, predict_in=True, dependent=True):
        if gadget == "v1-lfence":
            p.lfence()
        if gadget == "v1-nospec":
            p.index_mask(x, ARRAY1_SIZE)
            p.load_masked(ARRAY1 + x, ARRAY1, 1)
        else:
            p.load(ARRAY1 + x, 1)
        p.load_indexed(PROBE, STRIDE, 1)
    return p


def run_gadget(gadget, secret=0x5A, profile="skylake-ddr4", overrides=None):
    """Run a gadget on a fresh machine; returns a report of the transiently filled lines and
    what the attacker decodes from the probe array."""
    m = Machine(profile, overrides)
    m.write(ARRAY1, bytes(range(1, ARRAY1_SIZE + 1)))
    m.write(ARRAY1 + SECRET_OFFSET, bytes([secret]))
    m.write(BOUND, ARRAY1_SIZE.to_bytes(8, "little"))
    r = m.run(gadget_program(gadget))
    lines = m.transient_lines()
    probe_hits = sorted((ln * 64 - PROBE) // STRIDE for ln in lines
                        if PROBE <= ln * 64 < PROBE + 256 * STRIDE and (ln * 64 - PROBE) % STRIDE == 0)
    return {"gadget": gadget, "profile": m.profile.name, "secret": secret, "cycles": r.cycles,
            "transient_lines": [ln * 64 for ln in lines], "probe_values": probe_hits,
            "leaked": secret in probe_hits}


def table(report):
    out = [f"gadget   {report['gadget']}  (profile {report['profile']}, cycles {report['cycles']})\n",
           f"secret   {report['secret']:#04x}\n",
           "lines filled only transiently (what flush+reload sees):\n"]
    out += [f"  {a:#x}\n" for a in report["transient_lines"]] or ["  none\n"]
    vals = ", ".join(f"{v:#04x}" for v in report["probe_values"]) or "none"
    out.append(f"probe values decoded: {vals}\n")
    out.append(f"secret leaked: {'YES' if report['leaked'] else 'no'}\n")
    return "".join(out)
