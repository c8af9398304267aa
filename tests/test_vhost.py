"""vhost-net TX metadata access (kernels/vhost.py) and the vhost-tx scenario.

Expected sequences are the kernel's (docs/kernel-paths.md §4.2-4.3, written out by hand): per
packet the avail ring entry (2 B), the descriptor (16 B) and translate_desc; per batch the
avail index, the used elements, used->idx, smp_mb and used_event."""
import json

import numpy as np
import pytest

from emu.studies.cli import main
from emu.studies.scenarios import vhost_tx
from isa import Op, Program
from isa.ops import COL_FLAGS, FLAG_DEPENDENT
from kernels import vhost

RING = dict(base=0x1000000, num=256, vq=0x100, umem=0x200, maps=0x300, stack=0x400)
WALK = ["LOAD"] * 7   # translate_desc's memory-table walk (vq->dev .. the node's two lines)
DESC_FETCH = {   # vhost_get_vq_desc of a packet whose avail index is cached
    "uaccess": ["LOAD",                                     # vq->last_avail_idx
                "STAC", "LFENCE", *WALK, "LOAD", "CLAC",    # __get_user(avail->ring[i]); the
                                                            # walk issues once the LFENCE lets it
                "STAC", "CAREFUL_COPY", "CLAC",             # __copy_from_user(desc, 16)
                "STORE",                                    # translate_desc: vq->iov[0]
                "STORE"],                                   # last_avail_idx++
    "vmap": ["LOAD", *WALK, "LOAD", "LOAD", "LOAD", "CAREFUL_COPY", "STORE", "STORE"],
    "checked": ["LOAD", *WALK, "BRANCH", "INDEX_MASK", "STAC", "LOAD", "CLAC",
                "BRANCH", "STAC", "CAREFUL_COPY", "CLAC", "STORE", "STORE"],
}


def names(p):
    return [Op(o).name for o in p.ops[:, 0] if o != Op.SITE]


@pytest.mark.parametrize("path", vhost.PATHS)
def test_descriptor_fetch_sequence(path):
    ring = vhost.Ring(path, **RING, desc_const=False)
    ring.avail_idx = 5                      # the cached avail index still has packets
    p = Program()
    assert vhost.vhost_get_vq_desc(p, ring) == 0
    assert names(p) == DESC_FETCH[path]
    assert ring.last_avail_idx == 1
    flags = {int(r[1]): int(r[COL_FLAGS]) for r in p.ops if r[0] == Op.LOAD}   # addr -> flags
    # the walk's first load (vq->dev) waits for nothing; the descriptor copy waits for the
    # avail entry's data, which is the last load before it (vmap: its map pointer is ahead)
    assert not flags[RING["vq"] + 64] & FLAG_DEPENDENT
    i = int(np.flatnonzero(p.ops[:, 0] == Op.CAREFUL_COPY)[0])
    assert p.ops[i, COL_FLAGS] & FLAG_DEPENDENT
    prev = [r for r in p.ops[:i] if r[0] == Op.LOAD][-1]
    assert int(prev[1]) == RING["base"] + 4096 + 4


def test_inlined_descriptor_read_is_the_16_byte_form_with_its_lfence():
    # raw_copy_from_user case 16: __uaccess_begin_nospec (STAC, LFENCE), two 8-byte moves,
    # CLAC; the walk issues after that LFENCE, which waited for the avail entry
    ring = vhost.Ring("uaccess", **RING)
    ring.avail_idx = 5
    p = Program()
    vhost.vhost_get_vq_desc(p, ring)
    assert names(p) == ["LOAD", "STAC", "LFENCE", "LOAD", "CLAC",
                        "STAC", "LFENCE", *WALK, "CAREFUL_COPY", "CLAC", "STORE", "STORE"]
    assert names(p).count("LFENCE") == 2
    for path in ("vmap", "checked"):   # no constant form there: unchanged by desc_const
        a, b = Program(), Program()
        vhost.vhost_get_vq_desc(a, vhost.Ring(path, **RING, avail_idx=5, desc_const=True))
        vhost.vhost_get_vq_desc(b, vhost.Ring(path, **RING, avail_idx=5, desc_const=False))
        assert names(a) == names(b) == DESC_FETCH[path]


def test_avail_index_is_read_once_a_batch():
    ring = vhost.Ring("uaccess", **RING)
    p = Program()
    for _ in range(vhost.VHOST_NET_BATCH + 1):
        vhost.vhost_get_vq_desc(p, ring)
    lfences = names(p).count("LFENCE")
    # one __get_user of avail->idx per batch; per packet one of the ring entry and the
    # descriptor's 16-byte form
    assert lfences == 2 * (vhost.VHOST_NET_BATCH + 1) + 2


