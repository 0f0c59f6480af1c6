"""Conformance of vecjac's array API namespace to the standard's own test suite.

The suite (data-apis/array-api-tests) is vendored unchanged in ../shared/external/ (seen
from /work/main; see its SOURCE.md). It writes a report and a Hypothesis database into the
folder it runs from, and shared/ is read-only, so it is copied to a temporary folder and
run there against `vecjac._src.numpy.array_api` (the module `t.__array_namespace__()`
returns), standard version 2023.12, the optional extensions (linalg, fft) disabled.
Prints the passed / failed / skipped counts per test file and the failing tests.

Run:  python benchmarks/array_api_conformance.py [--max-examples 20] [--suite PATH]
                                                 [--files test_creation_functions.py ...]
Needs pytest-json-report, ndindex and hypothesis (the suite's requirements.txt). Slow (many
minutes): not part of the default test suite.
"""
import argparse
import collections
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
SUITE = pathlib.Path("/work/shared/external/array-api-tests")
NAMESPACE = "vecjac._src.numpy.array_api"


def run(suite, max_examples, files, keyword):
    with tempfile.TemporaryDirectory(prefix="array-api-tests-") as tmp:
        work = pathlib.Path(tmp) / "array-api-tests"
        shutil.copytree(suite, work)
        report = pathlib.Path(tmp) / "report.json"
        env = dict(os.environ, ARRAY_API_TESTS_MODULE=NAMESPACE,
                   ARRAY_API_TESTS_VERSION="2023.12",
                   PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
        targets = [f"array_api_tests/{f}" for f in files] if files else ["array_api_tests/"]
        command = [sys.executable, "-m", "pytest", *targets, "-q", "-p", "no:cacheprovider",
                   f"--max-examples={max_examples}", "--disable-extension", "fft", "linalg",
                   "--json-report", f"--json-report-file={report}", "-o", "addopts=",
                   "--tb=no", "-rN"]
        if keyword:
            command += ["-k", keyword]
        subprocess.run(command, cwd=work, env=env, stdout=subprocess.DEVNULL)
        return json.loads(report.read_text())


def summarize(data):
    counts = collections.defaultdict(collections.Counter)
    failing = []
    for test in data["tests"]:
        path = test["nodeid"].split("::")[0].split("/")[-1]
        outcome = test["outcome"]
        counts[path][outcome] += 1
        if outcome in ("failed", "error"):
            crash = ((test.get("call") or test.get("setup") or {}).get("crash") or {})
            message = crash.get("message", "").splitlines()
            failing.append((test["nodeid"], message[0][:160] if message else ""))
    print("| test file | passed | failed | skipped | pass rate (of run) |")
    print("|---|---|---|---|---|")
    total = collections.Counter()
    for path in sorted(counts):
        c = counts[path]
        total += c
        ran = c["passed"] + c["failed"] + c["error"]
        rate = f"{100 * c['passed'] / ran:.0f}%" if ran else "-"
        print(f"| {path} | {c['passed']} | {c['failed'] + c['error']} | {c['skipped']} | "
              f"{rate} |")
    ran = total["passed"] + total["failed"] + total["error"]
    print(f"| **total** | {total['passed']} | {total['failed'] + total['error']} | "
          f"{total['skipped']} | {100 * total['passed'] / max(ran, 1):.1f}% |")
    if failing:
        print("\nFailing:")
        for nodeid, message in failing:
            print(f"- {nodeid}: {message}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=20)
    parser.add_argument("--suite", type=pathlib.Path, default=SUITE)
    parser.add_argument("--files", nargs="*", default=[])
    parser.add_argument("-k", dest="keyword", default=None)
    args = parser.parse_args()
    summarize(run(args.suite, args.max_examples, args.files, args.keyword))


if __name__ == "__main__":
    main()
