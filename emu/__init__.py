"""Emulator: the compiled core and the Machine facade."""
from emu.machine import EmuFault, Machine, RunResult, UnmappedAccess

__all__ = ["EmuFault", "Machine", "RunResult", "UnmappedAccess"]
