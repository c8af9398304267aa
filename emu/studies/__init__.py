"""The studies: everything a user runs (the `emu` command, the scenarios, the fio-like
driver, the Spectre gadgets, the demo). They sit above the Machine facade and may import
everything below it; nothing below imports them."""
