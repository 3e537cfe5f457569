"""Run with `python -O`: the harness must bring `assert` back, so this fails."""
import harness  # noqa: F401  (re-executes without -O)

assert False, "assert is checked even when started with python -O"
