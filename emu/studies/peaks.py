"""A study's bandwidth against its profile's own physical peak. A value above what the
profile's media or interconnect can move is flagged (`over_peak`, and "OVER PEAK" under the
table), never printed silently: it would mean the model, or the share of the machine a
study's assumptions give its jobs, moves more than the machine can."""


def media_peak(values, media, direction, count=1):
    """(GB/s, text) of `count` regions of media table `media` (resolved profile values)
    reading or writing (`direction` "read" | "write") at their peak."""
    gbps = values["media"][media][f"{direction}_bw_gbps"]
    times = f"{count} x " if count != 1 else ""
    return count * gbps, f"{times}media.{media}.{direction}_bw_gbps ({gbps:g} GB/s)"


def interconnect_peak(values):
    """(GB/s, text) of the interconnect between the sockets."""
    gbps = values["numa"]["remote_bw_gbps"]
    return gbps, f"numa.remote_bw_gbps ({gbps:g} GB/s)"


def check(gbps, *peaks):
    """{"gbps", "peak_gbps", "peak", "over_peak"} of a bandwidth against the lowest of
    `peaks` ((GB/s, text) each: the paths its bytes all take)."""
    peak_gbps, text = min(peaks)
    return {"gbps": gbps, "peak_gbps": peak_gbps, "peak": text, "over_peak": gbps > peak_gbps}


def cell(bandwidth, width, fmt=".2f"):
    """A table cell of a check()'s bandwidth, marked "!" when over the peak."""
    mark = "!" if bandwidth["over_peak"] else ""
    return f"{format(bandwidth['gbps'], fmt) + mark:>{width}}"


def notes(variants, key="bandwidth"):
    """The lines under a table for the variants ({VARIANT: result}) whose check() under `key`
    is over its peak."""
    return [f"OVER PEAK {v}: {d[key]['gbps']:.2f} GB/s is above the profile's own peak of "
            f"{d[key]['peak_gbps']:.2f} GB/s ({d[key]['peak']}); not a physical value"
            for v, d in variants.items() if d[key]["over_peak"]]
