"""docs/machine.md's "Counters" table and the code name the same counters in the same places:
every key `Machine.stats()` and `Machine.run_profile()` return, on every shipped profile
after a program with every op kind. A counter added without its row (or a row left after
its counter is gone) fails here."""
import dataclasses
import os
import re


from emu import Machine
from emu.profiler import HotLine
from isa import Op, Program
from memmodel.profile import shipped_profiles

DOC = os.path.join(os.path.dirname(__file__), "..", "docs", "machine.md")
# the sections of stats() that hold counters per level, media, region and site
SECTIONS = ("levels", "media", "regions", "sites")


def every_op(m):
    """A program with each op kind once or more, over every region."""
    p = Program()
    bases = [r["base"] for r in m.regions.values()]
    a = bases[0] + 0x10000
    with p.function("f"):
        for b in bases:
            p.load(b + 0x2000).movnt(b + 0x3000, b"x" * 8).store(b + 0x4000, b"y" * 8)
        p.clflush(a).clflushopt(a + 64).clwb(a + 128).sfence().lfence().mfence()
        p.stac().clac().rep_movsb(a + 4096, a, 300).nt_copy(a + 8192, a, 300)
        p.careful_copy(a + 12288, a, 300).flush_range(a + 4096, 300).work(10)
        p.load(a, dependent=True)
        with p.guarded(5, 10):
            p.load(a + 256)
        p.index_mask(3, 8).load_masked(a + 24, a)
        p.peer_write(a + 512, b"z" * 8).peer_read(a + 1024).lock_rmw(a + 1536, b"w" * 8)
        p.wait(a + 1536, int.from_bytes(b"w" * 8, "little"))   # found at once: one core
        p.sfence()
    assert {Op(int(k)) for k in p.ops[:, 0]} == set(Op), "a new op kind: add it here"
    return p


def code_pairs():
    """{(place, counter)} of the code, place as the table's "in" column names it."""
    out = set()
    for name in shipped_profiles():
        m = Machine(name, hot_lines=1 << 10)
        m.run(every_op(m))
        s = m.stats()
        out |= {("stats", k) for k in s if k not in SECTIONS}
        for section in ("levels", "regions", "sites"):
            out |= {(section, k) for d in s[section].values() for k in d}
        for media, d in s["media"].items():
            kind = m.profile.values["media"][media]["kind"]
            out |= {(f"media ({kind})", k) for k in d}
        p = m.run_profile()
        out |= {("profile.sites", k) for d in p.sites.values() for k in d}
        out |= {("profile.regions", k) for d in p.regions.values() for k in d}
        assert p.hot, name
        out |= {("profile.hot_lines", f.name) for f in dataclasses.fields(HotLine)}
        j = p.to_json()
        out |= {("profile", k) for k, v in j.items() if isinstance(v, int)}
        # a machine of two sockets: the counters of the misses the other socket served
        m = Machine(name, cores=2, sockets=2)
        m.run([every_op(m), Program().load(m.regions[m.region_names[0]]["base"])])
        s = m.stats()
        out |= {("remote", k) for k in s["remote"]}
        assert all(set(c["remote"]) == set(s["remote"]) for c in s["cores"])
        # and of several cores: the snoop filter's (memmodel._snoopfilter)
        out |= {("coherence", k) for k in s["coherence"]}
        assert all(set(c["coherence"]) == set(s["coherence"]) for c in s["cores"])
    return out


def doc_pairs(kinds):
    """{(place, counter)} of the table; "media" stands for every media kind in `kinds`."""
    text = open(DOC).read()
    table = text.split("\n## Counters\n", 1)[1].split("\n## ", 1)[0]
    out = set()
    for row in table.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if not re.fullmatch(r"`[a-z0-9_]+`(, `[a-z0-9_]+`)*", cells[0]):
            continue   # the heading, the rule, or not a table row
        for place in (p.strip() for p in cells[-1].split(",")):
            places = [f"media ({k})" for k in kinds] if place == "media" else [place]
            out |= {(pl, name) for pl in places for name in re.findall(r"[a-z0-9_]+", cells[0])}
    return out


def test_the_documented_counters_are_the_code_s():
    code = code_pairs()
    kinds = sorted({p[len("media ("):-1] for p, _ in code if p.startswith("media (")})
    doc = doc_pairs(kinds)
    assert sorted(code - doc) == [], "counters the code has and docs/machine.md does not"
    assert sorted(doc - code) == [], "counters docs/machine.md has and the code does not"


def test_a_table_row_is_read():
    """The parser sees the rows (a format change would otherwise pass with two empty sets)."""
    assert ("sites", "line_reads") in doc_pairs(["dram"])
    assert ("media (dram)", "line_reads") in doc_pairs(["dram"])
