"""Scenario `vhost-tx`: vring metadata access with SMAP and speculation barriers.

vhost-net TX of small packets (docs/scenarios.md §2) on the 2.6 GHz Broadwell profile: per
packet `vhost_get_vq_desc` (avail ring entry, the 16-byte descriptor, translate_desc), the
12-byte vnet header and the frame copied from guest memory into a page frag
(`vhost_net_build_xdp`: two copyins, each its STAC/CLAC pair), and per batch of
VHOST_NET_BATCH = 64 packets `vhost_add_used_n` (the used elements, used->idx) and `vhost_signal` (smp_mb, avail->flags),
kernels/vhost.py; before each batch the guest's vCPU writes the payloads, descriptors and
avail entries the host is about to read (`virtqueue_enqueue_xmit`, peer writes: the host's
reads of them are cache-to-cache transfers). Metadata goes through the uaccess primitives
(`path=uaccess`: STAC, LFENCE, access, CLAC), through the checked forms (`path=checked`:
access_ok with address masking) or through a kernel mapping of the ring (`path=vmap`: plain
loads and stores); `smap=on|off` is the machine's SMAP (off: the kernel patches STAC/CLAC
out). The per-packet work the emulator does not model — handle_tx's own loop and TAP with
the xdp1 program — is declared in the profile ([software] vhost_net_tx_ns, tun_xdp_ns)
and is the same for every variant. Assumed: 64-byte packets (--pkt-bytes), a 256-entry ring
kept full by the guest, the uaccess path's descriptor read compiled to the 16-byte constant
form (--desc-copy; kernels/vhost.py says why), and the guest DPDK's virtio-user over
vhost-kernel: it registers a call eventfd (VHOST_SET_VRING_CALL with its callfd, DPDK
virtio_user_dev.c), so vhost_signal runs vhost_notify (smp_mb, then a read of
avail->flags: virtio-user's VIRTIO_USER_SUPPORTED_FEATURES has no EVENT_IDX), and, polling,
sets VRING_AVAIL_F_NO_INTERRUPT (virtqueue_disable_intr at ring set-up), so the eventfd is
never signalled; its TAP takes the 12-byte vnet header (IFF_VNET_HDR, VERSION_1:
sock_hlen 12, vhost_kernel.c). DPDK read as stored copies: virtio_user_dev.c (store ids
843796561, 665899257), vhost_kernel.c (DPDK/dpdk 013b4c52), virtio_ethdev.c (998466448),
virtio_rxtx.c (1044864125). Metric `mpps`, with
`ns_per_packet` and the cycles per packet of each function. docs/scenarios.md gives no
published figure: the emulator predicts.
"""

from emu import profiler
from emu.machine import Machine
from emu.studies.costs import NS, load_profile
from emu.studies.options import Option
from emu.studies.progress import progress
from emu.studies.scenarios.common import functions_table, with_user_region
from isa import Program
from kernels import vhost

NAME = "vhost-tx"
DEFAULT_PROFILE = "broadwell-ddr4"
VARIANTS = tuple(f"smap={s},path={p}" for s in ("on", "off") for p in vhost.PATHS)
METRIC = "mpps"
# the host's handle_tx and tun + xdp1 work per packet, declared (emu.studies.costs)
COSTS = {"vhost_net_tx_ns": NS, "tun_xdp_ns": NS}
SENSITIVE = ("software.vhost_net_tx_ns", "software.tun_xdp_ns", "instr.stac_cycles",
             "instr.clac_cycles", "instr.lfence_cycles", "instr.lock_rmw_cycles",
             "instr.branch_mispredict_cycles", "instr.index_mask_cycles",
             "instr.rep_movsb_startup_cycles", "core.freq_ghz")