def test_completion_sequence_splits_at_the_wrap():
    ring = vhost.Ring("uaccess", **RING)
    ring.used_idx = 250
    p = Program()
    vhost.vhost_add_used_n(p, ring, list(range(10)))
    vhost.vhost_signal(p, ring)
    assert names(p) == ["STAC", "CAREFUL_COPY", "CLAC",        # 6 elements to the end
                        "STAC", "CAREFUL_COPY", "CLAC",        # 4 from the start
                        "STAC", "STORE", "CLAC",               # __put_user(used->idx)
                        "LOCK_RMW", "STAC", "LFENCE", "LOAD", "CLAC"]   # avail->flags
    assert [int(n) for n in p.ops[p.ops[:, 0] == Op.CAREFUL_COPY, 2]] == [48, 32]
    # no EVENT_IDX (virtio-user does not negotiate it): vhost_notify reads avail->flags
    assert int(p.ops[p.ops[:, 0] == Op.LOAD][-1, 1]) == RING["base"] + 4096


@pytest.mark.parametrize("call_ctx,event_idx,expected", [
    (False, False, []),                              # no call eventfd: vhost_signal does nothing
    (True, True, ["LOCK_RMW"]),                      # EVENT_IDX, first signal: no used_event
    (True, False, ["LOCK_RMW", "STAC", "LFENCE", "LOAD", "CLAC"]),
])
def test_vhost_signal_runs_vhost_notify_only_with_a_call_eventfd(call_ctx, event_idx, expected):
    ring = vhost.Ring("uaccess", **RING, call_ctx=call_ctx, event_idx=event_idx)
    p = Program()
    vhost.vhost_signal(p, ring)
    assert names(p) == expected
    if event_idx:   # the next signal reads used_event, past the avail ring
        vhost.vhost_signal(p, ring)
        assert names(p)[-4:] == ["STAC", "LFENCE", "LOAD", "CLAC"]
        assert int(p.ops[p.ops[:, 0] == Op.LOAD][-1, 1]) == RING["base"] + 4096 + 4 + 2 * 256


@pytest.mark.parametrize("used_idx,count,expected", [
    # vhost.c __vhost_add_used_n: count == 1 -> vhost_put_user of id, then of len (4 B each)
    (0, 1, ["STAC", "STORE", "CLAC", "STAC", "STORE", "CLAC"]),
    # one element before the wrap, two after: put/put, then one copy of 16 B
    (255, 3, ["STAC", "STORE", "CLAC", "STAC", "STORE", "CLAC", "STAC", "CAREFUL_COPY", "CLAC"]),
    # two before, one after
    (254, 3, ["STAC", "CAREFUL_COPY", "CLAC", "STAC", "STORE", "CLAC", "STAC", "STORE", "CLAC"]),
])
def test_one_used_element_is_two_put_user(used_idx, count, expected):
    ring = vhost.Ring("uaccess", **RING)
    ring.used_idx = used_idx
    p = Program()
    vhost.vhost_add_used_n(p, ring, [7, 8, 9][:count])
    assert names(p) == expected + ["STAC", "STORE", "CLAC"]   # then used->idx
    stores = p.ops[p.ops[:, 0] == Op.STORE]
    first = RING["base"] + 8192 + 4 + 8 * (used_idx % 256)
    assert (int(stores[0, 1]), int(stores[0, 2])) == (first if count == 1 or used_idx == 255
                                                      else RING["base"] + 8192 + 4, 4)
    assert int(stores[-1, 1]) == RING["base"] + 8192 + 2 and ring.used_idx == used_idx + count


@pytest.mark.parametrize("variant", ["smap=on,path=uaccess", "smap=on,path=vmap",
                                     "smap=off,path=checked"])
