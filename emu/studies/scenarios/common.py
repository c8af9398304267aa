"""What several scenarios share: the memory map of a process beside the kernel, the table
of cycles per function."""
from memmodel.profile import ProfileError

USER_BYTES = 1 << 30


def with_user_region(values):
    """The profile's memory map with the first GiB of node 0's first supervisor DRAM region
    made a user region named "user0" (the user process's memory); the rest stays the
    kernel's."""
    regions = [dict(r) for r in values["region"]]
    home = next((r for r in regions if values["media"][r["media"]]["persistence"] == "none"
                 and r["node"] == 0 and r["privilege"] == "supervisor"), None)
    if home is None or home["size_bytes"] <= 2 * USER_BYTES:
        raise ProfileError("the scenario needs a supervisor DRAM region on node 0 of more than "
                           "2 GiB")
    user = dict(home, name="user0", size_bytes=USER_BYTES, privilege="user")
    home["base"] += USER_BYTES
    home["size_bytes"] -= USER_BYTES
    return regions + [user]


def functions_table(variants, key, width, fmt=".1f", labels=None):
    """Rows of a per-function cycles table: one row per function in `variants[v][key]`
    (in order of first appearance), one column per variant (headed by `labels`)."""
    names = []
    for d in variants.values():
        names += [n for n in d[key] if n not in names]
    lines = [f"  {'function':<26}" + "".join(f"{v:>{width}}" for v in labels or variants)]
    for n in names:
        lines.append(f"  {n:<26}" + "".join(f"{d[key].get(n, 0):>{width}{fmt}}"
                                          for d in variants.values()))
    return lines
