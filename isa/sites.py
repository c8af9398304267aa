"""A program's site table: SITE ops carry indices into its list of names; a machine keeps
one table of names for every program it runs (emu.machine), so the ids are remapped."""
import numpy as np

from isa.ops import COL_IMM, COL_OP, Op


def site_ids(ops, names, ids, id_names):
    """(rows, new ids): ops' SITE rows and, for their ids (indices into `names`), the ids of
    the table `ids` (name -> id), new names added to it and to `id_names` in row order."""
    rows = np.nonzero(ops[:, COL_OP] == Op.SITE)[0] if names else np.zeros(0, dtype=np.int64)
    imm = ops[rows, COL_IMM]
    used, first = np.unique(imm, return_index=True)
    table = np.zeros(len(names), dtype=np.int64)
    for i in used[np.argsort(first)]:
        name = names[i]
        sid = ids.get(name)
        if sid is None:
            sid = ids[name] = len(id_names)
            id_names.append(name)
        table[i] = sid
    return rows, table[imm]


def remap_sites(ops, names, ids, id_names):
    """Rewrite the site ids of ops' SITE rows (indices into `names`) to ids of the table
    `ids` (name -> id), adding unknown names to it and to the list `id_names`. Returns a
    copy of ops if any row changed, else ops itself."""
    rows, new = site_ids(ops, names, ids, id_names)
    if np.array_equal(ops[rows, COL_IMM], new):
        return ops
    ops = ops.copy()
    ops[rows, COL_IMM] = new
    return ops
