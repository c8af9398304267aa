"""`emu validate`: the microbenchmarks of docs/hardware.md that the emulator can express, each
run on the shipped profile of the machine it was measured on (or the closest one, named in
the row's source), measured against emulated. docs/validation.md has the table, the method
of each benchmark and why the known gaps are what they are.

A row's benchmark mirrors the published method (docs/validation.md "Method") and gets a
fresh timing-only Machine. Its ratio (emulated / measured) should lie within BAND; a row
outside it is a known gap only if KNOWN_GAPS documents the range it falls in, with a reason.
`python -m emu.studies.validate --suggest-gaps` prints KNOWN_GAPS for the rows as they
are now (after a change of the timing model).

The package by concern: rows.py the measured values with their sources and BAND; gaps.py
REASONS and KNOWN_GAPS; benchmarks.py the microbenchmark programs the rows run; results.py
running them, the table, --json, the markdown of docs/validation.md and --suggest-gaps;
figures.py the plots of --plot; __main__.py `python -m emu.studies.validate`.
"""
from emu.studies.validate.figures import plot_name, write_plots
from emu.studies.validate.results import (
    Result,
    markdown,
    report,
    run_row,
    run_rows,
    status,
    suggest_gaps,
    summary,
    table,
)
from emu.studies.validate.gaps import KNOWN_GAPS, REASONS
from emu.studies.validate.rows import BAND, PREFETCHERS_OFF, ROWS, Row, profiles, select

__all__ = ["BAND", "KNOWN_GAPS", "PREFETCHERS_OFF", "REASONS", "ROWS", "Result", "Row",
           "markdown", "plot_name", "profiles", "report", "run_row", "run_rows", "select",
           "status", "suggest_gaps", "summary", "table", "write_plots"]