# What STAC/CLAC cost and whether they serialize: no Intel source (docs/hardware.md §6.2);
# the profile's 3 + 3 cycles, non-serializing, is an assumption. The other readings:
READINGS = {
    "flag write": ("STAC/CLAC cost what a flags write on a dependency chain costs: the "
                   "measured PUSHFQ + POPFQ, 26 c on Broadwell-E and Haswell-EP, 24 on "
                   "Skylake-X ([ILX], docs/hardware.md §11)",
                   {"instr.stac_cycles": 26, "instr.clac_cycles": 26}),
    "serializing": ("STAC/CLAC wait like LFENCE, as AMD's Zen 1-4 do (no Intel statement "
                    "either way, docs/hardware.md §6.2)", {"instr.stac_clac_serialize": 1}),
}
BUF_STRIDE = 2048          # the guest's packet buffers (virtio-user mbufs)
# a frame and the vnet header pushed in front of it (in the previous buffer's tail) fit one
MAX_PKT_BYTES = BUF_STRIDE - vhost.VNET_HDR_BYTES
# The site of the TX loop itself: what runs outside the functions, and the end of the run
# (the last batch's stores draining, Program.loop).
LOOP_SITE = "tx loop"
DESC_COPY = ("inlined", "call")   # the two readings of the descriptor read's compiled form
MAX_PACKETS = 100_000      # a variant's packets are one program in memory, ~3.5 KB a packet
GUESTS = ("core", "peer")  # the guest vCPU: a core of the machine, or the peer ops' core


OPTIONS = (
    Option("packets", int, 64 * 100,
           f"measured packets per variant, after one unmeasured batch, at most {MAX_PACKETS}; "
           f"not a multiple of {vhost.VHOST_NET_BATCH}: the last batch is shorter (default: "
           f"%(default)s)", low=1, high=MAX_PACKETS),
    Option("pkt_bytes", int, 64,
           f"frame bytes per packet (after its {vhost.VNET_HDR_BYTES}-byte vnet header), at most "
           f"{MAX_PKT_BYTES}: a guest buffer's {BUF_STRIDE} less the header (default: "
           f"%(default)s, assumed)", low=1, high=MAX_PKT_BYTES),
    Option("guest", str, "core",
           "where the guest's vCPU runs: 'core' = a second core of the machine running "
           "virtqueue_enqueue_xmit and virtio_xmit_cleanup concurrently with vhost, up to the "
           "ring's batches ahead, the host polling avail->idx; 'peer' = the peer ops' other "
           "core (its writes placed just before the host reads them, costing it nothing) "
           "(default: %(default)s)", choices=GUESTS),
    Option("desc_copy", str, "inlined",
           "the uaccess path's 16-byte descriptor read as compiled: 'inlined' = "
           "raw_copy_from_user's constant form (STAC, LFENCE, two loads, CLAC), 'call' = "
           "copy_user_generic (no LFENCE); no disassembly settles it, kernels/vhost.py gives the "
           "reasoning (default: %(default)s, assumed)", choices=DESC_COPY),
)


def build(profile, overrides, variant, desc_copy="inlined", guest="peer"):
    """(machine, ring, guest buffer base, kernel frag base) for a variant; `desc_copy`:
    "inlined" (the descriptor read is raw_copy_from_user's 16-byte form with its LFENCE) or
    "call" (copy_user_generic), kernels/vhost.py's module docstring; `guest`: "core" (the
    guest's vCPU is core 1 of a two-core machine) or "peer" (the peer ops' core)."""
    if desc_copy not in DESC_COPY:
        raise ValueError(f"desc_copy {desc_copy!r}: one of {', '.join(DESC_COPY)}")
    if guest not in GUESTS:
        raise ValueError(f"guest {guest!r}: one of {', '.join(GUESTS)}")
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; variants: {', '.join(VARIANTS)}")
    smap, path = (kv.split("=")[1] for kv in variant.split(","))
    values = load_profile(profile, overrides or None).values
    m = Machine(profile, overrides or None, regions=with_user_region(values), smap=smap == "on",
                cores=2 if guest == "core" else 1)
    user = m.regions["user0"]
    kernel = next(r for r in m.regions.values() if r["base"] == user["base"] + user["size_bytes"])
    k = kernel["base"]
    alias = k + (1 << 20)                              # the vmap alias of the ring pages
    ring = vhost.Ring(path, alias if path == "vmap" else user["base"], 256, vq=k, umem=k + 1024,
                      maps=k + 2048, stack=k + 3072, desc_const=desc_copy == "inlined",
                      guest_core=guest == "core")
    bufs = user["base"] + (1 << 20)
    for base in {ring.base, user["base"]}:   # the guest's ring (and its vmap alias)
        r = vhost.Ring("uaccess", base, ring.num, 0, 0, 0, 0)
        for h in range(r.num):              # descriptors and avail entries, written once
            m.write(r.desc + 16 * h, vhost.guest_desc(bufs + BUF_STRIDE * h, 64))
            m.write(r.avail_ring(h), h.to_bytes(2, "little"))
    return m, ring, bufs, k + (2 << 20)


