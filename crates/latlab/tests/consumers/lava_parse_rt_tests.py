#!/usr/bin/env python3
"""The decision LAVA makes on an rt-tests JSON file, written anew for latlab's tests.

Linaro's test-definitions, automated/lib/parse_rt_tests_results.py (the JSON version,
commit 71b374b1ad0bb8f4f88b1b63a0bfd8cde4b10db0), reads `num_threads` and, for each
thread index as a string, `thread[i]` (or its `receiver`) and prints its min, avg and
max as passing measurements; then it prints "TESTNAME pass" when `int(return_code)` is
0 and "TESTNAME fail" otherwise. This script does the same and prints the same lines,
so a test can see what LAVA would record for a file.

usage: lava_parse_rt_tests.py TESTNAME FILE.json
"""
import json
import sys


def main(testname, path):
    with open(path) as f:
        data = json.load(f)
    for index in range(int(data["num_threads"])):
        thread = data["thread"][str(index)]
        thread = thread.get("receiver", thread)
        for key in ("min", "avg", "max"):
            print(f"t{index}-{key}-latency pass {thread[key]} us")
    verdict = "pass" if int(data["return_code"]) == 0 else "fail"
    print(f"{testname} {verdict}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
