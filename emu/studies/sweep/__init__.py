"""`emu sweep SPEC.toml`: a grid of scenario runs over scenarios, profiles, scenario options
and profile overrides, run in a local process pool or on a Dask cluster, each point's rows
appended to a results file as soon as it finishes.

spec.py reads and checks the spec into its points, runners.py runs them (run_point is what a
worker runs), results.py writes and reads the results file, table.py reads it back as a table
(SweepResults: the printed table, to_frame()), command.py is the command and its plots. The
names below are the package's interface (cli.py, the tests, Dask's workers).
"""
from emu.studies.sweep.command import cmd, configure, plot_series, write_plots
from emu.studies.sweep.results import (
    open_results,
    point_csv,
    points_done,
    read_results,
    write_parquet,
)
from emu.studies.sweep.runners import result_rows, run_point, run_sweep
from emu.studies.sweep.spec import Point, Spec, _values, canonical, load_spec, point_id
from emu.studies.sweep.table import SweepResults

__all__ = ["Point", "Spec", "SweepResults", "_values", "canonical", "cmd", "configure",
           "load_spec",
           "open_results", "plot_series", "point_csv", "point_id", "points_done",
           "read_results", "result_rows", "run_point", "run_sweep", "write_parquet",
           "write_plots"]
