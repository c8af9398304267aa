"""Instruction set: opcodes, op-array layout, the Program builder and trace readers."""
from isa.ops import Op
from isa.program import EFAULT, LOADED, Program, ProgramError, Ret

__all__ = ["EFAULT", "LOADED", "Op", "Program", "ProgramError", "Ret"]
