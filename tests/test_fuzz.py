"""Random programs and facade calls must never crash the interpreter (issue 12).

tests/fuzz_child.py runs them in a child process, so that a crash (numba does not
bounds-check: a bad index is a SIGSEGV, not an IndexError) fails this test instead of
ending the test run. EMU_FUZZ_EXAMPLES and EMU_FUZZ_SEED choose how many examples and
which; .ci/run runs more of them with a fresh seed.
"""
import os
import signal
import subprocess
import sys
from pathlib import Path

CHILD = Path(__file__).with_name("fuzz_child.py")


def test_random_programs_and_facade_calls_never_crash():
    examples = os.environ.get("EMU_FUZZ_EXAMPLES", "300")
    seed = os.environ.get("EMU_FUZZ_SEED", "0")
    r = subprocess.run([sys.executable, str(CHILD), examples, seed], capture_output=True,
                       text=True, timeout=900, cwd=CHILD.parent.parent)
    how = (f"killed by {signal.Signals(-r.returncode).name}" if r.returncode < 0
           else f"exit status {r.returncode}")
    assert r.returncode == 0, (f"{how} (rerun: python {CHILD} {examples} {seed})\n"
                               f"{r.stderr[-4000:]}")
    assert r.stdout.split() == ["examples", examples]
