"""The declared costs (docs/design.md "Honesty rules"): work the emulator does not model,
declared per operation in a profile's [software] table and emitted by the studies as WORK.

Each scenario declares the keys it reads, as COSTS, {key: spec} in memmodel.profile_schema's spec
form (type, sourced, minimum, maximum); the fio-like driver declares its own (fio.COSTS), which
the scenarios that use it take. memmodel checks only the table's shape (each entry a sourced
number of ns in range) and keeps the values: a bare Machine(profile) takes any [software]
key. A profile loaded through emu.studies (`load_profile` here) has exactly the keys the
registered scenarios declare, each in its declared range: an unknown key (a typo, a study
removed) or a missing one is an error naming it.
"""
import functools

from memmodel import profile_schema as schema
from memmodel.profile import ProfileError, check_number
from memmodel.profile import load_profile as load_model_profile

# a cost of work per operation, in ns, with its source or assumption
NS = (schema.NUM, True, *schema.NS_RANGE)


@functools.cache
def declared():
    """{key: (spec, names of the scenarios that declare it)}, sorted by key. A key declared
    with two different specs is an error naming both scenarios."""
    from emu.studies.scenarios import registry   # the scenarios load their profiles here
    out = {}
    for name, mod in registry().items():
        for key, spec in getattr(mod, "COSTS", {}).items():
            if key in out and out[key][0] != spec:
                raise ImportError(f"declared cost {key!r}: scenario {name} declares {spec}, "
                                  f"{', '.join(out[key][1])} {out[key][0]}")
            out.setdefault(key, (spec, []))[1].append(name)
    return {k: (spec, tuple(names)) for k, (spec, names) in sorted(out.items())}


def check(profile):
    """`profile` (a loaded memmodel Profile) if its [software] table has exactly the declared
    costs, each in its declared range; else a ProfileError naming the key."""
    where = f"{profile.files[-1]}: software" if profile.files else "software"
    table, costs = profile.values["software"], declared()
    for key in table:
        if key not in costs:
            raise ProfileError(f"{where}.{key}: unknown declared cost (the scenarios declare: "
                               f"{', '.join(costs)})")
    for key, ((kind, _, lo, hi), names) in costs.items():
        if key not in table:
            raise ProfileError(f"{where}.{key}: missing (a declared cost of "
                               f"{', '.join(names)})")
        check_number(f"{where}.{key}", kind, table[key], lo, hi)
    return profile


def load_profile(spec, overrides=None):
    """memmodel.profile.load_profile, with the [software] table checked (`check`)."""
    return check(load_model_profile(spec, overrides))
