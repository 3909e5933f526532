#!/usr/bin/env python3
"""Another HdrHistogram implementation reads latlab's histograms.

Decodes every stream's histogram in the Run files given as arguments (by default
docs/example-run.json) with the Python HdrHistogram library (package `hdrhistogram`)
and checks it against what latlab itself reported:
the total count equals the stream's samples, the reported percentiles are identical,
and the exact maximum falls in the histogram's top bucket. Run by scripts/test.

latlab ranks percentiles by nearest rank, ceil(p/100 * n), as Java's HdrHistogram
does (2.1.10 on); the Python library rounds p/100 * n to the nearest integer instead,
which differs when the rank is fractional. The check therefore walks the decoded buckets itself with
latlab's rule, which compares the histograms' contents, not the two conventions.
"""
import json
import math
import pathlib
import sys

from hdrh.histogram import HdrHistogram

root = pathlib.Path(__file__).resolve().parents[3]
paths = [pathlib.Path(p) for p in sys.argv[1:]] or [root / "docs" / "example-run.json"]
streams = [(path, s) for path in paths for s in json.loads(path.read_text())["streams"]]
failures = []
for path, stream in streams:
    hist = HdrHistogram.decode(stream["histogram"]["data"])
    label = f"{path.name} cpu {stream['cpu']}"
    if hist.get_total_count() != stream["samples"]:
        failures.append(f"{label}: total {hist.get_total_count()} != samples {stream['samples']}")
    stats = stream["stats"]
    buckets = [(v.value_iterated_to, v.count_at_value_iterated_to) for v in hist.get_recorded_iterator()]
    for rank in ["50", "90", "99", "99.9"]:
        wanted = max(1, math.ceil(round(float(rank) * 1e6) * hist.get_total_count() / 1e8))
        seen, theirs = 0, None
        for value, count in buckets:
            seen += count
            if seen >= wanted:
                theirs = hist.get_highest_equivalent_value(value)
                break
        ours = stats["percentiles_ns"][rank]
        # latlab clamps percentiles to the exact maximum; below it they must agree.
        if min(theirs, stats["max_ns"]) != ours:
            failures.append(f"{label}: p{rank} python {theirs} != latlab {ours}")
    if not hist.get_max_value() >= stats["max_ns"] >= hist.get_min_value():
        failures.append(f"{label}: exact max {stats['max_ns']} outside the histogram's range")
if failures:
    print("\n".join(failures))
    print(f"hdrh-interop: 0 passed, {len(failures)} failed")
    sys.exit(1)
print(f"hdrh-interop: {len(streams)} passed, 0 failed (histograms read by the Python HdrHistogram library)")
