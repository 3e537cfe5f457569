#!/usr/bin/env python3
"""A test that checked nothing must not read "Passed" in CTest.

    skips_are_not_passes.py REPO_ROOT [RUNNER...]

Runs the two runners of the python tests on fabricated test modules:
tests/run_unittest.py (e2e, install) and tests/python/harness.py (shim). Each
must exit 77 (CTest's SKIP_RETURN_CODE) when every test skipped, 0 with a
"SKIP <test> - <reason>" line when only some did, and 1 when one failed.
RUNNER replaces the unittest runner's command (`python3 -m unittest` exits 0
when all skipped, which this check exists to catch).
"""
import os
import subprocess
import sys
import tempfile

FIXTURE = '''import unittest
class AllSkipped(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise unittest.SkipTest("no such package")
    def test_a(self):
        pass
class SomeSkipped(unittest.TestCase):
    def test_a(self):
        pass
    def test_b(self):
        self.skipTest("needs a GPU")
class OneFails(unittest.TestCase):
    def test_a(self):
        self.skipTest("needs a GPU")
    def test_b(self):
        self.fail("on purpose")
'''

HARNESS_FIXTURE = '''import sys
sys.path.insert(0, {python_tests!r})
from harness import Skip, run
def test_a():
    {first}
def test_b():
    raise Skip("needs a GPU")
run(globals())
'''


def check(what, argv, cwd, want_rc, want_line):
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    problems = []
    if p.returncode != want_rc:
        problems.append(f"{what}: exit {p.returncode}, expected {want_rc}\n{out}")
    if want_line and want_line not in out.splitlines():
        problems.append(f"{what}: no line {want_line!r} in\n{out}")
    return problems


def main():
    root = os.path.abspath(sys.argv[1])
    runner = sys.argv[2:] or [sys.executable, os.path.join(root, "tests", "run_unittest.py")]
    problems = []
    with tempfile.TemporaryDirectory(prefix="gcprof-skips-") as d:
        with open(os.path.join(d, "fixture.py"), "w") as f:
            f.write(FIXTURE)
        problems += check("all skipped", runner + ["fixture.AllSkipped"], d, 77,
                          "SKIP setUpClass (fixture.AllSkipped) - no such package")
        problems += check("some skipped", runner + ["fixture.SomeSkipped"], d, 0,
                          "SKIP fixture.SomeSkipped.test_b - needs a GPU")
        problems += check("one failed", runner + ["fixture.OneFails"], d, 1, None)
        python_tests = os.path.join(root, "tests", "python")
        for name, first, rc in (("harness_all", 'raise Skip("no torch")', 77),
                                ("harness_some", "pass", 0)):
            path = os.path.join(d, name + ".py")
            with open(path, "w") as f:
                f.write(HARNESS_FIXTURE.format(python_tests=python_tests, first=first))
            problems += check(name, [sys.executable, path], d, rc, "SKIP test_b - needs a GPU")
    for p in problems:
        print("FAIL", p)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
