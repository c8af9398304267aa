"""Fingerprint of the model's results, for refactors that must not change them.

    python benchmarks/fingerprint.py OUT.json [--compare BASE.json]

Runs every op kind on all shipped profiles and several policy / prefetcher / NUMA / SMAP /
functional settings, the benchmark traces at scale 0.05, persistent-memory programs under
ADR and eADR (crash images every 500 ops) and the dax-memcpy variants at two passes, and
records cycles, statistics and hashes of every state section. A performance change is
bit-identical when `--compare` against the fingerprint taken before it reports IDENTICAL.
A developer tool, not a test: the recorded values are the code's own output.
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from benchmarks import throughput as tb  # noqa: E402
from emu import Machine  # noqa: E402
from isa import Program  # noqa: E402

def progs(m, base):
    rng = np.random.default_rng(1)
    out = []
    p = Program()
    p.loads(base + rng.integers(0, 1 << 24, 20000) // 8 * 8)
    p.stores(base + rng.integers(0, 1 << 24, 5000) // 8 * 8)
    for i in range(3000):
        a = base + int(rng.integers(0, 1 << 22)) // 8 * 8
        k = int(rng.integers(0, 12))
        if k == 0: p.load(a, dependent=True)
        elif k == 1: p.store(a, b"abcdefgh")
        elif k == 2: p.movnt(a, b"q" * 8)
        elif k == 3: p.clflush(a)
        elif k == 4: p.clflushopt(a)
        elif k == 5: p.clwb(a)
        elif k == 6: p.sfence()
        elif k == 7: p.lfence() if i % 3 else p.mfence()
        elif k == 8: p.rep_movsb(base + (1 << 23) + (a & 0xffff), a, int(rng.integers(1, 9000)))
        elif k == 9: p.nt_copy(base + (1 << 23) + (a & 0xffff), a, int(rng.integers(1, 5000)))
        elif k == 10: p.careful_copy(base + (1 << 23) + (a & 0xffff), a, int(rng.integers(1, 5000)))
        else:
            p.site(f"s{i % 5}"); p.work(int(rng.integers(0, 30))); p.stac(); p.clac()
            p.flush_range(a, int(rng.integers(1, 1000)))
    p.load(base + 3, size=16)   # line-crossing
    p.store(base + 60, b"12345678")
    p.sfence()
    out.append(p)
    p = Program()
    p.loads(base + np.arange(0, 1 << 20, 8, dtype=np.int64))
    p.stores(base + (1 << 21) + np.arange(0, 1 << 19, 8, dtype=np.int64))
    out.append(p)
    return out

CONFIGS = [
    ("skylake-ddr4", {}, {}),
    ("skylake-ddr4", {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none"}, {}),
    ("broadwell-ddr4", {}, {}),
    ("haswell-nvdimm-n", {}, {}),
    ("cascadelake-optane", {}, {}),
    ("skylake-ddr4", {"cache.l1d.policy": "plru", "cache.l2.policy": "fifo", "cache.llc.policy": "random",
                      "cache.l1d.size_bytes": 1024, "cache.l1d.ways": 4, "cache.l2.size_bytes": 8192,
                      "cache.l2.ways": 8, "cache.llc.size_bytes": 3 * 16384, "cache.llc.ways": 12}, {"seed": 5}),
    ("skylake-ddr4", {"cache.l1d.policy": "random", "cache.l1d.size_bytes": 128, "cache.l1d.ways": 2,
                      "cache.l2.policy": "plru"}, {"functional": False, "smap": True}),
    ("skylake-ddr4", {}, {"node": 1}),
]

def pmem_run(res, over, tag):
    m = Machine("cascadelake-optane", over)
    base = m.regions["pmem0"]["base"] + 0x10000
    dram = m.regions["dram0"]["base"] + 0x40000
    m.write(base, bytes(range(256)) * 64)
    m.write(dram, bytes((i * 7) & 255 for i in range(32768)))
    rng = np.random.default_rng(7)
    p = Program()
    touched = set()
    for i in range(4000):
        a = base + int(rng.integers(0, 1 << 16)) // 8 * 8
        k = int(rng.integers(0, 9))
        if k <= 2: p.store(a, bytes([i & 255]) * 8); touched.add(a >> 6)
        elif k == 3: p.clwb(a)
        elif k == 4: p.clflushopt(a)
        elif k == 5: p.movnt(a, bytes([(i * 3) & 255]) * 8); touched.add(a >> 6)
        elif k == 6:
            n = int(rng.integers(1, 3000)); d = base + (a & 0x7fff)
            p.nt_copy(d, dram + (a & 0x3fff), n)
            touched.update(range(d >> 6, ((d + n - 1) >> 6) + 1))
        elif k == 7: p.sfence()
        else: p.clflush(a)
        if i % 500 == 499:
            c = m.run(p).cycles; res[f"{tag}/cyc{i}"] = c
            img = m.crash()
            h = hashlib.sha256()
            for l in sorted(touched): h.update(img.read(l << 6, 64))
            res[f"{tag}/crash{i}"] = h.hexdigest()
            p = Program()
    res[f"{tag}/stats"] = m.stats()
    h = hashlib.sha256()
    m.state_hash(h)
    h.update(m.read(base, 1 << 16))
    res[f"{tag}/state"] = h.hexdigest()


def dax_runs(res):
    from emu.studies.scenarios import dax_memcpy
    made = []
    class M(Machine):
        def __init__(self, *a, **k):
            super().__init__(*a, **k); made.append(self)
    old = dax_memcpy.Machine
    dax_memcpy.Machine = M
    try:
        for v in dax_memcpy.VARIANTS:
            r = dax_memcpy.run_variant("haswell-nvdimm-n", {}, v, 2)
            m = made[-1]
            res[f"dax/{v}"] = r
            res[f"dax/{v}/stats"] = m.stats()
            h = hashlib.sha256()
            m.state_hash(h)
            res[f"dax/{v}/state"] = h.hexdigest()
            nv = m.regions[dax_memcpy._regions(m, v.endswith("remote"))[0]["name"]]
            img = m.crash()
            res[f"dax/{v}/crash"] = hashlib.sha256(img.read(nv["base"], 4 << 20)).hexdigest()
    finally:
        dax_memcpy.Machine = old

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--compare", metavar="BASE")
    args = ap.parse_args(argv)
    res = {}
    for ci, (prof, ov, kw) in enumerate(CONFIGS):
        m = Machine(prof, dict(ov), **kw)
        regs = list(m.regions.values())
        for r in regs:
            for pi, p in enumerate(progs(m, r["base"])):
                c = m.run(p).cycles
                res[f"{ci}/{r['name']}/{pi}"] = c
        st = m.stats()
        res[f"{ci}/stats"] = st
        h = hashlib.sha256()
        for l in range(len(m.level_names)):
            h.update(repr(m.cache_contents(l)).encode()); h.update(repr(m.dirty_lines(l)).encode())
        m.state_hash(h)
        res[f"{ci}/state"] = h.hexdigest()
    # benchmark traces at scale 0.05
    for name in tb.TRACES:
        if name == "copy_16KiB_ring_4MiB":
            src, dst, words = tb.copy_trace(0.05); r, = tb.measure(tb.emu_copy(src, dst, words))
        else:
            addrs = tb.seq_trace(0.05) if name.startswith("seq") else tb.random_trace(0.05)
            r, = tb.measure(tb.emu_loads(addrs))
        res["bench/" + name] = r["levels"]
    pmem_run(res, {}, "pmem_adr")
    pmem_run(res, {"media.optane.persistence": "eadr"}, "pmem_eadr")
    dax_runs(res)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=0, sort_keys=True, default=int)
    if args.compare:
        with open(args.out) as f, open(args.compare) as g:
            new, base = json.load(f), json.load(g)
        bad = sorted(k for k in base.keys() | new.keys() if base.get(k) != new.get(k))
        print("IDENTICAL" if not bad else f"DIFFER in {len(bad)} entries: {bad[:10]}")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
