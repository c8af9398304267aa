"""x86-64 user-access primitives, as emitted ops.

Follows arch/x86/include/asm/uaccess.h and uaccess_64.h (v4.16-v5.4 forms),
arch/x86/lib/getuser.S and putuser.S (v4.16-v5.9), arch/x86/lib/copy_user_64.S and
lib/usercopy.c, as read in docs/kernel-paths.md §4.2:

| primitive          | ops                                                              |
|--------------------|------------------------------------------------------------------|
| __get_user         | STAC; LFENCE (barrier_nospec); load [extable]; CLAC              |
| get_user           | cmp addr_limit + jae (BRANCH); sbb/and mask (INDEX_MASK);         |
|                    | STAC; masked load [extable]; CLAC                                |
| __put_user         | STAC; store [extable]; CLAC                                      |
| put_user           | cmp addr_limit + jae (BRANCH); STAC; store [extable]; CLAC       |
| raw_copy_from_user | constant 1/2/4/8/10/16 bytes: STAC; LFENCE; one or two moves;    |
|                    | CLAC. Otherwise copy_user_generic: STAC; short loop (< 64 bytes)  |
|                    | or REP MOVSB (ERMS); CLAC (see copy_user_generic for non-ERMS)   |
| raw_copy_to_user   | the same without the LFENCE                                      |
| __copy_from_user / __copy_to_user | raw_copy_* (no range check)                       |
| copy_from_user     | access_ok (BRANCH) then raw_copy_from_user; on a short copy the  |
|                    | kernel zeroes the uncopied tail of the destination               |
| copy_to_user       | access_ok (BRANCH) then raw_copy_to_user                         |

A fault on a user address does not raise: the access carries FLAG_EXTABLE, the core stops
it at the first faulting byte, and the Ret handle each function returns resolves, after
the run (RunResult.ret), to 0 or -EFAULT (get/put) or to the bytes not copied (copies), as
the kernel returns them. A range access_ok refuses is known when the ops are emitted.

Model departures: the moves of the constant-size and short copies, and copy_user_generic's
unrolled loop, are CAREFUL_COPY ops (8-byte moves, byte moves for the rest); addr_limit is
the constant TASK_SIZE_MAX (as from v5.10), so no load of it is emitted: in v4.16-v5.9,
access_ok, getuser.S and putuser.S read it from the task (`current_task`, a per-CPU load,
then the dependent `thread.addr_limit`), two loads per check that are not emitted here (an
open gap: docs/kernels.md, vhost-tx). copy_from_user's `const` models the inline form only:
in v5.0 copy_from_user calls the out-of-line _copy_from_user (lib/usercopy.c) unless the
architecture defines INLINE_COPY_FROM_USER, which x86-64 is believed not to (not re-read),
so there the size is never constant; callers on x86-64 should leave `const` False.
"""
from isa.ops import FLAG_DEPENDENT, FLAG_EXTABLE, FLAG_ZERO_TAIL
from isa.program import EFAULT, Ret

TASK_SIZE_MAX = (1 << 47) - 4096   # x86-64, 4-level paging
CONST_SIZES = (1, 2, 4, 8, 10, 16)  # raw_copy_*_user's constant-size switch
SHORT_STRING = 64                   # copy_user_enhanced_fast_string: below it, no rep movsb


def range_cmp(addr, size):
    """access_ok's compare as BRANCH operands: in range iff addr + size <= TASK_SIZE_MAX."""
    return min(addr + size, TASK_SIZE_MAX + 1), TASK_SIZE_MAX + 1


def _in_range(addr, size):
    return addr + size <= TASK_SIZE_MAX


def access_ok(p, addr, size):
    """Is [addr, addr+size) below the user address limit? Emits the compare and branch (here
    guarding nothing; the copies guard their access with it)."""
    p.branch(*range_cmp(addr, size), 0)
    return _in_range(addr, size)


def __get_user(p, addr, size=8, ahead=None):
    """STAC; LFENCE; load; CLAC. Returns Ret: 0 or -EFAULT. `ahead`: a function emitting
    the caller's later ops that need nothing of this access: an out-of-order core issues
    them once the LFENCE lets it, so they are emitted after it (vhost's translate_desc)."""
    p.stac().lfence()
    if ahead:
        ahead()
    i = len(p)
    p.load(addr, size, flags=FLAG_EXTABLE)
    p.clac()
    return Ret(i, "efault")


def get_user(p, addr, size=8):
    """__get_user_N: compare the last byte with the limit and branch to the error; turn the
    compare into a mask (sbb) and AND it into the address, so a mispredicted branch loads
    address 0, not the kernel's; STAC; load; CLAC. Returns Ret: 0 or -EFAULT."""
    last = min(addr + size - 1, TASK_SIZE_MAX)
    with p.guarded(last, TASK_SIZE_MAX):
        p.index_mask(last, TASK_SIZE_MAX)
        p.stac()
        i = len(p)
        p.load_masked(addr, 0, size, flags=FLAG_EXTABLE)
        p.clac()
    return Ret(i, "efault") if _in_range(addr, size) else Ret(None, "efault", -EFAULT)


