"""The side-by-side harness's own rules (bench/record/side_by_side.py):
the order the modes take turns in, the walk over a job's threads that
both side_by_side.py and threads.py measure with, and how step_profile.py
groups a step's perf samples."""
import collections
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "record"))
import side_by_side  # noqa: E402
import step_profile  # noqa: E402


class Harness(unittest.TestCase):
    def test_every_mode_runs_right_after_every_other_equally_often(self):
        # A fixed predecessor (a plain rotation) let the mode after plain
        # start on warm caches: gcprof read below plain.
        for n in range(2, 7):
            orders = side_by_side.turn_orders(n)
            for order in orders:
                self.assertEqual(sorted(order), list(range(n)), order)
            after = collections.Counter((o[i - 1], o[i]) for o in orders for i in range(1, n))
            pairs = {(a, b) for a in range(n) for b in range(n) if a != b}
            self.assertEqual(set(after), pairs, f"n={n}")
            self.assertEqual(len(set(after.values())), 1, f"n={n}: {after}")

    def test_plain_again_runs_the_plain_command(self):
        args = ("gpt2", "/build", 6, "/tmp", 0)
        self.assertEqual(side_by_side.command(args[0], "plain-again", *args[1:]),
                         side_by_side.command(args[0], "plain", *args[1:]))

    def test_another_shim_is_this_build_with_its_folder_on_pythonpath(self):
        args = ("gpt2", "/build", 6, "/tmp", 0)
        ours = side_by_side.command(args[0], "gcprof", *args[1:])
        other = side_by_side.command(args[0], "gcprof@before", *args[1:], {"before": "/old/python"})
        self.assertEqual(other[0], ours[0])  # this build's gcprof record
        at = other.index("--")
        self.assertEqual(other[at + 1:at + 3], ["env", "PYTHONPATH=/old/python"])
        self.assertEqual(other[at + 3:], ours[ours.index("--") + 1:])  # the same job

    def test_a_control_off_one_says_the_ratios_are_not_to_be_believed(self):
        plain = [([], [1.0, 1.0, 1.0])]
        self.assertIsNone(side_by_side.control_warning("gpt2", {"plain": plain}))
        near = {"plain": plain, "plain-again": [([], [1.005, 0.995, 1.0])]}
        self.assertIsNone(side_by_side.control_warning("gpt2", near))
        off = {"plain": plain, "plain-again": [([], [0.96, 0.95, 0.97])]}
        warning = side_by_side.control_warning("gpt2", off)
        self.assertIn("gpt2", warning)
        self.assertIn("0.960", warning)

    def test_a_cost_paid_every_few_steps_counts_in_a_rounds_ratio(self):
        # A cost on one step in four (the writer's round, on some steps of
        # these turns): a median over single steps read the mode as plain.
        plain = [1.0] * 32
        mode = [1.0, 1.0, 1.0, 1.4] * 8
        self.assertAlmostEqual(side_by_side.paired_ratio(mode, plain), 1.1)

    def test_one_steps_hiccup_moves_one_window_not_the_round(self):
        hiccup = [1.0] * 31 + [50.0] + [1.0] * 16
        self.assertAlmostEqual(side_by_side.paired_ratio(hiccup, [1.0] * 48), 1.0)

    def test_thread_walk_sees_children_and_can_leave_out_the_root(self):
        # The child says it runs before it spins: by then it has had CPU time.
        child = subprocess.Popen([sys.executable, "-c", "print('spinning', flush=True)\nwhile True: pass"],
                                 stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(child.stdout.readline().strip(), "spinning")
            me = os.getpid()
            names = [name for name, _ in side_by_side.tree_threads(me)]
            self.assertGreaterEqual(len(names), 2, names)  # this process and the child
            without = list(side_by_side.tree_threads(me, with_root=False))
            self.assertEqual(len(without), 1, without)  # the child's one thread
            self.assertGreater(without[0][1], 0)
            self.assertGreaterEqual(side_by_side.tree_cpu_ns(me), without[0][1])
        finally:
            child.kill()
            child.wait()

    def test_step_profile_counts_gcprof_work_in_any_thread_and_the_rest_as_the_jobs(self):
        self.assertEqual(step_profile.group("gcprof-writer", "libsqlite3.so.0.8.6"), "writer thread")
        self.assertEqual(step_profile.group("pt_autograd_0", "libgcprof_inject.so"),
                         "injector on the job's threads")
        self.assertEqual(step_profile.group("python3", "gcprof_backward_hooks.so"), "module hooks (C++)")
        self.assertEqual(step_profile.group("python3", "[vdso]"), "clock reads (vDSO)")
        self.assertEqual(step_profile.group("python3", "libtorch_cpu.so"), step_profile.OWN)
        self.assertEqual(step_profile.group("python3", "libc.so.6"), step_profile.OWN)


if __name__ == "__main__":
    unittest.main()
