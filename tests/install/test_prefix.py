"""`cmake --install` to a prefix and the Debian package (cpack -G DEB).

The installed gcprof finds its injector and shim relative to itself (the
prefix, never the checkout); a tiny CMake project outside the tree finds the
package with find_package(gcprof) and links gcprof::api and gcprof::torch.
"""
import json
import os
import subprocess
import sys
import unittest

import installed as inst

CONSUMER = os.path.join(inst.HERE, "consumer")


def recorded_shim(gcprof, workdir, env):
    """The sitecustomize a python job gets under this gcprof record."""
    out = inst.run([gcprof, "record", "-o", "probe.db", "--", sys.executable, "-c",
                    inst.SHIM_PROBE], cwd=workdir, env=env)
    return out.stdout.strip()


class Prefix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = inst.scratch("prefix")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        cls.env = inst.outside_env()
        inst.run(["cmake", "--install", inst.BUILD, "--prefix", cls.prefix])

    def test_layout(self):
        for rel in ("bin/gcprof", "lib/libgcprof_inject.so", "share/gcprof/python/sitecustomize.py",
                    "share/gcprof/python/gcprof/__init__.py", "include/gcprof/gcprof.h",
                    "lib/cmake/gcprof/gcprofConfig.cmake",
                    "lib/cmake/gcprof/gcprofConfigVersion.cmake"):
            self.assertTrue(os.path.exists(os.path.join(self.prefix, rel)), rel)
        if inst.cmake_cache("GCPROF_BUILD_GUI") != "OFF":
            self.assertTrue(os.path.exists(os.path.join(self.prefix, "bin/gcprof-gui")))

    def test_installed_gcprof_uses_the_prefix_shim(self):
        self.assertEqual(recorded_shim(os.path.join(self.prefix, "bin", "gcprof"), self.tmp, self.env),
                         os.path.join(self.prefix, "share", "gcprof", "python", "sitecustomize.py"))

    def partial_copy(self, name, *parts):
        """Another prefix holding only `parts` of this one (hard links)."""
        root = os.path.join(self.tmp, name)
        for rel in parts:
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            os.link(os.path.join(self.prefix, rel), os.path.join(root, rel))
        return os.path.join(root, "bin", "gcprof")

    def test_installed_gcprof_never_takes_the_shim_from_the_checkout(self):
        gcprof = self.partial_copy("no-shim", "bin/gcprof", "lib/libgcprof_inject.so")
        out = inst.run([gcprof, "record", "-o", "x.db", "--", sys.executable, "-c",
                        "import os; print(os.environ.get('PYTHONPATH', ''))"],
                       cwd=self.tmp, env=self.env)
        self.assertNotIn(inst.ROOT, out.stdout)
        self.assertIn("python shim not found", out.stderr)
        self.assertIn(os.path.join(os.path.dirname(gcprof), "..", "share", "gcprof", "python"),
                      out.stderr)

    def test_missing_injector_is_a_clear_error(self):
        gcprof = self.partial_copy("no-injector", "bin/gcprof")
        moved = os.path.dirname(os.path.dirname(gcprof))
        out = inst.run([gcprof, "record", "-o", "x.db", "--", "true"], check=False, cwd=self.tmp,
                       env=self.env)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("libgcprof_inject.so not found", out.stderr)
        self.assertIn(os.path.join(moved, "bin", "..", "lib", "libgcprof_inject.so"), out.stderr)

    def test_find_package_from_an_out_of_tree_project(self):
        if not os.path.exists(os.path.join(self.prefix, "include/gcprof/torch/plan.h")):
            self.skipTest("built without LibTorch: no gcprof::torch")
        build = os.path.join(self.tmp, "consumer")
        inst.run(["cmake", "-S", CONSUMER, "-B", build, "-DCMAKE_PREFIX_PATH=" + self.prefix,
                  "-DCMAKE_BUILD_TYPE=Release"], env=self.env)
        inst.run(["cmake", "--build", build], env=self.env)
        with open(os.path.join(build, "gcprof_paths.txt")) as f:
            exe, injector = f.read().split()
        self.assertEqual(exe, os.path.join(self.prefix, "bin", "gcprof"))
        self.assertEqual(injector, os.path.join(self.prefix, "lib", "libgcprof_inject.so"))
        consumer = os.path.join(build, "consumer")
        plain = inst.run([consumer], env=self.env)
        self.assertEqual(plain.stdout.strip(), "segments 1 first 0 last 1")
        # Its C API calls reach the injector of the installed gcprof.
        inst.run([exe, "record", "-o", "consumer.db", "--", consumer], cwd=self.tmp, env=self.env)
        show = json.loads(inst.run([exe, "show", "consumer.db", "--json"], cwd=self.tmp,
                                   env=self.env).stdout)
        self.assertEqual(show["runs"][0]["steps"], 2)


class DebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = inst.scratch("deb")
        inst.run(["cpack", "-G", "DEB", "--config", os.path.join(inst.BUILD, "CPackConfig.cmake"),
                  "-B", cls.tmp])
        (cls.deb,) = [os.path.join(cls.tmp, n) for n in os.listdir(cls.tmp) if n.endswith(".deb")]

    def test_contents_and_dependencies(self):
        files = inst.run(["dpkg-deb", "-c", self.deb]).stdout
        for path in ("./usr/bin/gcprof", "./usr/lib/libgcprof_inject.so",
                     "./usr/share/gcprof/python/sitecustomize.py", "./usr/include/gcprof/gcprof.h",
                     "./usr/lib/cmake/gcprof/gcprofConfig.cmake"):
            self.assertIn(path, files)
        depends = inst.run(["dpkg-deb", "-f", self.deb, "Depends"]).stdout
        self.assertIn("libsqlite3", depends)

    def test_unpacked_package_records_with_its_own_shim(self):
        root = os.path.join(self.tmp, "root")
        inst.run(["dpkg-deb", "-x", self.deb, root])
        gcprof = os.path.join(root, "usr", "bin", "gcprof")
        self.assertEqual(recorded_shim(gcprof, self.tmp, inst.outside_env()),
                         os.path.join(root, "usr", "share", "gcprof", "python", "sitecustomize.py"))


if __name__ == "__main__":
    unittest.main()
