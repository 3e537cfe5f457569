"""One training iteration is one step, whatever the number of optimizers
and how often each steps (steps.py): a GAN's generator forward and backward
lie in one step, a WGAN's five critic steps lie in the generator's."""
import os

from harness import HERE, loss_lines, run_python

JOB = os.path.join(HERE, "loops_job.py")


def _steps(pattern, compare=False):
    proc, events = run_python([JOB, pattern], fake=True)
    if compare:  # the step's end moved: results must not
        plain = loss_lines(run_python([JOB, pattern], shim=False)[0])
        assert loss_lines(proc) == plain, (pattern, loss_lines(proc), plain)
    else:
        loss_lines(proc)
    ends = [e[1] for e in events if e[0] == "step_end"]
    names = {}  # range id -> (name, phase, step)
    for e in events:
        if e[0] == "start":
            names[e[1]] = (e[2], e[3], e[4])
    return ends, names


def _phases_by_step(names, module):
    """{step: set of phases} of one module's ranges."""
    out = {}
    for name, phase, step in names.values():
        if name == module:
            out.setdefault(step, set()).add(phase)
    return out


def test_gan_iteration_is_one_step_with_the_generator_in_it():
    for pattern in ("gan", "gan-g-first"):
        ends, names = _steps(pattern, compare=pattern == "gan")
        assert ends == [0, 1, 2], (pattern, ends)
        # The generator (the first root: names without prefix) has its
        # forward and its backward in the same step, every step.
        g = _phases_by_step(names, "0")
        assert sorted(g) == [0, 1, 2], (pattern, g)
        assert all(len(p) == 2 for p in g.values()), (pattern, g)


def test_wgan_iteration_of_five_critic_steps_is_one_step():
    # The model is the first root called with grad: G when its fakes are
    # detached, D when G's critic-step calls run under no_grad. The other
    # root is named by its class.
    for pattern, d_name, g_name in (("wgan", "Sequential", ""),
                                    ("wgan-no-grad", "", "Sequential")):
        ends, names = _steps(pattern)
        assert ends == [0, 1, 2], (pattern, ends)  # wgan was 0..13
        # D runs 11 times in every step, 5 x 2 critic calls and the
        # generator's; G's one backward lies in every step.
        d, g = {}, {}
        for name, phase, step in names.values():
            if name == d_name and phase == 1:
                d[step] = d.get(step, 0) + 1
            if name == g_name and phase == 2:
                g[step] = g.get(step, 0) + 1
        assert d == {0: 11, 1: 11, 2: 11}, (pattern, d)
        assert g == {0: 1, 1: 1, 2: 1}, (pattern, g)


def test_a_no_grad_teacher_called_first_does_not_take_the_students_names():
    # The plan is applied to the first root called with grad (env_plan.py):
    # the recording must give that root, the student, the unprefixed names.
    ends, names = _steps("distill", compare=True)
    assert ends == [0, 1, 2], ends
    assert _phases_by_step(names, "0") == {s: {1, 2} for s in range(3)}, _phases_by_step(names, "0")
    teacher = {n for n, _, _ in names.values() if n.startswith("Sequential")}
    assert "Sequential.0" in teacher, sorted({n for n, _, _ in names.values()})


def test_a_retained_graph_is_reported_once_per_step():
    proc, events = run_python([JOB, "two-backward"], fake=True)
    loss_lines(proc)
    retained = [e for e in events if e[0] == "scalar" and e[1] == "retain_graph"]
    assert [e[3] for e in retained] == [0, 1, 2], retained
    _, plain = run_python([JOB, "scheduler"], fake=True)
    assert not [e for e in plain if e[0] == "scalar" and e[1] == "retain_graph"]


def test_one_optimizer_patterns_keep_one_step_per_optimizer_step():
    for pattern in ("accumulate", "scheduler"):
        ends, _ = _steps(pattern)
        assert ends == [0, 1, 2], (pattern, ends)


def test_a_trainable_root_in_no_optimizer_holds_no_step():
    ends, _ = _steps("teacher")
    assert ends == [0, 1, 2], ends  # was [0, 1]: the first step spanned two iterations


def test_an_optimizer_that_never_steps_holds_only_the_first_step():
    ends, _ = _steps("unused")
    # 20 iterations: the first step waits for it through 16 of them.
    assert ends == list(range(5)), ends
