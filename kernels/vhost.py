"""vhost-net TX: vring metadata access and the per-packet path, as emitted ops.

Follows drivers/vhost/vhost.c (v5.0, blob 72343536: `vhost_get_vq_desc`, `translate_desc`,
`vhost_add_used_n`, `vhost_signal`/`vhost_notify`, the `vhost_get_user`/`vhost_put_user`/
`vhost_copy_*_user` accessors without an IOTLB) and drivers/vhost/net.c (`handle_tx_copy`,
`vhost_net_build_xdp`, VHOST_NET_BATCH 64), as read in docs/kernel-paths.md §4; net.c read as
torvalds/linux blob 1108564834 (the v5.2-v5.7 form: `handle_tx_copy` and
`vhost_net_build_xdp` as in v5.0 but for the weight check's `vq` argument) and
`vhost_net_build_xdp` alone as blob 28388013488 (v4.19-v5.7 form). Three ways to reach the
guest's ring (a `Ring.path`):

- "uaccess" (v5.0): `__get_user` / `__put_user` / `__copy_from_user` / `__copy_to_user`
  (kernels/uaccess.py: STAC, LFENCE where the kernel has it, the access, CLAC);
- "checked": `get_user` / `put_user` / `copy_from_user` / `copy_to_user` (access_ok with
  address masking instead of the LFENCE);
- "vmap" (the 2019 "access vq metadata through kernel virtual address" series): a load of
  the ring's map pointer (`vq->maps[]`, under rcu_read_lock), then plain loads and stores
  through the kernel mapping.

Model departures: the emulator maps physical ranges, so the kernel's vmap alias of the ring
pages is a second copy of the ring in a supervisor region (`Ring.base` is the alias for
"vmap", the user address otherwise; the guest's writes go to the address the host reads);
the guest (virtio-user) runs on another core: a core of the machine (`Ring.guest_core`: its
writes and reads are its own program's stores and loads, and the host polls avail->idx before
it reads a batch), or the peer ops' core (its writes PEER_WRITEs placed just before the host
reads them, its reads PEER_READs: `virtqueue_enqueue_xmit`, `virtio_xmit_cleanup`).

The descriptor read, `vhost_copy_from_user(vq, &desc, vq->desc + i, sizeof desc)`, is
assumed to get raw_copy_from_user's constant 16-byte form (STAC; LFENCE; two 8-byte loads;
CLAC) on the uaccess path (`Ring.desc_const`, default True). Only a disassembly of the
v5.0 vhost.ko settles it; the reasoning: vhost_copy_from_user is static with this one call
site in vhost.c (blob 72343536, read whole), so GCC at -O2 inlines it
(-finline-functions-called-once) or, if not, IPA-CP passes the one caller's constant 16
into its body; __copy_from_user and raw_copy_from_user are __always_inline and
__builtin_constant_p(size) is folded after both, so it sees 16. The other reading
(`desc_const=False`: copy_user_generic's short loop, no LFENCE) is the scenario's
`--desc-copy call`. The checked path's copy_from_user calls the out-of-line
_copy_from_user, whose size is never constant; the vmap path's memcpy has no LFENCE either
way. The per-packet work of handle_tx and of TAP + XDP is a
declared cost the caller emits. Ring index arithmetic (free-running 16-bit indices, wrap at
`num`) is done here in Python.
"""
from dataclasses import dataclass

import numpy as np

from isa.ops import FLAG_DEPENDENT
from kernels import uaccess as ua
from kernels.barrier import smp_mb

