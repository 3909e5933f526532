#!/usr/bin/env python3
"""Reads latlab JUnit files with junitparser, as CI tools built on it do, and checks
what each says against the Run it was exported from (latlab export --format json), and
that the files merged hold no two cases of the same classname and name.

usage: junit_check.py JUNIT.xml RUN.json [JUNIT.xml RUN.json ...]
Prints each suite's counts, a line each; exits 1 naming the first disagreement.
"""
import json
import sys

from junitparser import Error, Failure, JUnitXml, Skipped


def fail(message):
    print(f"junit_check: {message}", file=sys.stderr)
    sys.exit(1)


def check(junit_path, run_path, seen):
    with open(run_path) as f:
        run = json.load(f)
    xml = JUnitXml.fromfile(junit_path)
    suites = list(xml)
    if len(suites) != 1:
        fail(f"{len(suites)} suites, expected one per Run")
    suite = suites[0]
    cases = list(suite)

    # What the file claims must be what its cases hold (junitparser recounts them).
    stated = (suite.tests, suite.failures, suite.errors, suite.skipped)
    suite.update_statistics()
    counted = (suite.tests, suite.failures, suite.errors, suite.skipped)
    if stated != counted:
        fail(f"suite says tests/failures/errors/skipped {stated}, its cases hold {counted}")
    if (xml.tests, xml.failures, xml.errors) != counted[:3]:
        fail(f"testsuites says {(xml.tests, xml.failures, xml.errors)}, the suite {counted[:3]}")

    # ... and what the Run says.
    checks = run["verdict"]["checks"]
    measuring_failed = any(w["code"] == "measuring-failed" for w in run["warnings"])
    # Published figures were not measured here: their measurement is skipped too.
    published = run.get("published") is not None
    expected = (
        max(len(checks), 1) + 2,
        sum(c["passed"] is False for c in checks) + int(run["degraded"]),
        sum(c["passed"] is None for c in checks) + int(measuring_failed),
        int(not checks) + int(run["conditions"] is None and not run["degraded"]) + int(published),
    )
    if counted != expected:
        fail(f"tests/failures/errors/skipped {counted}, the Run gives {expected}")

    for key in ((c.classname, c.name) for c in cases):
        if key in seen:
            fail(f"two cases are {key}: merged files would collide")
        seen.add(key)
    for case in cases:
        if not case.classname.startswith(f"latlab.{run['id']}"):
            fail(f"case {case.name!r} has classname {case.classname!r}, not the run's")
        for result in case.result:
            if not result.type:
                fail(f"case {case.name!r}: a {result._tag} without a type")
            if isinstance(result, Failure) and result.type == "threshold":
                body = result.text or ""
                for line in ("observed: ", "limit: ", "stream: "):
                    if line not in body:
                        fail(f"case {case.name!r}: failure body lacks {line!r}: {body!r}")

    status = {"pass": "passed", "fail": "failed", "undecided": "undecided", "none": "none"}
    print(
        f"junitparser: {counted[0]} tests, {counted[1]} failures, {counted[2]} errors, "
        f"{counted[3]} skipped; run {run['id']} {status[run['verdict']['status']]}"
    )


def main(args):
    if not args or len(args) % 2:
        fail("usage: junit_check.py JUNIT.xml RUN.json [JUNIT.xml RUN.json ...]")
    seen = set()
    for i in range(0, len(args), 2):
        check(args[i], args[i + 1], seen)


if __name__ == "__main__":
    main(sys.argv[1:])