def test_one_packet_moves_the_descriptor_and_the_payload(variant):
    m, ring, bufs, frags = vhost_tx.build("broadwell-ddr4", {}, variant)
    m.write(bufs + 3 * vhost_tx.BUF_STRIDE, bytes(64))   # the guest writes it in the batch
    ring.last_avail_idx = ring.avail_idx = 3
    m.run(vhost_tx.packets_program(m, ring, bufs, frags, 0, vhost.VHOST_NET_BATCH, 64))
    # the batch used heads 3..66; the last descriptor (addr, len) read sits in the stack line
    desc = m.read(ring.stack, 16)
    # the guest pushed the 12-byte vnet header in front of the frame: one descriptor for both
    assert int.from_bytes(desc[:8], "little") == bufs + 66 * vhost_tx.BUF_STRIDE - 12
    assert int.from_bytes(desc[8:12], "little") == 12 + 64
    # packets are built one buflen apart in the 32 KiB frag: the header at hdr->gso (offset
    # 4), the frame at pad = ALIGN(64 + 256 + 12, 64) = 384; buflen = 320 + ALIGN(76 + 384,
    # 64) = 832, so 39 fit; packet 39 starts the frag again (the refill's new page)
    assert m.read(frags + 38 * 832 + 384, 64) == vhost.guest_payload(3 + 38, 64)
    assert m.read(frags + 24 * 832 + 384, 64) == vhost.guest_payload(3 + 63, 64)
    assert m.read(frags + 4, 12) == bytes(12)
    assert int.from_bytes(m.read(frags, 4), "little") == 832
    # the guest's writes reached the host as cache-to-cache transfers: each payload line and
    # each of the 16 descriptor lines (4 descriptors a line) of the batch, at least
    assert m.stats()["levels"]["llc"]["peer_transfers"] >= 64 + 16
    assert ring.used_idx == vhost.VHOST_NET_BATCH
    assert [int.from_bytes(m.read(ring.used_ring(k), 4), "little") for k in (0, 63)] == [3, 66]
    assert m.read(ring.used_ring(0) - 2, 2) == (64).to_bytes(2, "little")   # used->idx


