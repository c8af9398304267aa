"""The one decorator for compiled code.

`_nrt=False`: compiled code never allocates (every array comes from Python), so numba's
reference counting is not needed; with it, each call that passes the state NamedTuples
pays an atomic incref/decref per array (measured: ~300 ns vs ~30 ns per call).
"""
from numba import njit

compiled = njit(cache=True, _nrt=False)

# Tiny hot helpers are inlined into their callers at numba IR level: a call that is not
# inlined costs more than their bodies.
inlined = njit(cache=True, _nrt=False, inline="always")
