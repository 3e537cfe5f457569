"""`pip install .` with pip's build isolation (the default) hides the
site-packages of the python running pip: torch was not importable at
configure time and the wheel was built without the C++ recording hooks,
silently. The configure step now asks that python again without pip's two
variables. Here pip's isolation is reproduced (PYTHONPATH naming a
sitecustomize that drops site-packages, PYTHONNOUSERSITE=1; no download)
and only the configure step runs, as in a wheel build."""
import os
import sys
import unittest

import installed as inst

# What pip's build environment does to sys.path (pip/_internal/build_env.py):
# the interpreter's own site-packages are dropped.
HIDE_SITE_PACKAGES = """import sys
sys.path[:] = [p for p in sys.path if 'site-packages' not in p and 'dist-packages' not in p]
"""


class IsolatedConfigure(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        tmp = inst.scratch("isolated")
        overlay = os.path.join(tmp, "overlay")
        os.makedirs(overlay)
        with open(os.path.join(overlay, "sitecustomize.py"), "w") as f:
            f.write(HIDE_SITE_PACKAGES)
        cls.env = dict(inst.outside_env(), PYTHONPATH=overlay, PYTHONNOUSERSITE="1")
        cls.hidden = inst.run(["python3", "-c", "import torch"], check=False, env=cls.env)
        cls.build = os.path.join(tmp, "build")
        cls.configure = inst.run(
            ["cmake", "-S", inst.ROOT, "-B", cls.build, "-G", "Unix Makefiles",
             "-DGCPROF_BUILD_TESTS=OFF", "-DGCPROF_BUILD_BENCH=OFF", "-DGCPROF_BUILD_SAMPLES=OFF",
             *[f"-D{k}={inst.cmake_cache(k)}" for k in ("CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER")
               if inst.cmake_cache(k)]],
            check=False, env=cls.env)

    def test_torch_is_hidden_as_pip_hides_it(self):
        self.assertNotEqual(self.hidden.returncode, 0, "the overlay did not hide torch")

    def test_the_recording_hooks_are_configured_all_the_same(self):
        if not os.path.exists(os.path.join(inst.BUILD, "lib", "gcprof_backward_hooks.so")):
            self.skipTest("this build has no C++ recording hooks (no torch or Python.h)")
        self.assertEqual(self.configure.returncode, 0, self.configure.stdout + self.configure.stderr)
        self.assertIn("torch found outside the isolated build environment", self.configure.stdout)
        with open(os.path.join(self.build, "CMakeCache.txt")) as f:
            cache = f.read()
        self.assertIn("GCPROF_TORCH_DIR:PATH=" + inst.cmake_cache("GCPROF_TORCH_DIR"), cache)
        self.assertTrue(os.path.isdir(os.path.join(self.build, "profiler", "backward_hooks",
                                                   "CMakeFiles", "gcprof_backward_hooks.dir")),
                        self.configure.stdout)


if __name__ == "__main__":
    unittest.main()