def test_scenario_json_names_and_order(capsys):
    assert main(["run", "vhost-tx", "--packets", "128", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    v = out["variants"]
    assert out["scenario"] == "vhost-tx" and list(v) == list(vhost_tx.VARIANTS)
    assert set(vhost_tx.VARIANTS) == {f"smap={s},path={p}" for s in ("on", "off")
                                      for p in ("uaccess", "vmap", "checked")}
    for s in ("on", "off"):
        # vmap: no STAC/CLAC and no LFENCE on the metadata
        assert v[f"smap={s},path=vmap"]["mpps"] >= v[f"smap={s},path=uaccess"]["mpps"]
    # checked's STAC/CLAC (not serializing) and index mask, and vmap's map-pointer loads, are
    # a few cycles off the chain of transfers a packet waits for: the two within 0.5%
    assert v["smap=on,path=vmap"]["mpps"] == pytest.approx(v["smap=on,path=checked"]["mpps"],
                                                           rel=5e-3)
    for path in vhost.PATHS:   # SMAP only adds the STAC/CLAC costs
        assert v[f"smap=on,path={path}"]["ns_per_packet"] > v[f"smap=off,path={path}"]["ns_per_packet"]
    d = v["smap=on,path=uaccess"]
    assert d["mpps"] == pytest.approx(1e3 / d["ns_per_packet"])


def test_a_partial_last_batch_runs_exactly_the_packets_asked():
    m, ring, bufs, frags = vhost_tx.build("broadwell-ddr4", {}, "smap=on,path=uaccess")
    batch = vhost.VHOST_NET_BATCH
    m.run(vhost_tx.packets_program(m, ring, bufs, frags, 0, batch, 64))
    m.run(vhost_tx.packets_program(m, ring, bufs, frags, batch, batch + 1, 64))
    assert ring.last_avail_idx == ring.used_idx == 2 * batch + 1   # not rounded up to 3 batches
    assert m.read(ring.used_ring(0) - 2, 2) == (2 * batch + 1).to_bytes(2, "little")   # used->idx
    assert int.from_bytes(m.read(ring.used_ring(2 * batch), 4), "little") == 2 * batch


def test_table_header_states_the_packets_and_size_run(capsys):
    assert main(["run", "vhost-tx", "--packets", "65", "--pkt-bytes", "100"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "65 packets of 100 B" in head and "64 B packets" not in head, head


def test_pkt_bytes_is_bounded_by_the_guest_buffer(capsys):
    top = vhost_tx.BUF_STRIDE - 12          # the frame and its 12-byte vnet header
    assert vhost_tx.MAX_PKT_BYTES == top
    assert main(["run", "vhost-tx", "--pkt-bytes", str(top + 1)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--pkt-bytes" in err and str(top) in err, err
    m, ring, bufs, frags = vhost_tx.build("broadwell-ddr4", {}, "smap=off,path=vmap")
    with pytest.raises(ValueError, match=str(top)):
        vhost_tx.packets_program(m, ring, bufs, frags, 0, 1, top + 1)
    # at the limit the buffers of a batch tile without overlap: each keeps its own payload
    m.run(vhost_tx.packets_program(m, ring, bufs, frags, 0, vhost.VHOST_NET_BATCH, top))
    for head in range(vhost.VHOST_NET_BATCH):
        assert (m.read(bufs + vhost_tx.BUF_STRIDE * head, top)
                == vhost.guest_payload(head, top)), head


def test_build_xdp_copies_the_header_then_the_frame():
    # net.c vhost_net_build_xdp: copy_page_from_iter of sock_hlen (12) bytes, gso->flags read
    # back, copy_page_from_iter of the rest: two copyins, each access_ok + STAC/copy/CLAC
    tx = vhost.TxBuffers(net=0x100, xdp=0x1000, frags=0x10000)
    p = Program()
    assert vhost.vhost_net_build_xdp(p, tx, 0x2000000 - 12, 12 + 64) == 0x10000 + 384
    assert names(p) == ["BRANCH", "STAC", "CAREFUL_COPY", "CLAC",    # the vnet header
                        "LOAD", "LOAD",                              # gso->flags, frag
                        "BRANCH", "STAC", "REP_MOVSB", "CLAC",       # the 64-byte frame
                        "STORE", "STORE", "STORE", "STORE"]          # xdp_buff, buflen, frag
    copies = p.ops[np.isin(p.ops[:, 0], [Op.CAREFUL_COPY, Op.REP_MOVSB])]
    assert [(int(c[1]), int(c[2])) for c in copies] == [(0x10000 + 4, 12), (0x10000 + 384, 64)]
    assert tx.offset == 832 and tx.batched == 1
    # the 40th packet of 832 bytes would pass the 32 KiB frag: a new page (offset 0)
    tx.offset = 39 * 832
    vhost.vhost_net_build_xdp(p, tx, 0x2000000 - 12, 12 + 64)
    assert tx.offset == 832
    with pytest.raises(ValueError, match="page"):
        vhost.vhost_net_build_xdp(p, tx, 0x2000000, 4096)


@pytest.mark.parametrize("head", [0, 1, 37, 255])
@pytest.mark.parametrize("n", [1, 63, 64, 65, 2048])
def test_guest_payload_is_the_per_byte_pattern(head, n):
    assert vhost.guest_payload(head, n) == bytes((head * 7 + i) & 0xFF for i in range(n))


def test_the_smap_cost_is_reported_under_every_reading_of_stac_clac(capsys):
    # STAC/CLAC have no Intel source: the run brackets the SMAP cost a packet over the
    # profile's assumption, a flags-write cost and serializing. Costlier or serializing
    # STAC/CLAC only add work with SMAP on, so neither reading can lower that cost, and
    # with SMAP off (STAC/CLAC patched out) every reading runs the same packets
    assert main(["run", "vhost-tx", "--packets", "640", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    own = vhost_tx.derived({v: d["mpps"] for v, d in res["variants"].items()})
    for name in ("flag write", "serializing"):
        r = res["readings"][name]["mpps"]
        for path in vhost.PATHS:
            key = f"SMAP ns/packet, path={path}"
            assert r[key] > own[key]
            assert r[f"smap=off,path={path}"] == res["variants"][f"smap=off,path={path}"]["mpps"]
    lo, hi = res["bracket"]["SMAP ns/packet, path=uaccess"]
    assert lo == pytest.approx(own["SMAP ns/packet, path=uaccess"]) and hi > lo


@pytest.mark.parametrize("variant", ["smap=on,path=uaccess", "smap=off,path=vmap"])
def test_a_guest_core_feeds_the_host_as_the_peer_ops_do(variant):
    """The guest's vCPU as core 1: its stores reach the host through the caches (x86-TSO at
    their drain, MESI transfers), the host polls avail->idx for each batch, the guest waits
    for used->idx to reclaim a batch. The frames the host copied are the guest's, every
    packet is used, the host's reads of the guest's lines are HITM transfers as with the
    peer ops, and over a few batches (the guest's lines still in its caches: over many, its
    L2 writes most back first, docs/scenarios.md §2) the host's time per packet agrees with
    the peer-op model's (the guest keeps ahead, so the host never waits for it; what differs
    is the poll's few ops a batch): within 3%."""
    n, batch = 4 * vhost.VHOST_NET_BATCH, vhost.VHOST_NET_BATCH
    core = vhost_tx.run_variant("broadwell-ddr4", {}, variant, n, 64, guest="core")
    peer = vhost_tx.run_variant("broadwell-ddr4", {}, variant, n, 64, guest="peer")
    assert core["ns_per_packet"] == pytest.approx(peer["ns_per_packet"], rel=0.03)
    m, ring, bufs, frags = vhost_tx.build("broadwell-ddr4", {}, variant, guest="core")
    r = m.run(vhost_tx.packets_program(m, ring, bufs, frags, 0, batch, 64))
    assert m.read(frags + 38 * 832 + 384, 64) == vhost.guest_payload(38, 64)
    assert m.read(ring.used_ring(0) - 2, 2) == batch.to_bytes(2, "little")   # used->idx
    host = m.stats()["cores"][0]["levels"]["llc"]
    assert host["peer_transfers"] >= batch + 16   # each payload line, each descriptor line
    assert r.cores[1].ops > 0
