"""Machine-check-safe copies, as emitted ops.

Follows arch/x86/lib/copy_mc.c and copy_mc_64.S (v5.18+ form, EX_TYPE_DEFAULT_MCE_SAFE),
as read in docs/kernel-paths.md §3:

    copy_mc_to_kernel(dst, src, len):
        fragile static key on  -> copy_mc_fragile (8-byte careful loop)
        CPU has ERMS           -> copy_mc_enhanced_fast_string (one rep movsb)
        otherwise              -> memcpy, no recovery possible
    copy_mc_to_user: the same choice between STAC and CLAC (no LFENCE); last resort
        copy_user_generic.

The careful and fast-string copies carry FLAG_MCSAFE | FLAG_EXTABLE: a load that consumes
poison ends the copy at the poisoned line and the Ret each function returns resolves to
the bytes not copied, the data before the line intact. A plain copy (the memcpy fallback)
that consumes poison stops the run with MachineCheck, as an unrecoverable #MC would.

`copy_mc_generic_bug`: the proposed version docs/scenarios.md §5 describes, which with the
fragile key on ran copy_mc_fragile and then also the generic (fast-string) copy.

The memcpy fallback (no fragile key, no ERMS) is emitted as memcpy_orig's unrolled loop
(CAREFUL_COPY). In a ~v6.1 memcpy_64.S (store id 1020620356) the ALTERNATIVE_2 runs
`rep movsq` + `rep movsb` instead on REP_GOOD CPUs; that v5.18 has the same alternative was
not confirmed from source, so the unrolled loop stays, as an assumption. No study's variant
takes this branch (their CPUs have ERMS).

Model departures: copy_mc_fragile's source-alignment byte loop and its byte tail are part of
the CAREFUL_COPY op (8-byte moves, byte moves for the rest); poison is line-granular, so
its bytes-not-copied equals the kernel's 8-byte-word count for an aligned source.
"""
from dataclasses import dataclass

from isa.ops import FLAG_EXTABLE, FLAG_MCSAFE
from isa.program import Ret
from kernels.uaccess import copy_user_generic

MC_SAFE = FLAG_MCSAFE | FLAG_EXTABLE


@dataclass(frozen=True)
class CopyMc:
    """The platform's choice: the fragile static key (Optane / advanced-RAS servers), ERMS,
    and whether the double-copy bug version is built."""
    fragile_key: bool = True
    erms: bool = True
    bug: bool = False


def copy_mc_fragile(p, dst, src, n):
    """The careful 8-byte loop. Returns Ret: bytes not copied."""
    i = len(p)
    p.careful_copy(dst, src, n, flags=MC_SAFE)
    return Ret(i)


def copy_mc_enhanced_fast_string(p, dst, src, n):
    """One rep movsb with an MCE-safe exception-table entry. Returns Ret: bytes not copied."""
    i = len(p)
    p.rep_movsb(dst, src, n, flags=MC_SAFE)
    return Ret(i)


def _copy_mc(p, dst, src, n, fragile_key, erms, bug):
    if fragile_key:
        r = copy_mc_fragile(p, dst, src, n)
        if bug:
            copy_mc_enhanced_fast_string(p, dst, src, n)
        return r
    return copy_mc_enhanced_fast_string(p, dst, src, n)


def copy_mc_to_kernel(p, dst, src, n, fragile_key=True, erms=True, bug=False):
    """Returns Ret: bytes not copied (always 0 on the memcpy fallback, which cannot
    recover). `bug`: the double-copy version (fragile, then fast string)."""
    if fragile_key or erms:
        return _copy_mc(p, dst, src, n, fragile_key, erms, bug)
    p.careful_copy(dst, src, n)   # memcpy_orig: the unrolled 8-byte loop
    return Ret(None, value=0)


def copy_mc_to_user(p, dst, src, n, fragile_key=True, erms=True, bug=False):
    """STAC; the copy_mc choice; CLAC. Falls back to copy_user_generic (user faults
    handled, poison not). Returns Ret: bytes not copied."""
    if not (fragile_key or erms):
        return Ret(copy_user_generic(p, dst, src, n, erms))
    p.stac()
    r = _copy_mc(p, dst, src, n, fragile_key, erms, bug)
    p.clac()
    return r
