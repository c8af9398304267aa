"""The decorators for compiled code, the host intrinsics, and the compiled cache's digest.

`_nrt=False`: compiled code never allocates (every array comes from Python), so numba's
reference counting is not needed; with it, each call that passes the state buffer pays an
atomic incref/decref per array, several times the cost of the call itself.

With NUMBA_DISABLE_JIT=1 everything runs as plain Python (slowly, but debuggable and
coverable): the intrinsics below have Python twins then.
"""
import ast
import functools
import hashlib
import importlib
import inspect
import os
from pathlib import Path

import numpy as np
from llvmlite import binding as _binding
from llvmlite import ir as _ir
from numba import config, njit, uint64
from numba import types as _types
from numba.core import cgutils as _cgutils
from numba.core.typing import signature as _signature
from numba.extending import intrinsic as _intrinsic
from numba.extending import lower_builtin as _lower_builtin
from numba.extending import type_callable as _type_callable

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("emu", "memmodel", "isa")
DECORATORS = {"compiled", "inlined", "apart", "njit", "intrinsic", "_intrinsic"}
MARKER = "compiled-sources.sha256"


def _module(root, name):
    """The file of project module `name` (dotted), or None if it is none of ours."""
    if name.split(".")[0] not in PACKAGES:
        return None
    p = Path(root).joinpath(*name.split("."))
    for f in (p.with_suffix(".py"), p / "__init__.py"):
        if f.is_file():
            return f
    return None


def _imports(root, tree, pkg):
    """Project module files that `tree` (of a module in package `pkg`) takes values from:
    `from a.b import c` takes them from a/b/c.py if that is a module, else from a/b."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(_module(root, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for a in node.names:
                out.add(_module(root, f"{base}.{a.name}") or _module(root, base))
    out.discard(None)
    return out


def _code_only(tree):
    """The module's AST without docstrings: what the compiled code can depend on."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                and isinstance(first.value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _is_compiled(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                d = d.func if isinstance(d, ast.Call) else d
                if (d.id if isinstance(d, ast.Name) else getattr(d, "attr", None)) in DECORATORS:
                    return True
    return False


def frozen_sources(root=None):
    """{path: code} of every module whose values the compiled core freezes: each module with
    a compiled function, and every project module those import, transitively (constants,
    offsets, opcodes, flags, registry ids). Docstrings and comments are left out."""
    root = Path(root or ROOT)
    trees = {}
    for d in PACKAGES:
        for f in sorted((root / d).rglob("*.py")):
            trees[f] = ast.parse(f.read_bytes(), str(f))
    todo = [f for f, t in trees.items() if _is_compiled(t)]
    seen = set(todo)
    while todo:
        f = todo.pop()
        pkg = ".".join(f.relative_to(root).parts[:-1])
        for dep in _imports(root, trees[f], pkg) - seen:
            seen.add(dep)
            todo.append(dep)
    return {str(f.relative_to(root)): _code_only(trees[f]) for f in sorted(seen)}


def digest(root=None):
    h = hashlib.sha256()
    for path, code in frozen_sources(root).items():
        h.update(path.encode() + b"\0" + code.encode() + b"\0")
    return h.hexdigest()


def _path_hash(path):
    return hashlib.sha1(str(path).encode()).hexdigest()


def _cache_dirs(root):
    """Where numba keeps this checkout's cached objects."""
    if not config.CACHE_DIR:
        return [root / d for d in PACKAGES]
    # numba's user-wide cache names a source folder's objects after the folder and its path
    out = []
    for d in PACKAGES:
        for sub in [root / d, *(p for p in (root / d).rglob("*") if p.is_dir())]:
            name = f"{sub.name}_{_path_hash(sub)}"
            out.append(Path(config.CACHE_DIR) / name)
    return out


def _stat_key(root):
    """The size, mtime and inode of every source file, as Python's bytecode cache checks a
    file: parsing them all for the digest costs about half a second per process."""
    h = hashlib.sha256()
    for d in PACKAGES:
        for f in sorted((root / d).rglob("*.py")):
            st = f.stat()
            h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0".encode())
    return h.hexdigest()


