"""Emulator: the compiled core and the Machine facade."""
from emu.machine import Machine
from emu.results import (
    EmuFault,
    MachineCheck,
    MemoryLimitFault,
    PrivilegeFault,
    RunResult,
    SmapFault,
    UnmappedAccess,
    WaitForever,
)

__all__ = ["EmuFault", "Machine", "MachineCheck", "MemoryLimitFault", "PrivilegeFault",
           "RunResult", "SmapFault", "UnmappedAccess", "WaitForever"]
