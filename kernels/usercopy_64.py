"""x86-64 flush-cache copies into pmem, as emitted ops.

Follows arch/x86/lib/usercopy_64.c (v4.17-v4.20, torvalds/linux blob 02101c45, store id
3282823089; unchanged in substance later) and arch/x86/lib/copy_user_64.S
`__copy_user_nocache` (the v4.x-v5.4 `ENTRY/ENDPROC` form, read in the
kernelorg-mirror/linux_kernel_git_djbw_linux copy, store id 68562421345), as in
docs/kernel-paths.md §2. `clwb()` is the kernel's alternative: CLWB, else
CLFLUSHOPT, else CLFLUSH, chosen by the CPU (`Flush.for_profile`).

Model departures: the 8-byte MOVNTI loops are NT_COPY ops (8-byte loads and MOVNTs, line
by line through the WC buffers); the byte-wise cached edges are CAREFUL_COPY ops.
Faults inside the copy (the fixup path) are not modelled here.
"""
from isa.ops import Op


def clwb_op(profile_values):
    """The instruction the kernel's clwb() alternative patches in on this CPU."""
    feats = set(profile_values["core"]["cpu_features"])
    return Op.CLWB if "clwb" in feats else Op.CLFLUSHOPT if "clflushopt" in feats else Op.CLFLUSH


def clean_cache_range(p, flush, addr, size):
    """Write back every line of [addr, addr+size) (no fence)."""
    if size > 0:
        p.flush_range(addr, size, flush)


def __copy_user_nocache(p, dst, src, size):
    """STAC; cached bytes up to 8-byte alignment of dst; 8-byte MOVNTI for the 64-byte blocks
    and remaining words; one 4-byte MOVNTI if 4 bytes are left and dst is 4-aligned; cached
    bytes for the rest; CLAC, then SFENCE (`.L_finish_copy`: ASM_CLAC; sfence; ret). Returns
    the bytes not copied (0)."""
    p.stac()
    if size >= 8:
        head = (-dst) % 8
        if head:
            p.careful_copy(dst, src, head)
            dst, src, size = dst + head, src + head, size - head
        words = size - size % 8
        if words:
            p.nt_copy(dst, src, words)
            dst, src, size = dst + words, src + words, size - words
    if size >= 4 and dst % 4 == 0:
        p.nt_copy(dst, src, 4)
        dst, src, size = dst + 4, src + 4, size - 4
    if size:
        p.careful_copy(dst, src, size)
    p.clac()
    p.sfence()
    return 0


def __copy_user_flushcache(p, flush, dst, usrc, size):
    """User -> pmem: __copy_user_nocache, then write back what went through the cache. The
    only SFENCE runs before these write-backs: they stay unordered until a later fence.
    Below 8 bytes the kernel writes back only the line holding dst (`clean_cache_range(dst,
    1)`): a short copy that crosses a line leaves the second line's bytes in the cache."""
    rc = __copy_user_nocache(p, dst, usrc, size)
    if size < 8:
        if not (dst % 4 == 0 and size == 4):
            clean_cache_range(p, flush, dst, 1)
    else:
        head_end = dst
        if dst % 8:
            clean_cache_range(p, flush, dst, 1)
            head_end = (dst + 63) // 64 * 64
        if size > head_end - dst and (size - (head_end - dst)) % 8:
            clean_cache_range(p, flush, dst + size - 1, 1)
    return rc


def __memcpy_flushcache(p, flush, dst, src, size):
    """Kernel -> pmem (no SMAP window, no fence): cached bytes up to 8-byte alignment written
    back; 8-byte MOVNTI (4 at a time while 32 bytes remain, then single); one 4-byte MOVNTI;
    cached bytes for the rest, written back."""
    head = (-dst) % 8
    if head:
        n = min(head, size)
        p.careful_copy(dst, src, n)
        clean_cache_range(p, flush, dst, n)
        dst, src, size = dst + n, src + n, size - n
    words = size - size % 8
    if words:
        p.nt_copy(dst, src, words)
        dst, src, size = dst + words, src + words, size - words
    if size >= 4:
        p.nt_copy(dst, src, 4)
        dst, src, size = dst + 4, src + 4, size - 4
    if size:
        p.careful_copy(dst, src, size)
        clean_cache_range(p, flush, dst, size)
