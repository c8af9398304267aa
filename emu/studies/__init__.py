"""The studies: everything a user runs (the `emu` command, the scenarios, the fio-like
driver, the Spectre gadgets, the demo). They sit above the Machine facade and may import
everything below it; nothing below imports them.

`emu.studies.run(NAME, ...)` runs a named study from Python, without a command line, and
returns what `emu run NAME --json` prints (emu.studies.api)."""
from emu.studies.api import run

__all__ = ["run"]
