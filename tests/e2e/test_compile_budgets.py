"""`gcprof verify --compile-budgets`: a job under torch.compile re-run once per
activation_memory_budget value, each run recorded and judged, the fastest that
fits named, and an eager plan (advised on a TORCH_COMPILE_DISABLE=1 recording)
verified beside them. The tiniest GPT and two values: Inductor compiles on
the CPU in every run."""
import json
import os
import re
import unittest

import pipeline as p

TINY = ["--layers", "2", "--hidden", "32", "--heads", "2", "--seq", "16", "--batch", "2",
        "--vocab", "256", "--steps", "4", "--compile"]


class CompileBudgets(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = p.tempdb("compile-budgets")
        cls.eager_plan = os.path.join(os.path.dirname(cls.db), "eager.json")
        p.record(cls.db, p.sample("py", flags=TINY))
        p.record(cls.db, ["env", "TORCH_COMPILE_DISABLE=1", *p.sample("py", flags=TINY)])
        p.gcprof("advise", cls.db, "--budget", "200%", "--strategy", "every", "-o", cls.eager_plan)
        cls.out = p.gcprof("verify", cls.db, "--compile-budgets", "0,1", "--budget", "150%",
                           "--plan", cls.eager_plan, check=False)
        # One value: the machine-readable answer, the job's prints kept off stdout.
        cls.json_out = p.gcprof("verify", cls.db, "--compile-budgets", "1", "--budget", "150%",
                                "--plan", cls.eager_plan, "--json", check=False)
        # And the eager plan alone, as plain `verify --json` reports it.
        cls.plain_json = p.gcprof("verify", cls.db, "--plan", cls.eager_plan, "--json", check=False)
        cls.report = json.loads(p.gcprof("report", cls.db, "--format", "json").stdout)
        cls.runs = {r["id"]: r for r in p.show(cls.db)["runs"]}

    def test_each_value_runs_the_compiled_recording_with_the_value(self):
        self.assertEqual(self.out.returncode, 0, self.out.stdout + self.out.stderr)
        named = {r["name"]: r for r in self.runs.values()}
        for value in ("0", "1"):
            run = named["compile budget " + value]
            self.assertEqual(run["baseline_run"], 1)  # the compiled recording, not the eager one
            with_value = p.query(self.db, "SELECT value FROM scalars WHERE run = ? AND name = ?",
                                 run["id"], "activation_memory_budget")
            self.assertEqual(with_value, [(float(value),)])

    def test_table_judges_every_value_and_names_the_fastest_that_fits(self):
        rows = [l.split() for l in self.out.stdout.splitlines() if re.match(r"^\s+[01]\s+\d+\s", l)]
        self.assertEqual([r[0] for r in rows], ["0", "1"], self.out.stdout)
        for r in rows:
            self.assertEqual(r[7], "yes", r)  # fits 150% of the recorded peak
            self.assertEqual(r[8], "match:", r)  # losses, compiled alike
        self.assertIn("does not fall monotonically", self.out.stdout)
        self.assertRegex(self.out.stdout, r"fastest within .*: activation_memory_budget [01] ")

    def test_the_eager_plan_is_verified_on_the_eager_recording_and_compared(self):
        out = self.out.stdout
        self.assertIn("the eager plan %s (torch.compile off), verified:" % self.eager_plan, out)
        self.assertRegex(out, r"verification run \d+ of baseline run 2, plan 1 ")
        # The comparison follows the verdict (on this tiny model a few MiB of
        # a library's buffers can fail the 5% peak prediction gate).
        if "verdict: PASS" in out:
            self.assertRegex(out, r"(fastest within .*: the eager plan|the eager plan fits too)")
        else:
            self.assertIn("the eager plan does not pass or does not fit", out)

    def test_json_is_one_object_with_each_value_the_eager_plan_and_the_fastest(self):
        out = self.json_out
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        result = json.loads(out.stdout)  # nothing else on stdout: the job's "step i loss" lines went to stderr
        self.assertIn("loss", out.stderr)
        self.assertEqual(result["recorded"]["run"], 1)
        [value] = result["values"]
        self.assertEqual(value["activation_memory_budget"], 1)
        self.assertEqual(self.runs[value["run"]]["name"], "compile budget 1")
        self.assertEqual(self.runs[value["run"]]["peak_bytes"], value["peak_bytes"])
        self.assertTrue(value["applied"] and value["losses"]["passed"] and value["counts"], value)
        self.assertEqual(value["exit_code"], 0)
        self.assertEqual(value["fits"], value["peak_bytes"] <= result["budget_bytes"])
        self.assertGreater(value["step_ns"], 0)
        eager = result["eager_plan"]
        self.assertEqual(eager["plan"], self.eager_plan)
        self.assertEqual(eager["baseline_run"], 2)
        self.assertEqual(self.runs[eager["run"]]["baseline_run"], 2)
        self.assertEqual(eager["fits"], eager["verdict"] == "PASS" and eager["peak_bytes"] <= result["budget_bytes"])
        fastest = result["fastest"]
        self.assertIn(fastest["what"], ("activation_memory_budget", "eager_plan"))
        named = value if fastest["what"] == "activation_memory_budget" else eager
        self.assertEqual(fastest["run"], named["run"])
        if eager["fits"]:
            self.assertEqual(fastest["what"] == "eager_plan", eager["step_ns"] < value["step_ns"] or not value["fits"])

    def test_plain_verify_json_is_the_verification_report_json_reads(self):
        out = self.plain_json
        verification = json.loads(out.stdout)
        self.assertEqual(out.returncode, 0 if verification["verdict"] == "PASS" else 1, out.stderr)
        self.assertIn("loss", out.stderr)
        for field in ("verdict", "budget_bytes", "baseline", "predicted", "measured", "gates", "losses"):
            self.assertEqual(verification[field], self.report[field], field)
        self.assertEqual(verification["baseline"]["run"], 2)


class CompileBudgetsRefused(unittest.TestCase):
    def test_a_trace_without_a_compiled_run_and_a_missing_budget_are_refused(self):
        db = p.tempdb("compile-budgets-none")
        p.record(db, p.sample("py", flags=TINY[:-1]))  # eager
        out = p.gcprof("verify", db, "--compile-budgets", "0.5", "--budget", "90%", check=False)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("no recorded run ran a model under torch.compile", out.stderr)
        out = p.gcprof("verify", db, "--compile-budgets", "0.5,2", "--budget", "90%", check=False)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("'2' is not an activation_memory_budget", out.stderr)


if __name__ == "__main__":
    unittest.main()
