#!/usr/bin/env python3
"""What OSADL's latency plot script reads from a cyclictest histogram, written anew for
latlab's tests.

OSADL's mklatencyplot.bash ("Create a latency plot from cyclictest histogram data",
osadl.org) takes the plot's "max N us" from the largest value on the "# Max Latencies"
line, keeps the lines that are neither comments nor empty, and plots column i+1 of them
against column 1 as the series labelled "CPU<i>", one per column. This script does the
same reading and prints, as JSON, what the plot would show: its max and each labelled
series (latency in µs -> count).

usage: osadl_plot.py HISTOGRAM
"""
import json
import sys


def main(path):
    with open(path) as f:
        lines = f.read().splitlines()
    maxima = [int(v) for l in lines if l.startswith("# Max Latencies") for v in l.split(":")[1].split()]
    rows = [l.replace(" ", "\t").split("\t") for l in lines if l and not l.startswith("#")]
    columns = len(rows[0]) - 1 if rows else 0
    series = []
    for i in range(columns):
        counts = {int(r[0]): int(r[i + 1]) for r in rows if int(r[i + 1]) > 0}
        series.append({"label": f"CPU{i}", "counts": counts})
    print(json.dumps({"max_us": max(maxima) if maxima else None, "series": series}))


if __name__ == "__main__":
    main(sys.argv[1])