def drop_stale_cache(root=None):
    """numba keys a cached function on its own file only, but the core inlines and calls
    code from every compiled module and freezes the constants of the modules they import:
    after a change to any of them it would load a stale core (one that writes old offsets
    while Python reads new ones). So this checkout's cached objects are dropped whenever
    the code of those modules changes; the digest of that code is computed only when a
    source file's stat changed. Returns whether it dropped them."""
    root = Path(root or ROOT)
    if config.CACHE_DIR:
        marker = Path(config.CACHE_DIR) / f"cacheline-emu-{_path_hash(root)}.sha256"
    else:
        marker = root / "emu" / "__pycache__" / MARKER
    try:
        stats = _stat_key(root)
        saved = marker.read_text().split() if marker.exists() else []
        if saved[1:] == [stats]:
            return False
        d = digest(root)
        if saved[:1] == [d]:
            _write(marker, f"{d} {stats}")
            return False
        for c in _cache_dirs(root):
            if c.is_dir():
                for f in c.rglob("*.nb[ci]"):
                    f.unlink(missing_ok=True)
        _write(marker, f"{d} {stats}")
    except OSError:   # a read-only install: nothing is edited there either
        return False
    return True


def _write(marker, text):
    marker.parent.mkdir(parents=True, exist_ok=True)
    tmp = marker.with_name(f"{marker.name}.{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, marker)   # never a half-written marker under concurrent imports


if not config.DISABLE_JIT:
    drop_stale_cache()


def _generic_calls(disp):
    """numba types a call to a compiled function with literal arguments as a separate
    specialisation per literal value (cache.count was compiled over 20 times, the miss walk
    five); calls are typed on plain types instead, once per function. LLVM still folds the
    constants where it inlines."""
    if config.DISABLE_JIT:
        return disp
    resolve = disp.get_call_template

    def get_call_template(args, kws):
        return resolve(tuple(_types.unliteral(a) for a in args),
                       {k: _types.unliteral(v) for k, v in kws.items()})

    disp.get_call_template = get_call_template
    return disp


def _keep_reload_init(disp):
    """numba runs a compiled function's reload_init (here: linking the apart functions its
    code calls) before it loads the function from its cache, and a caller inherits the list
    of each callee it links, but a callee loaded from the cache comes with an empty list:
    a caller compiled against it would not link them when it is loaded in turn."""
    if config.DISABLE_JIT:
        return disp
    add = disp.add_overload

    def add_overload(cres):
        cres.library._reload_init.update(cres.reload_init)
        add(cres)

    disp.add_overload = add_overload
    return disp


def compiled(f):
    """A compiled phase, called (not inlined) by its callers."""
    return _keep_reload_init(_generic_calls(njit(cache=True, _nrt=False)(f)))


def inlined(f):
    """A hot helper that LLVM inlines into every caller (alwaysinline). numba's own IR-level
    inlining (inline="always") re-ran the front end at each of several hundred call sites,
    which made the cold compile several times longer."""
    return _keep_reload_init(_generic_calls(njit(cache=True, _nrt=False, forceinline=True)(f)))


# the numba types of the arrays apart phases take
STATE = _types.int64[::1]      # the state buffer S
WORDS = STATE                  # another int64 vector: a run's sites, res, out
ROWS = _types.int64[:, ::1]    # the page table pt, a program's ops
FRAMES = _types.uint8[:, ::1]  # the functional memory's frames
BYTES = _types.uint8[::1]      # a program's data

_APART = {}   # (module, name): the link() of each apart function


class _Link:
    """Links the apart function `name` of `module`: numba calls it before it loads from its
    cache a function whose code calls that one (a CompileResult's reload_init)."""

    def __init__(self, module, name):
        self.key = (module, name)

    def __call__(self):
        importlib.import_module(self.key[0])
        _APART[self.key]()

    def __eq__(self, other):
        return isinstance(other, _Link) and self.key == other.key

    def __hash__(self):
        return hash(self.key)


def apart(*argtypes):
    """A compiled phase of one signature, `argtypes`, that its callers call by a symbol
    resolved when their code is loaded instead of a copy of its code. numba links a
    callee's LLVM module, and all that it calls, into each caller's module, where LLVM
    optimises it and compiles it to machine code again: a heavy phase called from many
    compiled functions (through inlined helpers: from every access handler) costs its
    compile time once each. The arguments are converted as for a compiled function.

    Linking it compiles it (or loads it from the cache) and gives LLVM's symbol table its
    address: when a caller's call is typed, and before a caller is loaded from the cache."""
    def decorate(f):
        if config.DISABLE_JIT:
            return f
        disp = _keep_reload_init(njit(cache=True, _nrt=False)(f))
        key = (f.__module__, f.__qualname__)
        symbol = "cacheline_emu." + ".".join(key)
        restype = []   # its return type, once linked

        def link():
            if not restype:
                disp.compile(argtypes)
                cres = disp.overloads[argtypes]
                _binding.add_symbol(symbol, cres.library.get_pointer_to_function(
                    cres.fndesc.llvm_func_name))
                restype.append(cres.signature.return_type)
            return restype[0]

        _APART[key] = link

        @functools.wraps(f)
        def call(*args):   # from Python
            return disp(*args)

        @_type_callable(call)
        def typer(context):
            def typ(*args):
                if len(args) != len(argtypes) or any(
                        context.can_convert(a, t) is None for a, t in zip(args, argtypes)):
                    return None
                return _signature(link(), *argtypes)
            typ.__signature__ = inspect.signature(f)   # numba folds the call's arguments by it
            return typ

        @_lower_builtin(call, *argtypes)
        def lower(context, builder, sig, args):
            context.active_code_library._reload_init.add(_Link(*key))
            fn = _cgutils.get_or_insert_function(
                builder.module, context.call_conv.get_function_type(sig.return_type, sig.args),
                symbol)
            status, res = context.call_conv.call_function(builder, fn, sig.return_type,
                                                          sig.args, args)
            with _cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return res

        call.dispatcher = disp
        return call
    return decorate


# Hot code indexes S with ix(i): numba wraps every negative signed index (i += len) and that
# test on each access shows in the hot loops, while an unsigned index has none. Offsets
# into S are never negative.
ix = uint64


# ------------------------------------------------------------------ host intrinsics


@_intrinsic
def _host_prefetch(typingctx, arr, idx):
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
def _trailing_zeros(typingctx, x):
    sig = _types.int64(_types.int64)

    def codegen(context, builder, signature, args):
        i64 = _ir.IntType(64)
        fn = _cgutils.get_or_insert_function(
            builder.module, _ir.FunctionType(i64, [i64, _ir.IntType(1)]), "llvm.cttz.i64")
        return builder.call(fn, [args[0], _ir.Constant(_ir.IntType(1), 0)])

    return sig, codegen


@_intrinsic
def _as_float(typingctx, bits):
    sig = _types.float64(_types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _ir.DoubleType())

    return sig, codegen


def _vector_load(context, builder, aryty, ary, idx, lanes):
    """The int64 words arr[idx:idx + lanes] loaded as one LLVM vector (any alignment)."""
    data = context.make_array(aryty)(context, builder, ary).data
    vec = _ir.VectorType(_ir.IntType(64), lanes)
    return builder.load(builder.bitcast(builder.gep(data, [idx]), vec.as_pointer()), align=8)


def _equal_mask(lanes):
    """An intrinsic (arr, idx, x) -> int64 whose bit k says arr[idx + k] == x, for k below
    `lanes`: one vector load and compare (the host's SIMD compares, whatever the build's
    CPU offers) where a scalar scan takes a load, a compare and an or a way."""
    @_intrinsic
    def equal_mask(typingctx, arr, idx, x):
        if getattr(arr, "dtype", None) != _types.int64:
            return None   # the words are loaded as int64: no other array types
        sig = _types.int64(arr, idx, _types.int64)

        def codegen(context, builder, signature, args):
            words = _vector_load(context, builder, signature.args[0], args[0], args[1], lanes)
            vec = words.type
            one = builder.insert_element(_ir.Constant(vec, _ir.Undefined), args[2],
                                         _ir.Constant(_ir.IntType(32), 0))
            xs = builder.shuffle_vector(one, _ir.Constant(vec, _ir.Undefined),
                                        _ir.Constant(_ir.VectorType(_ir.IntType(32), lanes),
                                                     [0] * lanes))
            eq = builder.icmp_signed("==", words, xs)
            return builder.zext(builder.bitcast(eq, _ir.IntType(lanes)), _ir.IntType(64))

        return sig, codegen

    return equal_mask


@_intrinsic
def _min8(typingctx, arr, idx):
    """The least of arr[idx:idx + 8] (int64): one vector load and a reduction."""
    if getattr(arr, "dtype", None) != _types.int64:
        return None
    sig = _types.int64(arr, idx)

    def codegen(context, builder, signature, args):
        words = _vector_load(context, builder, signature.args[0], args[0], args[1], 8)
        fn = _cgutils.get_or_insert_function(
            builder.module, _ir.FunctionType(_ir.IntType(64), [words.type]),
            "llvm.vector.reduce.smin.v8i64")
        return builder.call(fn, [words])

    return sig, codegen


@_intrinsic
def _view_at(typingctx, arr, words):
    """arr moved by `words` words (possibly back, into the buffer arr was cut from): its
    data pointer moved, its length changed to match; no copy."""
    if getattr(arr, "dtype", None) != _types.int64 or arr.ndim != 1:
        return None
    sig = arr(arr, _types.int64)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        out = context.make_array(aryty)(context, builder)
        n = builder.sub(builder.extract_value(ary.shape, 0), args[1])
        context.populate_array(out, data=builder.gep(ary.data, [args[1]]), shape=[n],
                               strides=[builder.extract_value(ary.strides, 0)],
                               itemsize=ary.itemsize, meminfo=ary.meminfo, parent=ary.parent)
        return out._getvalue()

    return sig, codegen


def _py_view_at(arr, words):
    base = arr if arr.base is None else arr.base
    at = (arr.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 8
    return base[at + int(words):]


def _py_min8(arr, idx):
    return np.int64(arr[int(idx):int(idx) + 8].min())


def _py_equal_mask(lanes):
    def equal_mask(arr, idx, x):
        hit = arr[int(idx):int(idx) + lanes] == x
        return np.int64(sum(1 << k for k in range(lanes) if hit[k]))
    return equal_mask


def _py_host_prefetch(arr, idx):
    return None


def _py_trailing_zeros(x):
    x = int(x) & (2**64 - 1)
    return np.int64(64 if x == 0 else (x & -x).bit_length() - 1)


def _py_as_float(bits):
    return np.int64(bits).view(np.float64)


# host_prefetch(arr, idx): ask the *host* CPU to bring arr[idx] into its cache (llvm.prefetch,
# read, high locality). Only a hint: it never faults and changes no value or emulated state;
# it lets the misses of a big state buffer overlap instead of forming a dependent chain.
# trailing_zeros(x): trailing zero bits of the int64 x (llvm.cttz; 64 for 0), a shift
# instead of a division by a power of two known only at run time.
# as_float(bits): the float64 whose bit pattern is the int64 `bits` (a float kept in S).
# equal4, equal8(arr, idx, x): the bits k of arr[idx + k] == x over 4 or 8 words.
# min8(arr, idx): the least of arr[idx:idx + 8].
# view_at(S, words): the view of the state buffer `words` words on from view S (negative:
# back): another core's view (memmodel.layout, "Cores"), whose fixed sections may lie
# before this core's, which numpy's slicing cannot reach.
if config.DISABLE_JIT:
    host_prefetch, trailing_zeros, as_float = _py_host_prefetch, _py_trailing_zeros, _py_as_float
    equal4, equal8, min8, view_at = _py_equal_mask(4), _py_equal_mask(8), _py_min8, _py_view_at
else:
    host_prefetch, trailing_zeros, as_float = _host_prefetch, _trailing_zeros, _as_float
    equal4, equal8, min8, view_at = _equal_mask(4), _equal_mask(8), _min8, _view_at


def reciprocal_bits(n):
    """The bits of the float64 1/n, as `remainder` takes them (kept in S as an int64)."""
    return np.float64(1.0 / n).view(np.int64)


@inlined
def remainder(x, n, inv_bits):
    """x % n for x >= 0, by the float reciprocal 1/n (bits `inv_bits`): a 64-bit division
    costs 14-46 cycles on the hosts we measure on, and a set index (Haswell's LLC has 36864
    sets) or a channel (6 a socket) is one per access. Below 2**52 the float quotient is off
    by at most one, which the compares correct."""
    if x >= 1 << 52:
        return x % n
    s = x - np.int64(np.float64(x) * as_float(inv_bits)) * n
    if s < 0:
        return s + n
    if s >= n:
        return s - n
    return s
