"""The opcodes as plain ints, for comparisons in compiled code."""
from isa.ops import Op

LOAD, STORE, MOVNT = int(Op.LOAD), int(Op.STORE), int(Op.MOVNT)
CLFLUSH, CLFLUSHOPT, CLWB = int(Op.CLFLUSH), int(Op.CLFLUSHOPT), int(Op.CLWB)
SFENCE, LFENCE, MFENCE = int(Op.SFENCE), int(Op.LFENCE), int(Op.MFENCE)
STAC, CLAC = int(Op.STAC), int(Op.CLAC)
REP_MOVSB, NT_COPY, CAREFUL_COPY = int(Op.REP_MOVSB), int(Op.NT_COPY), int(Op.CAREFUL_COPY)
FLUSH_RANGE, WORK, SITE = int(Op.FLUSH_RANGE), int(Op.WORK), int(Op.SITE)
BRANCH, INDEX_MASK = int(Op.BRANCH), int(Op.INDEX_MASK)
PEER_WRITE, PEER_READ = int(Op.PEER_WRITE), int(Op.PEER_READ)