def declared_cycles(values):
    sw, ghz = values["software"], values["core"]["freq_ghz"]
    return {"handle_tx (declared)": round(sw["vhost_net_tx_ns"] * ghz),
            "tun + xdp1 (declared)": round(sw["tun_xdp_ns"] * ghz)}


def packets_program(m, ring, bufs, frags, first, n, pkt_bytes):
    """Packets first .. first+n-1 of the TX loop, in batches of VHOST_NET_BATCH; when n is
    not a multiple, the last batch is shorter: the guest enqueues only those packets and the
    host completes them as handle_tx does a batch cut short (vhost_add_used_n, vhost_signal
    of what it has)."""
    if not 1 <= pkt_bytes <= MAX_PKT_BYTES:   # longer, it would run into the next header
        raise ValueError(f"pkt_bytes {pkt_bytes}: a guest buffer holds 1 to {MAX_PKT_BYTES} "
                         f"bytes of frame after the {vhost.VNET_HDR_BYTES}-byte vnet header")
    declared = declared_cycles(m.profile.values)
    tx = vhost.TxBuffers(net=ring.vq + 4096, xdp=ring.vq + 8192, frags=frags)
    p = Program(capacity=80 * n, line_ips=True)
    guest = guest_program(ring, bufs, first, n, pkt_bytes) if ring.guest_core else None
    with p.loop(LOOP_SITE):
        for k in range(first, first + n, vhost.VHOST_NET_BATCH):
            count = min(vhost.VHOST_NET_BATCH, first + n - k)
            if guest is None:
                vhost.virtqueue_enqueue_xmit(p, ring, ring.last_avail_idx, count, bufs,
                                             BUF_STRIDE, pkt_bytes)
            heads = []
            for j in range(count):
                head = vhost.vhost_get_vq_desc(p, ring)
                with p.function("handle_tx (declared)"):
                    p.work(declared["handle_tx (declared)"])
                    p.store(ring.vq + 256 + 8 * j, size=8, value=head)   # vq->heads[done_idx]
                with p.function("vhost_net_build_xdp"):
                    vhost.vhost_net_build_xdp(p, tx, bufs + BUF_STRIDE * head
                                              - vhost.VNET_HDR_BYTES,
                                              pkt_bytes + vhost.VNET_HDR_BYTES)
                with p.function("tun + xdp1 (declared)"):   # xdp1 parses the copied packet
                    p.work(declared["tun + xdp1 (declared)"], dependent=True)
                heads.append(head)
            tx.batched = 0                                     # vhost_tx_batch
            vhost.vhost_add_used_n(p, ring, heads)
            vhost.vhost_signal(p, ring)
            if guest is None:
                vhost.virtio_xmit_cleanup(p, ring, ring.used_idx - len(heads), len(heads))
    return p if guest is None else [p, guest]