PATHS = ("uaccess", "vmap", "checked")
VHOST_NET_BATCH = 64
DESC_BYTES = 16
USED_ELEM_BYTES = 8
# vhost_net_build_xdp's layout of a page-frag buffer (net.c; the sizes are x86-64 v5.0 ones,
# recalled, not re-read: NET_SKB_PAD 64, NET_IP_ALIGN 0, XDP_PACKET_HEADROOM 256, struct
# skb_shared_info 320 B, struct xdp_buff 48 B)
VNET_HDR_BYTES = 12      # sock_hlen: virtio_net_hdr_mrg_rxbuf (VERSION_1), taken by the TAP
GSO_OFFSET = 4           # offsetof(struct tun_xdp_hdr, gso), after `int buflen`
XDP_PAD = 384            # SKB_DATA_ALIGN(VHOST_NET_RX_PAD + XDP_PACKET_HEADROOM + sock_hlen)
SHINFO_BYTES = 320       # SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
XDP_BUFF_BYTES = 48
FRAG_BYTES = 32768       # the page frag: an order-3 page (SKB_FRAG_PAGE_ORDER)


@dataclass
class Ring:
    """A split virtqueue of `num` entries at `base` (desc table, then the avail ring at
    base + 4096, the used ring at base + 8192) and the host's kernel-side state: `vq` (the
    vhost_virtqueue lines: last_avail_idx, avail_idx cache, heads), `umem` (the memory table's
    lines: the vhost_dev line, the vhost_umem at +64, its one vhost_umem_node at +128 and
    +192), `maps` (vq->maps[] for "vmap"), `stack` (the kernel
    stack line the descriptor is read into); `desc_const`: whether the uaccess path's
    descriptor read gets raw_copy_from_user's 16-byte form (see the module docstring);
    `call_ctx` and `event_idx`: what vhost_signal does (see there); `guest_core`: the guest
    runs on a core of the machine (the host then polls avail->idx until a batch is there)."""
    path: str
    base: int
    num: int
    vq: int
    umem: int
    maps: int
    stack: int
    last_avail_idx: int = 0
    avail_idx: int = 0
    used_idx: int = 0
    desc_const: bool = True     # the descriptor read is the 16-byte constant form
    call_ctx: bool = True       # a call eventfd is set (VHOST_SET_VRING_CALL)
    event_idx: bool = False     # VIRTIO_RING_F_EVENT_IDX negotiated
    signalled_used_valid: bool = False
    guest_core: bool = False

    def __post_init__(self):
        if self.path not in PATHS:
            raise ValueError(f"path {self.path!r}: one of {', '.join(PATHS)}")
        if self.num & (self.num - 1) or not 1 <= self.num <= 256:
            raise ValueError(f"ring size {self.num}: a power of two up to 256 (this layout "
                             f"gives the descriptor table one page)")

    @property
    def desc(self):
        return self.base

    @property
    def avail(self):
        return self.base + 4096

    @property
    def used(self):
        return self.base + 8192

    def avail_ring(self, idx):
        return self.avail + 4 + 2 * (idx % self.num)

    @property
    def used_event(self):
        return self.avail + 4 + 2 * self.num

    def used_ring(self, idx):
        return self.used + 4 + USED_ELEM_BYTES * (idx % self.num)


def vhost_get_user(p, ring, addr, size):
    """Read `size` bytes of ring metadata by the ring's path."""
    if ring.path == "vmap":
        p.load(ring.maps)                               # rcu_dereference(vq->maps[type])
        p.load(addr, size, dependent=True)
    elif ring.path == "checked":
        ua.get_user(p, addr, size)
    else:
        ua.__get_user(p, addr, size)


def vhost_put_user(p, ring, addr, value, size):
    if ring.path == "vmap":
        p.load(ring.maps)
        p.store(addr, size=size, value=value)
    elif ring.path == "checked":
        ua.put_user(p, addr, value, size)
    else:
        ua.__put_user(p, addr, value, size)