def __put_user(p, addr, value, size=8):
    """STAC; store; CLAC. Returns Ret: 0 or -EFAULT."""
    p.stac()
    i = len(p)
    p.store(addr, size=size, value=value, flags=FLAG_EXTABLE)
    p.clac()
    return Ret(i, "efault")


def put_user(p, addr, value, size=8):
    """__put_user_N: compare with the limit and branch to the error; STAC; store; CLAC.
    Returns Ret: 0 or -EFAULT."""
    last = min(addr + size - 1, TASK_SIZE_MAX)
    with p.guarded(last, TASK_SIZE_MAX):
        r = __put_user(p, addr, value, size)
    return r if _in_range(addr, size) else Ret(None, "efault", -EFAULT)


def copy_user_generic(p, dst, src, n, erms=True, flags=FLAG_EXTABLE):
    """The alternative patched in for this CPU (alternative_call_2 in uaccess_64.h, v4.19-v5.7
    form, read as store id 41468099750): with ERMS, copy_user_enhanced_fast_string, a short
    loop below 64 bytes else REP MOVSB; with `erms` False, copy_user_generic_unrolled, the
    8-byte unrolled loop, which a CPU gets only without X86_FEATURE_REP_GOOD too (with
    REP_GOOD and no ERMS it is copy_user_generic_string, rep movsq then rep movsb, not
    modelled). STAC/CLAC around it. Returns the op index of the copy."""
    p.stac()
    i = len(p)
    if erms and n >= SHORT_STRING:
        p.rep_movsb(dst, src, n, flags=flags)
    else:
        p.careful_copy(dst, src, n, flags=flags)
    p.clac()
    return i


def _raw_copy(p, dst, src, n, const, erms, nospec, flags, ahead=None):
    if const and n in CONST_SIZES:
        p.stac()
        if nospec:
            p.lfence()
        if ahead:   # as in __get_user: ops an out-of-order core issues once the LFENCE lets it
            ahead()
        i = len(p)
        p.careful_copy(dst, src, n, flags=flags)
        p.clac()
        return Ret(i)
    return Ret(copy_user_generic(p, dst, src, n, erms, flags))


def raw_copy_from_user(p, dst, src, n, const=False, erms=True, flags=FLAG_EXTABLE,
                       dependent=False, ahead=None):
    """`const`: n is a compile-time constant (the 1/2/4/8/10/16-byte specialisation with
    its LFENCE). `dependent`: src came from the previous load's data. `ahead`: as in
    __get_user, emitted after the constant form's LFENCE (ignored otherwise). Returns Ret:
    bytes not copied."""
    return _raw_copy(p, dst, src, n, const, erms, True,
                     flags | (FLAG_DEPENDENT if dependent else 0), ahead)


def raw_copy_to_user(p, dst, src, n, const=False, erms=True):
    """As raw_copy_from_user, without the LFENCE. Returns Ret: bytes not copied."""
    return _raw_copy(p, dst, src, n, const, erms, False, FLAG_EXTABLE)


def __copy_from_user(p, dst, src, n, const=False, erms=True, dependent=False, ahead=None):
    """raw_copy_from_user without a range check. Returns Ret: bytes not copied."""
    return raw_copy_from_user(p, dst, src, n, const, erms, dependent=dependent, ahead=ahead)


def __copy_to_user(p, dst, src, n, const=False, erms=True):
    """raw_copy_to_user without a range check. Returns Ret: bytes not copied."""
    return raw_copy_to_user(p, dst, src, n, const, erms)


def copy_from_user(p, dst, src, n, const=False, erms=True, dependent=False):
    """access_ok, then raw_copy_from_user; what was not copied is zeroed in the kernel
    destination (_copy_from_user's memset). Returns Ret: bytes not copied."""
    with p.guarded(*range_cmp(src, n)):
        r = raw_copy_from_user(p, dst, src, n, const, erms, FLAG_EXTABLE | FLAG_ZERO_TAIL,
                               dependent)
    if _in_range(src, n):
        return r
    for off in range(0, n, 64):
        p.store(dst + off, bytes(min(64, n - off)))
    return Ret(None, value=n)


def copy_to_user(p, dst, src, n, const=False, erms=True):
    """access_ok, then raw_copy_to_user. Returns Ret: bytes not copied."""
    with p.guarded(*range_cmp(dst, n)):
        r = raw_copy_to_user(p, dst, src, n, const, erms)
    return r if _in_range(dst, n) else Ret(None, value=n)
