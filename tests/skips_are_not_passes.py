#!/usr/bin/env python3
"""A test that checked nothing must not read "Passed" in CTest.

    skips_are_not_passes.py REPO_ROOT [RUNNER...]

Runs the runner of the python tests, tests/run_pytest.py, on fabricated test
modules of both kinds it runs: unittest classes (e2e, install) and plain pytest
functions (the shim's tests). It must exit 77 (CTest's SKIP_RETURN_CODE) when
every test skipped, 0 with a "SKIP <test> - <reason>" line when only some did,
and 1 when one failed. RUNNER replaces the runner's command (`python3 -m
pytest` exits 0 when all skipped, which this check exists to catch).
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

FUNCTIONS_FIXTURE = '''import pytest
def test_a():
    {first}
def test_b():
    pytest.skip("needs a GPU")
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
    runner = sys.argv[2:] or [sys.executable, os.path.join(root, "tests", "run_pytest.py")]
    problems = []
    with tempfile.TemporaryDirectory(prefix="gcprof-skips-") as d:
        with open(os.path.join(d, "fixture.py"), "w") as f:
            f.write(FIXTURE)
        problems += check("all skipped", runner + ["fixture.AllSkipped"], d, 77,
                          "SKIP fixture.py::AllSkipped::test_a - no such package")
        problems += check("some skipped", runner + ["fixture.SomeSkipped"], d, 0,
                          "SKIP fixture.py::SomeSkipped::test_b - needs a GPU")
        problems += check("one failed", runner + ["fixture.OneFails"], d, 1, None)
        for name, first, rc in (("functions_all", 'pytest.skip("no torch")', 77),
                                ("functions_some", "pass", 0)):
            with open(os.path.join(d, name + ".py"), "w") as f:
                f.write(FUNCTIONS_FIXTURE.format(first=first))
            problems += check(name, runner + [name + ".py"], d, rc,
                              f"SKIP {name}.py::test_b - needs a GPU")
    for p in problems:
        print("FAIL", p)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
