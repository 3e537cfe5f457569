"""`pip wheel .` and the wheel in a fresh virtual environment.

The wheel is built from this checkout (only what it installs is compiled,
through ccache), installed into a venv that sees the system's torch, and the
python sample is recorded, advised and verified from a folder outside the
repository with nothing but the venv's bin/ on PATH.
"""
import json
import os
import sys
import time
import unittest
import zipfile

import installed as inst


class Wheel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = inst.scratch("wheel")
        t0 = time.monotonic()
        # --no-build-isolation: scikit-build-core comes from scripts/install-deps,
        # nothing is downloaded. Same compilers and warning flags as this build,
        # so that ccache serves the objects it already compiled.
        same = {name: inst.cmake_cache(name) for name in
                ("CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER", "GCPROF_WERROR")}
        env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL="2")
        inst.run([sys.executable, "-m", "pip", "wheel", inst.ROOT, "--no-build-isolation",
                  "--no-deps", "-q", "-w", os.path.join(cls.tmp, "dist"),
                  *[f"--config-settings=cmake.define.{k}={v}" for k, v in same.items() if v]],
                 env=env)
        t1 = time.monotonic()
        (name,) = os.listdir(os.path.join(cls.tmp, "dist"))
        cls.wheel = os.path.join(cls.tmp, "dist", name)
        venv = os.path.join(cls.tmp, "venv")
        inst.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv])
        cls.bin = os.path.join(venv, "bin")
        cls.python = os.path.join(cls.bin, "python")
        inst.run([sys.executable, "-m", "pip", "--python", cls.python, "install", "-q",
                  "--no-deps", "--no-index", cls.wheel])
        t2 = time.monotonic()
        cls.venv = venv
        cls.env = inst.outside_env(cls.bin)
        cls.job = os.path.join(cls.tmp, "job")
        train = inst.copy_sample(cls.job)
        cls.argv = ["python", train, *inst.pipeline.ACTIVATION_HEAVY]
        cls.baseline = cls.gcprof("record", "-o", "trace.db", "--", *cls.argv)
        cls.gcprof("advise", "trace.db", "--budget", "80%", "-o", "plan.json")
        cls.verify = cls.gcprof("verify", "trace.db", "--plan", "plan.json", check=False)
        cls.report = json.loads(cls.gcprof("report", "trace.db", "--format", "json").stdout)
        t3 = time.monotonic()
        print(f"\nwheel: build {t1 - t0:.1f} s, venv + install {t2 - t1:.1f} s, "
              f"record/advise/verify {t3 - t2:.1f} s", file=sys.stderr)

    @classmethod
    def gcprof(cls, *args, check=True):
        return inst.run(["gcprof", *args], check=check, cwd=cls.job, env=cls.env)

    def test_wheel_holds_the_executables_injector_shim_and_package_only(self):
        names = zipfile.ZipFile(self.wheel).namelist()
        data = [n.split("/", 1)[1] for n in names if ".data/" in n]
        # The wheel's own folders (its .data/scripts is the environment's bin/).
        for want in (*(f"scripts/{exe}" for exe in ("gcprof", "gcprof-gui")),
                     "data/lib/libgcprof_inject.so",
                     "data/share/gcprof/python/sitecustomize.py",
                     "data/share/gcprof/python/gcprof/startup.py"):
            self.assertIn(want, data)
        # The C++ backward hooks come along when the build has them (torch importable).
        if os.path.exists(os.path.join(inst.BUILD, "lib", "gcprof_backward_hooks.so")):
            self.assertIn("data/lib/gcprof_backward_hooks.so", data)
            self.assertIn("data/lib/gcprof_backward_hooks.abi", data)
        self.assertIn("gcprof/__init__.py", names)
        self.assertIn("gcprof.pth", names)
        self.assertFalse([n for n in names if "test" in n or "bench" in n or n.endswith(".a")],
                         "the wheel carries only what runs")
        self.assertTrue(os.path.basename(self.wheel).endswith("-py3-none-linux_x86_64.whl"),
                        self.wheel)

    def test_record_advise_verify_from_outside_the_repository(self):
        self.assertEqual(self.verify.returncode, 0, self.verify.stdout + self.verify.stderr)
        self.assertEqual(self.report["verdict"], "PASS")
        self.assertLessEqual(self.report["measured"]["peak_bytes"], self.report["budget_bytes"])
        losses = inst.pipeline.losses(self.baseline.stdout)
        self.assertEqual(len(losses), 3)
        self.assertEqual(inst.pipeline.losses(self.verify.stdout), losses)

    def test_python_module_ranges_were_recorded(self):
        # Module names reach the trace only through the shim: proof that the
        # installed one was found and loaded.
        show = json.loads(self.gcprof("show", "trace.db", "--json").stdout)
        self.assertTrue(any(u["name"].startswith("layers.") for u in show["runs"][0]["units"]),
                        show["runs"][0]["units"])

    def test_record_puts_the_installed_shim_on_the_jobs_path(self):
        out = self.gcprof("record", "-o", "probe.db", "--", "python", "-c", inst.SHIM_PROBE)
        self.assertEqual(out.stdout.strip(),
                         os.path.join(self.venv, "share", "gcprof", "python", "sitecustomize.py"))

    def test_import_gcprof_in_the_venv_python(self):
        out = inst.run([self.python, "-c", "import gcprof, sys; print(gcprof.__file__); "
                        "print(callable(gcprof.apply_plan))"], cwd=self.job, env=self.env)
        where, ok = out.stdout.split()
        self.assertTrue(where.startswith(self.venv) and "site-packages" in where, where)
        self.assertEqual(ok, "True")

    def test_gcprof_plan_applies_in_a_plain_python_run(self):
        env = dict(self.env, GCPROF_PLAN=os.path.join(self.job, "plan.json"))
        out = inst.run(self.argv, cwd=self.job, env=env)
        self.assertIn("checkpointing", out.stderr)
        self.assertEqual(inst.pipeline.losses(out.stdout), inst.pipeline.losses(self.baseline.stdout))

    def test_plan_hook_is_inert_without_gcprof_plan(self):
        out = inst.run([self.python, "-c", "import sys; print('gcprof' in sys.modules)"],
                       cwd=self.job, env=self.env)
        self.assertEqual(out.stdout.strip(), "False")

    def test_gui_starts(self):
        out = inst.run(["gcprof-gui", "--help"], cwd=self.job, env=self.env)
        self.assertIn("gcprof-gui", out.stdout)


if __name__ == "__main__":
    unittest.main()
