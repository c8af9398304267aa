"""A media kind declares its own parameter columns (PARAMS) and per-channel state (ROW, with
its fields' roles) in its own module, and the media's sections are laid out from those
declarations: the shared columns and channel words first, then the kind's own."""
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from emu import Machine
from memmodel import media as md
from memmodel.layout import EXACT, clock
from memmodel.media import CH, MP, N_MPARAMS, G, dram, optane, own_params

OPTANE_FIELDS = ("TAG", "MASK", "LOADED", "STAMP", "READY", "WB", "ARRIVE")


def _roles(m):
    """{flat index in S: Role} of every word of `m`'s state."""
    out = {}
    for idx, role in m.layout.words(m.S):
        out.update(dict.fromkeys(np.asarray(idx).reshape(-1).tolist(), role))
    return out


def test_a_kinds_own_columns_follow_the_shared_ones():
    # dram.py declares no column of its own and optane.py three, so a media row holds the
    # shared columns and three more
    assert dram.PARAMS == "" and optane.PARAMS.split() == ["BUF_READ_LAT", "BUS_OCC_FP", "XPBUF"]
    assert N_MPARAMS == len(MP) + 3
    assert [int(f) for f in own_params(optane.PARAMS)] == [len(MP), len(MP) + 1, len(MP) + 2]


def test_a_profile_without_optane_has_no_xpbuffer_words():
    m = Machine("skylake-ddr4")
    wpq = m.profile.values["media"]["dram"]["wpq_entries"]
    g = m.layout.offsets["mglob"]
    # a row: the 8 words before the WPQ (busy times, head, background), the WPQ's slots
    assert m.layout.shapes["chan"][1] == 8 + wpq == m.S[g + G.CHAN_STRIDE] == m.S[g + G.OWN0]
    assert m.layout.shapes["mp"] == (1, len(MP) + 3)   # optane's three columns, unused


def test_optanes_words_are_laid_out_with_the_roles_optane_declares():
    m = Machine("cascadelake-optane")
    media = m.profile.values["media"]
    names = list(media)
    opt = media["optane"]
    n = opt["xpbuffer_entries"]
    wpq = max(v["wpq_entries"] for v in media.values())
    width = m.layout.shapes["chan"][1]
    own0 = 8 + wpq
    assert width == own0 + 7 * n   # the XPBuffer: seven fields of n entries each
    assert m.S[m.layout.offsets["mglob"] + G.OWN0] == own0
    assert [f.name for f in optane.XP] == list(OPTANE_FIELDS)
    expected = {"STAMP": clock("mem"), "READY": clock("cycles"), "WB": clock("fp", none=True),
                "ARRIVE": clock("cycles", none=True)}
    roles = _roles(m)
    mp = m.layout.view(m.S, "mp")
    chan = m.layout.view(m.S, "chan")
    chan0 = 0
    for i, name in enumerate(names):
        rows = m.layout.offsets["chan"] + width * np.arange(chan0, chan0 + media[name]["channels"])
        own = chan[chan0:chan0 + media[name]["channels"], own0:]
        if name == "optane":
            assert mp[i, len(MP) + 2] == n   # XPBUF
            for f, field in enumerate(OPTANE_FIELDS):
                words = (rows[:, None] + own0 + f * n + np.arange(n)).reshape(-1)
                assert {roles[w] for w in words} == {expected.get(field, EXACT)}, field
            assert (own[:, :n] == -1).all() and (own[:, n:] == 0).all()   # empty entries
        else:   # a DRAM-like kind keeps no words of its own: they stay zero, and EXACT
            assert (mp[i, len(MP):] == 0).all() and (own == 0).all()
            assert {roles[w] for w in (rows[:, None] + np.arange(own0, width)).reshape(-1)} \
                == {EXACT}
        chan0 += media[name]["channels"]


TOY = '''
from memmodel.layout import clock, fields
from memmodel.media import MP, OwnRow, occ_fp, own_params

KINDS = ("toy",)
PROFILE_KEYS = {"toy_entries": ("int", True, 1, 64)}
PARAMS = "A B C D"
OWN = own_params(PARAMS)
REPORTS = ("line_reads",)
T = fields("T", "KEY WHEN")
ROW = OwnRow(T, "toy_entries", {T.WHEN: clock("cycles")}, {T.KEY: -5})


def init_params(p, spec, freq_ghz, read_gbps, write_gbps):
    p[MP.UNIT_BYTES] = 64
    p[MP.RD_OCC_FP] = p[MP.WR_OCC_FP] = occ_fp(64, read_gbps, freq_ghz)
    p[OWN.D] = 7
'''

# Run in a fresh interpreter, on a copy of the package memmodel.media holding the toy kind's
# module too: the media's sections are laid out for a profile whose DRAM is a toy.
LAYOUT = '''
import importlib.util, sys
folder = sys.argv[1]
spec = importlib.util.spec_from_file_location("memmodel.media", folder + "/__init__.py",
                                              submodule_search_locations=[folder])
md = importlib.util.module_from_spec(spec)
sys.modules["memmodel.media"] = md
spec.loader.exec_module(md)
import numpy as np
from memmodel.layout import EXACT, MM, Layout, clock
from memmodel.profile import load_profile
from memmodel.sections import media as sections

assert "toy" in md.KIND_IDS and md.kind_keys("toy") == {"toy_entries": ("int", True, 1, 64)}
assert md.N_MPARAMS == len(md.MP) + 4   # the toy's four columns are the most a kind has
values = load_profile({"profile": {"inherit": "skylake-ddr4"}, "media": {"dram": {
    "kind": "toy", "toy_entries": {"value": 5, "assumption": "a test value"}}}}).values
media = list(values["media"].values())
layout = Layout(MM)
sections.add_sections(layout, media)
S = layout.build()
sections.init_sections(layout, S, media, 2.0, values["numa"])
channels, wpq = media[0]["channels"], media[0]["wpq_entries"]
# a row: 8 words, the WPQ, the toy's two fields of 5 entries
assert layout.shapes["chan"] == (channels, 8 + wpq + 2 * 5), layout.shapes["chan"]
assert layout.shapes["mp"] == (1, len(md.MP) + 4)
assert layout.view(S, "mp")[0, len(md.MP) + 3] == 7
own = layout.view(S, "chan")[:, 8 + wpq:]
assert (own[:, :5] == -5).all() and (own[:, 5:] == 0).all()
roles = {}
for idx, role in layout.words(S):
    roles.update(dict.fromkeys(np.asarray(idx).reshape(-1).tolist(), role))
rows = layout.offsets["chan"] + layout.shapes["chan"][1] * np.arange(channels)
keys = (rows[:, None] + 8 + wpq + np.arange(5)).reshape(-1)
whens = (rows[:, None] + 8 + wpq + 5 + np.arange(5)).reshape(-1)
assert {roles[w] for w in keys} == {EXACT} and {roles[w] for w in whens} == {clock("cycles")}
print("laid out")
'''


def test_a_kind_module_in_the_package_is_found_and_its_declarations_laid_out(tmp_path):
    package = tmp_path / "media"
    shutil.copytree(Path(md.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "toy.py").write_text(TOY)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(LAYOUT), str(package)],
                       capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    assert r.returncode == 0 and r.stdout.split() == ["laid", "out"], r.stderr
