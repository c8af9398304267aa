"""Instruction set: opcodes, op-array layout, the Program builder and trace readers."""
from isa.ops import Op
from isa.program import Program, ProgramError

__all__ = ["Op", "Program", "ProgramError"]
