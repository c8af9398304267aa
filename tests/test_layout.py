"""memmodel.layout: the cache's per-block sections start a host cache line (64 bytes) and S
starts one, so an 8-way set's state is one host line and a 16-way set's two; the other
sections stay packed (memory.n_regions counts the rows between reg and chunk_dir)."""
from memmodel.layout import EXACT, MM, PRIVATE, SHARED, Layout

PER_BLOCK = ("tags", "repl", "ready", "flags")


def test_per_block_sections_start_host_lines_and_the_rest_stay_packed():
    lay = Layout(MM)
    for name in PER_BLOCK:   # odd sizes: packed, every section after the first would be off
        lay.add(name, 13, EXACT, share=PRIVATE, on_line=True)
    lay.add("reg", (3, 7), EXACT, share=SHARED)
    lay.add("chunk_dir", 5, EXACT, share=SHARED)
    S = lay.build()
    assert S.ctypes.data % 64 == 0
    for name in PER_BLOCK:
        assert lay.offsets[name] % 8 == 0, name
        assert lay.view(S, name).shape == (13,)
    assert lay.offsets["chunk_dir"] == lay.offsets["reg"] + 21
    assert len(S) >= lay.offsets["chunk_dir"] + 5
