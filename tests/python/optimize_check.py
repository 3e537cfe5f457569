"""Run with `python -O`: tests/run_pytest.py must bring `assert` back, so this fails."""


def test_assert_survives_optimize():
    assert False, "assert is checked even when started with python -O"
