"""Wall time of the dax-memcpy study (docs/scenarios.md §4) and emulated lines per second.

    python benchmarks/dax_memcpy.py [--scale F] [--json]

Runs the four variants as `emu run dax-memcpy` does (functional data on) and reports, per
variant and in total, wall seconds and destination lines copied per wall second, and the
wall time the full-scale study would take at that rate (every 4 MiB pass is identical).
A report, not a test: the machine is shared and noisy.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from emu.studies.scenarios import dax_memcpy  # noqa: E402
from kernels.memcpy_study import BUFFER_BYTES  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1 / 64)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rounds = max(1, int(round(dax_memcpy.FULL_ROUNDS * args.scale)))
    dax_memcpy.run_variant(dax_memcpy.DEFAULT_PROFILE, {}, "movnt,numa=local", 1)  # warm-up
    out = {"scale": rounds / dax_memcpy.FULL_ROUNDS, "variants": {}}
    for v in dax_memcpy.VARIANTS:
        t = time.perf_counter()
        dax_memcpy.run_variant(dax_memcpy.DEFAULT_PROFILE, {}, v, rounds)
        wall = time.perf_counter() - t
        lines = rounds * BUFFER_BYTES // 64
        out["variants"][v] = {"wall_s": wall, "lines_per_s": lines / wall}
    total = sum(d["wall_s"] for d in out["variants"].values())
    out["wall_s"] = total
    out["full_scale_wall_s_estimate"] = total / out["scale"]
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"dax-memcpy at scale {out['scale']:g} ({rounds} passes of 4 MiB per variant)")
    for v, d in out["variants"].items():
        print(f"  {v:<22} {d['wall_s']:8.2f} s  {d['lines_per_s'] / 1e6:8.2f} M lines/s")
    print(f"  total {total:.2f} s; the full study at this rate: {out['full_scale_wall_s_estimate']:.0f} s")


if __name__ == "__main__":
    main()