def _vhost_copy(p, ring, dst, src, n, to_user, dependent=False):
    if ring.path == "vmap":                             # memcpy through the kernel mapping
        if not dependent:   # a dependent copy's map pointer was loaded ahead by the caller
            p.load(ring.maps)
        flags = FLAG_DEPENDENT if dependent else 0
        if n < ua.SHORT_STRING:
            p.careful_copy(dst, src, n, flags=flags)
        else:
            p.rep_movsb(dst, src, n, flags=flags)
    elif ring.path == "checked":
        if to_user:
            ua.copy_to_user(p, dst, src, n)
        else:
            ua.copy_from_user(p, dst, src, n, dependent=dependent)
    elif to_user:
        ua.__copy_to_user(p, dst, src, n)
    else:
        ua.__copy_from_user(p, dst, src, n, dependent=dependent)


def vhost_copy_from_user(p, ring, dst, src, n, dependent=False):
    """`dependent`: src came from the previous load's data (the descriptor's index). An op
    has one predecessor here, so on the vmap path the caller loads the map pointer ahead
    (it needs no data: an out-of-order core issues it early) and the copy waits for the
    index alone."""
    _vhost_copy(p, ring, dst, src, n, False, dependent)


def vhost_copy_to_user(p, ring, dst, src, n):
    _vhost_copy(p, ring, dst, src, n, True)


def translate_walk(p, ring):
    """translate_desc's lookup of the memory table, which needs nothing of the descriptor:
    vq->dev; dev->iotlb, then dev->umem (one load here: the same line, neither waits for the
    other); umem->umem_tree (rb_root.rb_node and rb_leftmost, one line); then, for a table
    of one region (one node), vhost_umem_interval_tree_iter_first: leftmost->start (node
    line 0), node->__subtree_last (line 1), then _subtree_search and the translation read
    start, last, size (line 0), userspace_addr and perm (line 1), which are hits by then.
    Layout of struct vhost_umem_node (v5.0 vhost.h, recalled): rb 0, link 24, start 40, last
    48, size 56, userspace_addr 64, perm 72, __subtree_last 80. Each load after the first
    follows a pointer the previous one read. The descriptor's address and length only feed
    compares (start <= addr, addr + len - 1 <= last): branches the core predicts, so the
    walk does not wait for the descriptor."""
    dev, umem, node = ring.umem, ring.umem + 64, ring.umem + 128
    p.load(ring.vq + 64)                            # vq->dev
    p.load(dev + 8, dependent=True)                 # dev->iotlb (NULL), dev->umem
    p.load(umem, 16, dependent=True)                # umem_tree.rb_root.rb_node, rb_leftmost
    p.load(node + 40, dependent=True)               # leftmost->start
    p.load(node + 80, dependent=True)               # node->__subtree_last
    p.load(node + 40, 24)                           # start, last, size
    p.load(node + 64, 16)                           # userspace_addr, perm


def translate_desc(p, ring):
    """Guest address -> host iovec: the walk (translate_walk, emitted ahead of the descriptor
    by vhost_get_vq_desc), then the one iovec written: iov_len = min(len, size), iov_base =
    userspace_addr + addr - start, from the node and the descriptor."""
    p.store(ring.vq + 128, size=16, value=0)           # vq->iov[0]


