"""Named studies (shared/scenarios.md): `emu run NAME`. Each module defines NAME, a
`configure(parser)` for its options and `run(args) -> result dict` in the interface format
{"scenario": NAME, "profile": ..., "variants": {VARIANT: {METRIC: value}}, ...}, plus
`table(result) -> str`."""
from emu.scenarios import dax_memcpy

SCENARIOS = {m.NAME: m for m in (dax_memcpy,)}
