"""What a Machine refuses before anything runs: arguments the model has no meaning for, a
run whose clock could overflow, and the default bound on functional memory."""
import numpy as np

from memmodel import media as md

MAX_HOT_LINES = 1 << 22   # rows of a hot-line table (emu.profiler)

#: Functional memory a Machine may hold by default: a third of the 24 GiB machines this
#: project runs on, so that a run and its analysis fit beside each other.
DEFAULT_MEMORY_LIMIT_BYTES = 8 << 30


#: A run that could carry the clock past this is refused before it starts: the clock is
#: int64, and media channels keep time in md.FP units per cycle, with headroom for sums.
CLOCK_LIMIT = (1 << 62) // md.FP


def cycles_per_unit(values):
    """An upper bound on the cycles one op, or one cacheline it touches, adds to the clock:
    every latency of the profile (keys in _ns and _cycles) and every per-line transfer time
    (64 B at each _gbps bandwidth, and at rep movsb's bytes per cycle) paid at once, for the
    line, its write-back and each line the prefetcher issues with it, times 8 for media
    that move more than 64 bytes per line (Optane's 256-byte XPLine)."""
    ns = cycles = 0.0
    stack = [values]
    while stack:
        for key, x in stack.pop().items():
            if isinstance(x, dict):
                stack.append(x)
            elif isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0:
                if key.endswith("_ns"):
                    ns += x
                elif key.endswith("_cycles"):
                    cycles += x
                elif key.endswith("_gbps"):
                    ns += 64 / x
                elif key.endswith("_bytes_per_cycle"):
                    cycles += 64 / x
    per_line = ns * values["core"]["freq_ghz"] + cycles
    return 8 * per_line * (2 + values["prefetch"]["stream_degree_lines"]) + 1


def check_machine_args(regions, **args):
    """TypeError/ValueError for a Machine() argument the model has no meaning for."""
    for name in ("functional", "smap"):
        if not isinstance(args[name], (bool, np.bool_)):
            raise TypeError(f"Machine({name}=...) must be True or False, not {args[name]!r}")
    for name in ("node", "seed", "memory_limit_bytes", "hot_lines"):
        v = args[name]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"Machine({name}=...) must be an integer, not {v!r}")
    if args["memory_limit_bytes"] < 0:
        raise ValueError(f"Machine(memory_limit_bytes={args['memory_limit_bytes']}): negative")
    h = args["hot_lines"]
    if not 0 <= h <= MAX_HOT_LINES or h & (h - 1):
        raise ValueError(f"Machine(hot_lines={h}): not a power of two up to {MAX_HOT_LINES} "
                         "(or 0)")
    if not 0 <= args["seed"] < 1 << 63:
        raise ValueError(f"Machine(seed={args['seed']}): not in 0..2**63-1")
    n, most = args["cores"], args["cores_per_socket"]
    s, has = args.get("sockets", 1), args.get("has_sockets", 1)
    for name, v in (("cores", n), ("sockets", s)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"Machine({name}=...) must be an integer, not {v!r}")
    if not 1 <= s <= has:
        raise ValueError(f"Machine(sockets={s}): the profile's machine has {has} socket(s) "
                         "(core.sockets); sockets must be 1 to that")
    if n >= 1 and (n < s or n % s):
        raise ValueError(f"Machine(cores={n}, sockets={s}): the cores are spread evenly over "
                         "the sockets (cores/sockets a socket, socket-major), so cores must be "
                         "a multiple of sockets, one a socket at least")
    if not 1 <= n // s <= most:
        raise ValueError(f"Machine(cores={n}{f', sockets={s}' if s > 1 else ''}): the "
                         f"profile's socket has {most} core(s) (core.cores_per_socket); "
                         f"{'cores' if s == 1 else 'cores/sockets'} must be 1 to that")
    if s > 1:
        missing = [k for k in args.get("remote_keys", ()) if k not in args.get("llc", {})]
        if missing:
            raise ValueError(f"Machine(sockets={s}): the profile's [cache.llc] has no "
                             f"{' or '.join(missing)} (a line sent from the other socket)")
        if args["node"] != 0:
            raise ValueError(f"Machine(node={args['node']}, sockets={s}): with several "
                             "sockets each core runs on its socket's node (core k on node "
                             "k // (cores/sockets)); node= is for one socket")
    nodes = sorted({0} | {r["node"] for r in regions})
    if args["node"] not in nodes:
        raise ValueError(f"Machine(node={args['node']}): the profile's memory is on node(s) "
                         f"{', '.join(map(str, nodes))}; the core must run on one of them")


BACKGROUND_KEYS = ("read_gbps", "write_gbps")


def check_background(background, media, regions):
    """Machine(background=...): {media or region name: {"read_gbps": r, "write_gbps": w}}
    (other cores' traffic, GB/s, a region's going to its media) -> one (read, write) per
    media in `media` order, or None if there is none. TypeError/ValueError for anything
    else: an unknown name or key, a rate not a finite number >= 0, or a media's total above
    its own peak (read_bw_gbps, write_bw_gbps): a background at the peak saturates it."""
    if background is None:
        return None
    if not isinstance(background, dict):
        raise TypeError(f"Machine(background=...) must be a dict, not {background!r}")
    names = list(media)
    of_region = {r["name"]: r["media"] for r in regions}
    out = {n: [0.0, 0.0] for n in names}
    for name, rates in background.items():
        target = name if name in media else of_region.get(name)
        if target is None:
            raise ValueError(f"Machine(background=...): {name!r} is no media or region of the "
                             f"profile (media: {', '.join(names)}; regions: "
                             f"{', '.join(of_region)})")
        if not isinstance(rates, dict) or set(rates) - set(BACKGROUND_KEYS):
            raise ValueError(f"Machine(background=...)[{name!r}] must be a dict of "
                             f"{' and/or '.join(BACKGROUND_KEYS)}, not {rates!r}")
        for i, key in enumerate(BACKGROUND_KEYS):
            v = rates.get(key, 0)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not np.isfinite(v) or v < 0:
                raise ValueError(f"Machine(background=...)[{name!r}][{key!r}] must be a finite "
                                 f"number >= 0, not {v!r}")
            out[target][i] += float(v)
    for n, (r, w) in out.items():
        for v, key in ((r, "read_bw_gbps"), (w, "write_bw_gbps")):
            if v > media[n][key]:
                raise ValueError(f"Machine(background=...): {v:g} GB/s of background on media "
                                 f"{n!r} is above its {key} {media[n][key]:g}")
    return [tuple(out[n]) for n in names] if any(map(any, out.values())) else None
