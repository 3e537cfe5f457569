#!/usr/bin/env python3
"""Runs python tests with pytest for CTest so that a skip is not a pass.

    run_pytest.py NAME...   (run from the tests' folder)

NAME is a file (test_plan.py), or module[.Class[.test]] as unittest names
tests (test_record.RecordCpp): pytest runs both plain test_* functions and
unittest classes. pytest exits 0 when every test was skipped (a package that
is not installed), and CTest would then report "Passed" for a test that
checked nothing. This runner exits
  1   when any test failed or raised (pytest's own codes otherwise: 5 when
      nothing was collected, which is no pass either),
  77  (SKIP = CTest's SKIP_RETURN_CODE, set by tests/*/CMakeLists.txt) when
      every test that ran was skipped,
  0   otherwise,
and prints one line "SKIP <test> - <reason>" per skipped test, also when only
some were: scripts/skipped-tests lists those lines at the end of `make test`.
"""
import os
import sys

# The tests check with `assert`, which `python -O` (or PYTHONOPTIMIZE) strips:
# every test would pass without checking anything. Start again without it.
if not __debug__:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONOPTIMIZE"}
    os.execve(sys.executable, [sys.executable, *sys.argv], env)

import pytest  # noqa: E402  (after the re-exec above)

SKIP = 77


class SkipStatus:
    """Counts passes and skips; a class whose setUpClass skips runs none of its
    tests, so the number run alone cannot tell "all skipped" from "none"."""

    def __init__(self):
        self.passed = 0
        self.skipped = []

    def pytest_runtest_logreport(self, report):
        if report.when == "call" and report.passed:
            self.passed += 1
        elif report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            self.skipped.append((report.nodeid, reason.removeprefix("Skipped: ")))

    def pytest_terminal_summary(self, terminalreporter):
        for test, reason in self.skipped:
            terminalreporter.write_line(f"SKIP {test} - {reason}")

    def pytest_sessionfinish(self, session, exitstatus):
        if exitstatus == 0 and self.skipped and not self.passed:
            session.exitstatus = SKIP


def node_id(name):
    """test_record.RecordCpp.test_x -> test_record.py::RecordCpp::test_x"""
    if name.endswith(".py") or "::" in name:
        return name
    module, *inside = name.split(".")
    return "::".join([module + ".py", *inside])


def main(names):
    # -p no:cacheprovider: no .pytest_cache in the source tree;
    # -o console_output_style=classic: one line per test, as CTest logs show it.
    args = ["-v", "-p", "no:cacheprovider", "-o", "console_output_style=classic",
            "--rootdir", os.getcwd(), *map(node_id, names)]
    return pytest.main(args, plugins=[SkipStatus()])


if __name__ == "__main__":
    sys.exit(int(main(sys.argv[1:])))
