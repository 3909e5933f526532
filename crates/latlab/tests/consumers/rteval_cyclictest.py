#!/usr/bin/env python3
"""What rteval's cyclictest module reads from a cyclictest histogram, written anew for
latlab's tests.

rteval, rteval/modules/measurement/cyclictest.py (Cyclictest._WorkloadCleanup and
RunData; kernel.org utils/rteval), runs `cyclictest -qmu -h N -tCORES -aCPULIST` and
reads its output: a line starting with "#" is skipped, except "# Max Latencies: ",
whose i-th value raises core i's maximum; any other line is "INDEX COUNT0 COUNT1 ...",
and COUNTi adds to core i's bucket INDEX (and to the system's). A core's samples are the
sum of its buckets, its min and max the lowest and highest bucket with samples (raised
by the Max Latencies line), its mean the buckets' weighted mean. This script reads the
same way for CORES cores and prints, as JSON, what rteval would report per core and for
the system.

usage: rteval_cyclictest.py HISTOGRAM CORES
"""
import json
import sys


def summary(buckets, max_line):
    samples = sum(buckets.values())
    used = [i for i, n in buckets.items() if n]
    maximum = max(used + [max_line or 0]) if used or max_line else 0
    return {
        "samples": samples,
        "min": min(used) if used else None,
        "max": maximum,
        "mean": sum(i * n for i, n in buckets.items()) / samples if samples else None,
    }


def main(path, cores):
    cores = int(cores)
    buckets = [dict() for _ in range(cores)]
    maxima = [None] * cores
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                if line.startswith("# Max Latencies: "):
                    for i, v in enumerate(int(x) for x in line.split(":")[1].split()):
                        if i < cores:
                            maxima[i] = v
                continue
            vals = line.split()
            if not vals:
                continue
            index = int(vals[0])
            for i in range(cores):
                buckets[i][index] = buckets[i].get(index, 0) + int(vals[i + 1])
    system = {}
    for b in buckets:
        for index, n in b.items():
            system[index] = system.get(index, 0) + n
    report = {
        "cores": [summary(b, m) for b, m in zip(buckets, maxima)],
        "system": summary(system, max([m for m in maxima if m is not None], default=None)),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