def vhost_get_vq_desc(p, ring):
    """Fetch the next available descriptor; returns its head index. The avail index is read
    only when the cached copy is used up (the guest is assumed to keep the ring full:
    one read gives a batch's worth).

    translate_desc's walk needs no data of the ring, so an out-of-order core issues it as
    soon as the last fence before it lets it, overlapping the avail entry's and the
    descriptor's transfers: it is emitted there (the avail entry's LFENCE on the uaccess
    path; before the avail entry's read on the others, which have no fence), not after the
    descriptor. The emulator gives an op one predecessor (the previous load), so emitted
    after the descriptor the walk would either wait for it or make the payload's copy forget
    it; ahead, the descriptor's copy waits for the avail entry and the vnet header's copy
    for the descriptor, as in the kernel."""
    with p.function("vhost_get_vq_desc"):
        p.load(ring.vq, 8)                              # last_avail_idx, cached avail_idx
        if ring.last_avail_idx == ring.avail_idx:
            if ring.guest_core:   # until the ring is not empty (the guest publishes
                want = (ring.last_avail_idx + 1) & 0xFFFF   # avail->idx once a batch)
                if ring.path == "vmap":
                    p.wait(ring.avail + 2, want, size=2, at_least=True)
                else:
                    p.stac()
                    p.wait(ring.avail + 2, want, size=2, at_least=True)
                    p.clac()
            vhost_get_user(p, ring, ring.avail + 2, 2)  # avail->idx; then smp_rmb()
            ring.avail_idx = ring.last_avail_idx + VHOST_NET_BATCH
        head = ring.last_avail_idx % ring.num

        def walk():
            with p.function("translate_desc"):
                translate_walk(p, ring)

        entry = ring.avail_ring(ring.last_avail_idx)
        desc = ring.desc + DESC_BYTES * head
        if ring.path == "uaccess" and ring.desc_const:
            # STAC; LFENCE; two 8-byte loads; CLAC: the walk goes after this LFENCE, which
            # itself waits for the avail entry's data, so the copy needs no dependence flag
            ua.__get_user(p, entry, 2)
            ua.__copy_from_user(p, ring.stack, desc, DESC_BYTES, const=True, ahead=walk)
        elif ring.path == "uaccess":
            ua.__get_user(p, entry, 2, ahead=walk)
        else:
            walk()
            if ring.path == "vmap":
                p.load(ring.maps)                       # the descriptor table's map, ahead
            vhost_get_user(p, ring, entry, 2)
        if not (ring.path == "uaccess" and ring.desc_const):
            vhost_copy_from_user(p, ring, ring.stack, desc, DESC_BYTES,
                                 dependent=True)     # head: the avail entry's data
        with p.function("translate_desc"):
            translate_desc(p, ring)
        ring.last_avail_idx += 1
        p.store(ring.vq, size=2, value=ring.last_avail_idx & 0xFFFF)
    return head


def __vhost_add_used_n(p, ring, heads, at):
    """Write used elements for `heads` (kept at kernel address `at`) from used_idx on, no
    wrap inside: one element is two 4-byte vhost_put_user (id, then len: 0 on TX), more are
    one vhost_copy_to_user of 8 B each."""
    used = ring.used_ring(ring.used_idx)
    if len(heads) == 1:
        vhost_put_user(p, ring, used, heads[0], 4)
        vhost_put_user(p, ring, used + 4, 0, 4)
    else:
        vhost_copy_to_user(p, ring, used, at, len(heads) * USED_ELEM_BYTES)
    ring.used_idx += len(heads)


def vhost_add_used_n(p, ring, heads):
    """__vhost_add_used_n for the elements up to the ring's end, then for the rest, then
    smp_wmb() (a compiler barrier on x86) and used->idx. `heads` are vq->heads[], at
    ring.vq + 256."""
    with p.function("vhost_add_used_n"):
        n = ring.num - ring.used_idx % ring.num
        first = n if n < len(heads) else 0
        if first:
            __vhost_add_used_n(p, ring, heads[:n], ring.vq + 256)
        __vhost_add_used_n(p, ring, heads[first:], ring.vq + 256 + first * USED_ELEM_BYTES)
        vhost_put_user(p, ring, ring.used + 2, ring.used_idx & 0xFFFF, 2)


def vhost_signal(p, ring):
    """vhost_signal: only with a call eventfd (vq->call_ctx) does vhost_notify run:
    smp_mb() (a locked add on the vhost worker's stack), then, without
    VIRTIO_F_NOTIFY_ON_EMPTY, the guest's used_event with EVENT_IDX (not read the first time
    after set-up: signalled_used_valid is false), else avail->flags. Whether the eventfd is
    then signalled (eventfd_signal) is the guest's flag's or used_event's answer; its cost
    is not emitted (a polling guest asks for none)."""
    if not ring.call_ctx:
        return
    with p.function("vhost_signal"):
        smp_mb(p, ring.stack)
        if not ring.event_idx:
            vhost_get_user(p, ring, ring.avail, 2)      # avail->flags
        elif ring.signalled_used_valid:
            vhost_get_user(p, ring, ring.used_event, 2)
        ring.signalled_used_valid = True


