"""Results as pandas DataFrames: the one home of the pandas import, made only when a frame is
asked for (`pip install 'cacheline-emu[pandas]'`). `Stats` is what Machine.stats() returns, a
dict with `to_frame()`; RunProfile and the sweep's results have theirs (emu.profiler,
emu.studies.sweep)."""

INSTALL = "pip install 'cacheline-emu[pandas]'"


def pandas():
    """The pandas module, or an ImportError saying how to install it."""
    try:
        import pandas
    except ImportError:
        raise ImportError(f"to_frame() needs pandas: {INSTALL}") from None
    return pandas


def wide(rows, index_name):
    """A DataFrame of {name: {column: value}}: one row per name (the index, `index_name`),
    one column per key, in order of first appearance."""
    pd = pandas()
    columns = list(dict.fromkeys(k for d in rows.values() for k in d))
    return pd.DataFrame([[d.get(c) for c in columns] for d in rows.values()],
                        index=pd.Index(list(rows), name=index_name), columns=columns)


class Stats(dict):
    """Machine.stats(): {"cycles", "seconds", "levels", "media", "regions", "sites"} (and
    "cores", each core's levels and sites, on a machine of several), a plain dict to every
    reader, with to_frame()."""

    SECTIONS = {"levels": "level", "media": "media", "regions": "region", "sites": "site"}

    def to_frame(self, section=None):
        """One section ("levels", "media", "regions" or "sites") as a DataFrame, one row per
        level, media, region or site and one column per counter (a counter a row has not,
        as a media kind's own, is missing: NaN); without `section`, every counter of every
        section in long form, columns section, name, counter, value (the top-level cycles
        and seconds under section "machine", name "")."""
        if section is not None:
            if section not in self.SECTIONS:
                raise ValueError(f"to_frame: no section {section!r} (sections: "
                                 f"{', '.join(self.SECTIONS)})")
            return wide(self[section], self.SECTIONS[section])
        records = [("machine", "", k, self[k]) for k in ("cycles", "seconds")]
        for sec in self.SECTIONS:
            records += [(sec, name, k, v) for name, d in self[sec].items() for k, v in d.items()]
        return pandas().DataFrame(records, columns=["section", "name", "counter", "value"])
