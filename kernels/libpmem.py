"""libpmem (PMDK) persist paths, as emitted ops.

Follows pmem/pmdk 52b9545b (Nov 2025): src/libpmem/pmem.c, src/libpmem2/x86_64/init.c,
flush.h, memcpy_memset.h and memcpy/memcpy_nt_avx.c (docs/kernel-paths.md §6).
Start-up choice (`pmem_cpuinfo_to_funcs`): the flush is CLWB if the CPU has it, else
CLFLUSHOPT, else CLFLUSH; the fence is SFENCE; the memcpy engine is AVX unless AVX-512F is
both present and enabled (PMEM_AVX512F=1); the non-temporal threshold is 256 bytes; on
Intel the "WC workaround" fences every 12 lines (768 bytes) of non-temporal stores. With
eADR (`pmem_has_auto_flush`) the `_eadr` variants skip cache flushing.

Not re-read at 52b9545b: the PMDK copies reachable (init.c of 2020, blob b1966e45, and 2022)
enable AVX-512F by default (off only with PMEM_AVX512F=0) and, on an eADR region, copy with
temporal stores at every size (`pmem_memmove_nodrain_eadr`); the module's opt-in AVX-512F
and NT-above-256-bytes-under-eADR follow the snapshot as first read and are unverified
against those (no study runs this module).

Model departures: the AVX engine's 32-byte VMOVNTDQs are emitted as NT_COPY (8-byte
load/MOVNT uops: the same lines reach the same WC buffers); PMDK's short cached moves of
the edges are CAREFUL_COPY (8-byte moves, byte moves for the rest).
"""
from dataclasses import dataclass

from isa.ops import Op

MOVNT_THRESHOLD = 256      # Movnt_threshold, PMEM_MOVNT_THRESHOLD
PERF_BARRIER_SIZE = 768    # 12 lines: the WC workaround's fence distance
NT_TAIL_SIZES = (4, 8, 16, 32)


@dataclass(frozen=True)
class Pmem:
    """What pmem_cpuinfo_to_funcs chose for a CPU (and whether the region has eADR)."""
    flush: Op
    avx512f: bool = False
    wc_workaround: bool = True
    eadr: bool = False

    @classmethod
    def for_profile(cls, profile_values, avx512f_enabled=False, eadr=False):
        feats = set(profile_values["core"]["cpu_features"])
        flush = Op.CLWB if "clwb" in feats else Op.CLFLUSHOPT if "clflushopt" in feats else Op.CLFLUSH
        return cls(flush=flush, avx512f=avx512f_enabled and "avx512f" in feats, eadr=eadr)


def pmem_flush(p, lib, addr, n):
    """One flush per 64-byte line overlapping [addr, addr+n); no fence (nothing with eADR)."""
    if n > 0 and not lib.eadr:
        p.flush_range(addr, n, lib.flush)


def pmem_drain(p, lib):
    """SFENCE: the flushes and non-temporal stores before it reach the persistence domain."""
    p.sfence()


def pmem_persist(p, lib, addr, n):
    pmem_flush(p, lib, addr, n)
    pmem_drain(p, lib)


def _cached_copy(p, lib, dst, src, n):
    """A short cached move written back line by line (PMDK's temporal edges)."""
    if n > 0:
        p.careful_copy(dst, src, n)
        pmem_flush(p, lib, dst, n)


def memmove_nodrain(p, lib, dst, src, n):
    """pmem_memmove_nodrain(flags 0): temporal below the threshold, else non-temporal."""
    if n < MOVNT_THRESHOLD:
        _cached_copy(p, lib, dst, src, n)
        return
    head = (-dst) % 64
    _cached_copy(p, lib, dst, src, head)
    dst, src, n = dst + head, src + head, n - head
    split = lib.wc_workaround and not lib.avx512f
    while n >= PERF_BARRIER_SIZE:
        p.nt_copy(dst, src, PERF_BARRIER_SIZE)
        dst, src, n = dst + PERF_BARRIER_SIZE, src + PERF_BARRIER_SIZE, n - PERF_BARRIER_SIZE
        if split and n > 0:
            p.sfence()
    whole = n - n % 64
    if whole:
        p.nt_copy(dst, src, whole)  # blocks of 8/4/2/1 lines
        dst, src, n = dst + whole, src + whole, n - whole
    if n in NT_TAIL_SIZES:
        p.nt_copy(dst, src, n)
    else:
        _cached_copy(p, lib, dst, src, n)
    if lib.flush == Op.CLFLUSH:
        p.sfence()  # CLFLUSH builds fence right after the NT stores


def pmem_memcpy_persist(p, lib, dst, src, n):
    """memmove_nodrain + pmem_drain."""
    memmove_nodrain(p, lib, dst, src, n)
    pmem_drain(p, lib)


def memcpy_then_persist(p, lib, dst, src, n):
    """An ordinary memcpy (rep movsb on ERMS CPUs) followed by pmem_persist."""
    p.rep_movsb(dst, src, n)
    pmem_persist(p, lib, dst, n)