def guest_program(ring, bufs, first, n, pkt_bytes):
    """The guest core's side of packets first .. first+n-1 (`Ring.guest_core`): it enqueues
    each batch once the ring has room, the ring's batches ahead of the host at most
    (reclaiming the batch the host used that long ago first: virtio_xmit_cleanup waits for
    it), and reclaims the last ones at the end. It runs at kernel privilege with EFLAGS.AC
    set (one STAC first), so that SMAP lets it reach the user pages and, on the vmap path,
    the kernel alias that stands for the same pages (kernels/vhost.py)."""
    p = Program(capacity=16 * n, line_ips=True)
    p.stac()
    batches = [(k, min(vhost.VHOST_NET_BATCH, first + n - k))
               for k in range(first, first + n, vhost.VHOST_NET_BATCH)]
    ahead = ring.num // vhost.VHOST_NET_BATCH
    for j, (k, count) in enumerate(batches):
        if j >= ahead:
            vhost.virtio_xmit_cleanup(p, ring, *batches[j - ahead], core=True)
        vhost.virtqueue_enqueue_xmit(p, ring, k, count, bufs, BUF_STRIDE, pkt_bytes, core=True)
    for k, count in batches[max(0, len(batches) - ahead):]:
        vhost.virtio_xmit_cleanup(p, ring, k, count, core=True)
    return p


def _host_sites(m):
    """The host core's sites' counters (core 0's, with a guest core)."""
    s = m.stats()
    return s["cores"][0]["sites"] if m.cores > 1 else s["sites"]


def run_variant(profile, overrides, variant, packets, pkt_bytes, desc_copy="inlined",
                guest="peer"):
    profiler.label(variant)
    batch = vhost.VHOST_NET_BATCH
    m, ring, bufs, frags = build(profile, overrides, variant, desc_copy, guest)
    profiler.units(batch + packets, "packet")
    m.run(packets_program(m, ring, bufs, frags, 0, batch, pkt_bytes))
    before = _host_sites(m)
    r = m.run(packets_program(m, ring, bufs, frags, batch, packets, pkt_bytes))
    sites = {name: (d["cycles"] - before.get(name, {"cycles": 0})["cycles"]) / packets
             for name, d in _host_sites(m).items()}
    host = r.cores[0] if m.cores > 1 else r   # the guest's run may end later: not the host's
    ns = host.seconds * 1e9 / packets
    return {"mpps": 1e3 / ns, "ns_per_packet": ns, "cycles_per_packet": host.cycles / packets,
            "functions_cycles_per_packet": {k: v for k, v in sites.items() if v}}


def run(options):
    profile = options.profile or DEFAULT_PROFILE
    overrides = dict(options.overrides)
    variants = {v: run_variant(profile, overrides, v, options.packets, options.pkt_bytes,
                               options.desc_copy, options.guest)
                for v in progress(VARIANTS, NAME, options.progress)}
    return {"scenario": NAME, "profile": profile, "packets": options.packets,
            "pkt_bytes": options.pkt_bytes, "desc_copy": options.desc_copy,
            "guest": options.guest,
            "variants": variants}


def derived(mpps):
    """The SMAP cost a packet per path: ns with SMAP on less ns with it off (readings())."""
    return {f"SMAP ns/packet, path={p}": 1e3 / mpps[f"smap=on,path={p}"]
            - 1e3 / mpps[f"smap=off,path={p}"] for p in vhost.PATHS}


def table(res):
    lines = [f"vhost-tx on {res['profile']}: {res['packets']} packets of {res['pkt_bytes']} B "
             f"per variant measured, after one unmeasured batch of {vhost.VHOST_NET_BATCH} "
             f"(assumed: a full 256-entry ring, a polling guest; descriptor read: "
             f"{res['desc_copy']}; the guest's vCPU: "
             f"{'a second core' if res['guest'] == 'core' else 'the peer ops'})",
             "published: none in docs/scenarios.md; the emulator predicts",
             f"{'variant':<24}{'Mpps':>8}{'ns/packet':>11}"]
    for v, d in res["variants"].items():
        lines.append(f"{v:<24}{d['mpps']:>8.2f}{d['ns_per_packet']:>11.1f}")
    lines.append("\ncycles per packet by function (self time):")
    short = [v.replace("smap=", "").replace(",path=", "/") for v in res["variants"]]
    lines += functions_table(res["variants"], "functions_cycles_per_packet", 14, labels=short)
    return "\n".join(lines) + "\n"