def guest_payload(head, n):
    """The bytes the guest puts in the buffer of descriptor `head` (a pattern per head):
    byte i is (7 * head + i) mod 256. Built by numpy: a Python loop per byte was most of a
    run's time at large packets."""
    return ((np.arange(n, dtype=np.int64) + head * 7) & 0xFF).astype(np.uint8).tobytes()


def guest_desc(buf, pkt_bytes):
    """The descriptor of a frame of `pkt_bytes` at `buf` whose vnet header the guest pushed
    in front of it (DPDK virtio's can_push: one descriptor, header and frame): addr, len,
    flags 0 (no NEXT, no INDIRECT), next 0."""
    return ((buf - VNET_HDR_BYTES).to_bytes(8, "little")
            + (pkt_bytes + VNET_HDR_BYTES).to_bytes(4, "little") + bytes(4))


def virtqueue_enqueue_xmit(p, ring, first, count, bufs, stride, pkt_bytes, core=False):
    """The guest's side of avail entries first .. first+count-1, done by its own vCPU
    (virtio-user's virtqueue_enqueue_xmit and the avail index update, DPDK
    drivers/net/virtio): per entry the payload of its buffer, the zeroed vnet header pushed
    in front of it (the mbuf's headroom: VERSION_1 lets the header share the frame's
    descriptor), its descriptor (head = entry index % num, as the ring was set up) and the
    entry, then avail->idx, at the addresses the host reads (the vmap alias too: it maps the
    same pages). `core`: `p` is the guest core's program, whose stores these are; else they
    are PEER_WRITEs in the host's, just before it reads them. The guest reads the used ring
    in virtio_xmit_cleanup."""
    write = p.store if core else p.peer_write
    with p.function("guest" if core else "guest (peer core)"):
        for idx in range(first, first + count):
            head = idx % ring.num
            buf = bufs + stride * head
            payload = guest_payload(head, pkt_bytes)
            write(buf - VNET_HDR_BYTES, bytes(VNET_HDR_BYTES))
            for off in range(0, pkt_bytes, 64):
                write(buf + off, payload[off:off + 64])
            write(ring.desc + DESC_BYTES * head, guest_desc(buf, pkt_bytes))
            write(ring.avail_ring(idx), head.to_bytes(2, "little"))
        write(ring.avail + 2, ((first + count) & 0xFFFF).to_bytes(2, "little"))


def virtio_xmit_cleanup(p, ring, first, count, core=False):
    """The guest's vCPU reclaims sent buffers (DPDK virtio_xmit_cleanup): it reads used->idx
    and the used elements first .. first+count-1 that the host wrote; the host's next
    writes to those lines wait for the guest's copies to be invalidated. `core`: `p` is the
    guest core's program, which first polls used->idx until the host has used them; else
    PEER_READs in the host's, just after it used them."""
    with p.function("guest" if core else "guest (peer core)"):
        if core:
            p.wait(ring.used + 2, (first + count) & 0xFFFF, size=2, at_least=True)
            for idx in range(first, first + count):
                p.load(ring.used_ring(idx), USED_ELEM_BYTES)
            return
        p.peer_read(ring.used + 2, 2)
        for idx in range(first, first + count):
            p.peer_read(ring.used_ring(idx), USED_ELEM_BYTES)


def copyin(p, dst, src, n, dependent=True):
    """lib/iov_iter.c copyin: access_ok, then raw_copy_from_user (a user copy on every path:
    the vmap series changed the metadata accessors only). `dependent`: src came from the
    previous load's data (the iovec translate_desc computed from the descriptor)."""
    with p.guarded(*ua.range_cmp(src, n)):
        ua.raw_copy_from_user(p, dst, src, n, dependent=dependent)


