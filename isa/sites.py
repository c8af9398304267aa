"""A program's site table: SITE ops carry indices into its list of names; a machine keeps
one table of names for every program it runs (emu.machine). Program.extend appends another
program's ops, whose SITE rows are remapped to the indices of its own."""
import numpy as np

from isa.ops import COL_IMM, COL_OP, Op


def site_id(ids, id_names, name):
    """The id of site `name` in the table `ids` (name -> id), added to it and to the list
    `id_names` if new."""
    sid = ids.get(name)
    if sid is None:
        sid = ids[name] = len(id_names)
        id_names.append(name)
    return sid


def remap_sites(ops, names, ids, id_names):
    """Rewrite the site ids of ops' SITE rows (indices into `names`), in place, to ids of the
    table `ids` (name -> id), adding unknown names to it and to the list `id_names` in row
    order."""
    rows = np.nonzero(ops[:, COL_OP] == Op.SITE)[0] if names else np.zeros(0, dtype=np.int64)
    imm = ops[rows, COL_IMM]
    used, first = np.unique(imm, return_index=True)
    table = np.zeros(len(names), dtype=np.int64)
    for i in used[np.argsort(first)]:
        table[i] = site_id(ids, id_names, names[i])
    ops[rows, COL_IMM] = table[imm]
