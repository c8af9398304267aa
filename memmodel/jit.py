"""The one decorator for compiled code.

`_nrt=False`: compiled code never allocates (every array comes from Python), so numba's
reference counting is not needed; with it, each call that passes the state NamedTuples
pays an atomic incref/decref per array (measured: ~300 ns vs ~30 ns per call).
"""
import hashlib
from pathlib import Path

from numba import config, njit, uint64


def _drop_stale_cache():
    """numba keys a cached function on its own file's timestamp only, but the core inlines
    and calls code from every compiled module: after a change to any of them (say
    memmodel/cache.py alone) it would load a stale core. So the cached objects are dropped
    whenever the sources of the compiled modules change."""
    root = Path(__file__).resolve().parent.parent
    srcs = sorted(p for d in ("emu", "memmodel", "isa") for p in (root / d).rglob("*.py"))
    srcs = [p.read_bytes() for p in srcs]
    digest = hashlib.sha256(b"".join(b for b in srcs if b"@compiled" in b or b"@inlined" in b
                                     or b"@njit" in b or b"@_intrinsic" in b)).hexdigest()
    marker = root / "emu" / "__pycache__" / "compiled-sources.sha256"
    try:
        if marker.exists() and marker.read_text() == digest:
            return
        dirs = [Path(config.CACHE_DIR)] if config.CACHE_DIR else [root]
        for d in dirs:
            for f in d.rglob("*.nb[ci]"):
                f.unlink(missing_ok=True)
        marker.parent.mkdir(exist_ok=True)
        marker.write_text(digest)
    except OSError:   # a read-only install: nothing is edited there either
        pass


_drop_stale_cache()
compiled = njit(cache=True, _nrt=False)

# Hot helpers (tiny ones, and those with few call sites on the per-line paths) are inlined
# into their callers at numba IR level: a call that is not inlined passes S as a 7-word
# array struct and checks a status on return, which costs more than most of their bodies
# (measured in CPU time: the copy trace and dax-memcpy 1.3-1.55x faster, random loads 1.1x;
# the cold compile grows from about 90 s to 190 s, README "Performance").
inlined = njit(cache=True, _nrt=False, inline="always")

# Hot code indexes S with ix(i): numba wraps every negative signed index (i += len) and that
# test on each access shows in the hot loops, while an unsigned index has none. Offsets
# into S are never negative.
ix = uint64


# ------------------------------------------------------------------ host prefetch hint
from llvmlite import ir as _ir  # noqa: E402
from numba import types as _types  # noqa: E402
from numba.core import cgutils as _cgutils  # noqa: E402
from numba.extending import intrinsic as _intrinsic  # noqa: E402


@_intrinsic
def host_prefetch(typingctx, arr, idx):
    """Ask the *host* CPU to bring arr[idx] into its cache (llvm.prefetch, read, high
    locality). Only a hint: it never faults, changes no value and no emulated state; it
    lets the misses of a big state buffer overlap instead of forming a dependent chain."""
    sig = _types.void(arr, idx)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i8p = _ir.IntType(8).as_pointer()
        i32 = _ir.IntType(32)
        fn = _cgutils.get_or_insert_function(
            builder.module, _ir.FunctionType(_ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), i8p)
        builder.call(fn, [ptr, _ir.Constant(i32, 0), _ir.Constant(i32, 3), _ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@_intrinsic
def trailing_zeros(typingctx, x):
    """Number of trailing zero bits of the int64 x (llvm.cttz; 64 for x = 0): a shift
    instead of a division by a power of two known only at run time."""
    sig = _types.int64(_types.int64)

    def codegen(context, builder, signature, args):
        i64 = _ir.IntType(64)
        fn = _cgutils.get_or_insert_function(
            builder.module, _ir.FunctionType(i64, [i64, _ir.IntType(1)]), "llvm.cttz.i64")
        return builder.call(fn, [args[0], _ir.Constant(_ir.IntType(1), 0)])

    return sig, codegen


@_intrinsic
def as_float(typingctx, bits):
    """The float64 whose bit pattern is the int64 `bits` (a float kept in an int64 state
    buffer)."""
    sig = _types.float64(_types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _ir.DoubleType())

    return sig, codegen