@dataclass
class TxBuffers:
    """vhost_net_build_xdp's kernel state: `net` (the struct vhost_net line holding
    page_frag.offset and refcnt_bias), `xdp` (nvq->xdp[], the batch's xdp_buffs), `frags`
    (the page frag the packets are built in) and the current offset and batch count."""
    net: int
    xdp: int
    frags: int
    offset: int = 0
    batched: int = 0


def xdp_buflen(length):
    """buflen of a packet of `length` bytes (vnet header included): the shared info, then the
    pad and the packet, each rounded up to the cache line (SKB_DATA_ALIGN)."""
    return SHINFO_BYTES + (length + XDP_PAD + 63) // 64 * 64


def vhost_net_build_xdp(p, tx, src, length):
    """One packet of `length` bytes (the vnet header, then the frame) at guest address `src`
    (the descriptor's buffer) built into the page frag, as v5.0 does when the socket can
    batch (sk_sndbuf == INT_MAX, TAP): copy_page_from_iter of the sock_hlen-byte header to
    hdr->gso, a read of gso->flags (VIRTIO_NET_HDR_F_NEEDS_CSUM: the guest sets none, so the
    hdr_len fix-up is not taken), copy_page_from_iter of the frame to buf + pad, then the
    xdp_buff, hdr->buflen, refcnt_bias and the frag offset. Each copy_page_from_iter of one
    user iovec segment is one copyin (lib/iov_iter.c copy_page_from_iter_iovec): two
    STAC/CLAC pairs a packet. Returns the kernel address of the copied frame.

    The header copy waits for the descriptor (its source is the iovec's); the gso->flags load
    reads what it stored, so it waits for its data (flagged dependent: the emulator has no
    store-to-load forwarding of timing); the frame's copy is not flagged: its source is the
    same iovec's, whose address the header copy already waited for (a dependent copy holds
    dispatch until it), and it does not wait for gso->flags (only a predicted branch does).
    An op's one predecessor is the previous load, so the bookkeeping load (the kernel reads
    alloc_frag->offset first) sits between gso->flags and the frame's copy, where no op waits
    for it: the caller's xdp1 work waits for the frame's data, the header copy for the
    iovec's."""
    if not VNET_HDR_BYTES < length <= 4096 - SHINFO_BYTES - XDP_PAD:
        raise ValueError(f"packet of {length} bytes: vhost_net_build_xdp takes a vnet header "
                         f"and a frame that fits one page with its pad (-ENOSPC)")
    buflen = xdp_buflen(length)
    tx.offset = (tx.offset + 63) // 64 * 64           # ALIGN(alloc_frag->offset, 64)
    if tx.offset + buflen > FRAG_BYTES:   # vhost_net_page_frag_refill: a new page; the model
        tx.offset = 0                     # reuses the same one (no page allocator here)
    buf = tx.frags + tx.offset
    with p.function("copyin (vnet header)"):
        copyin(p, buf + GSO_OFFSET, src, VNET_HDR_BYTES)
    p.load(buf + GSO_OFFSET, 1, dependent=True)        # gso->flags
    p.load(tx.net, 8)                                  # alloc_frag->offset, refcnt_bias
    with p.function("copyin (payload)"):
        copyin(p, buf + XDP_PAD, src + VNET_HDR_BYTES, length - VNET_HDR_BYTES,
               dependent=False)
    xdp = tx.xdp + XDP_BUFF_BYTES * tx.batched
    p.store(xdp, size=16, value=buf + XDP_PAD)         # xdp->data, data_end
    p.store(xdp + 24, size=8, value=buf)               # xdp->data_hard_start
    p.store(buf, size=4, value=buflen)                 # hdr->buflen
    tx.offset += buflen
    p.store(tx.net, size=8, value=tx.offset)           # --refcnt_bias, alloc_frag->offset
    tx.batched += 1
    return buf + XDP_PAD
