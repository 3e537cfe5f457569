"""Results are bit-identical with and without the shim recording the job."""
from harness import TINY, loss_lines, run_python


def test_losses_bit_identical_with_and_without_shim():
    for dropout in ("0.0", "0.2"):
        args = [TINY, "--steps", "3", "--dropout", dropout]
        plain = loss_lines(run_python(args, shim=False)[0])
        recorded, events = run_python(args, fake=True)
        assert loss_lines(recorded) == plain, (dropout, loss_lines(recorded), plain)
        assert recorded.stderr == "", recorded.stderr
        assert sum(1 for e in events if e[0] == "step_end") == 3
