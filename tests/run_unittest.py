#!/usr/bin/env python3
"""Runs python unittest names for CTest so that a skip is not a pass.

    run_unittest.py NAME...   (run from the tests' folder: NAME is module[.Class[.test]])

`python -m unittest` exits 0 when every test was skipped (a package that is
not installed), and CTest then reports "Passed" for a test that checked
nothing. This runner exits
  1   when any test failed or raised,
  77  (SKIP = CTest's SKIP_RETURN_CODE, set by tests/*/CMakeLists.txt) when
      every test that ran was skipped,
  0   otherwise,
and prints one line "SKIP <test> - <reason>" per skipped test, also when only
some were: scripts/skipped-tests lists those lines at the end of `make test`.
"""
import os
import sys
import unittest

SKIP = 77


class CountingResult(unittest.TextTestResult):
    """Counts the tests that passed: a class whose setUpClass skips runs none
    of its tests, so testsRun alone cannot tell "all skipped" from "none"."""
    passed = 0

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1


def main(names):
    # As `python -m unittest` does: the test modules sit in the working directory.
    sys.path.insert(0, os.getcwd())
    suite = unittest.defaultTestLoader.loadTestsFromNames(names)
    result = unittest.TextTestRunner(verbosity=2, resultclass=CountingResult).run(suite)
    for test, reason in result.skipped:
        print(f"SKIP {test.id()} - {reason}")
    sys.stdout.flush()
    if not result.wasSuccessful():
        return 1
    if result.skipped and not result.passed:
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
