"""The injector built with CUDA, in a CPU-only PyTorch job: it loads, the CUDA
entry point falls back to the host backend with one line on stderr, and the
job is recorded by the host backend as before.

usage: cupti_cpu_job_test.py GCPROF_BINARY
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import unittest

SKIP = 77  # CTest SKIP_RETURN_CODE

# The job calls InitializeInjection itself, as the CUDA driver would inside
# cuInit (which never runs here: there is no driver).
JOB = """
import ctypes
ctypes.CDLL(None).InitializeInjection()
import torch
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    loss = model(torch.randn(64, 256)).square().mean()
    opt.zero_grad(); loss.backward(); opt.step()
print("trained", torch.cuda.is_available())
"""


def driver_present():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


class CpuJob(unittest.TestCase):
    gcprof = None

    def test_the_cuda_injector_falls_back_to_the_host_backend(self):
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "trace.db")
            job = subprocess.run([self.gcprof, "record", "-o", db, "--backend", "cuda", "--",
                                  sys.executable, "-c", JOB],
                                 capture_output=True, text=True, timeout=300)
            print(job.stdout, job.stderr, sep="\n")
            self.assertEqual(job.returncode, 0, "record exited %d" % job.returncode)
            self.assertIn("trained False", job.stdout, "the job's own output did not pass through")
            warnings = [l for l in job.stderr.splitlines() if l.startswith("gcprof: CUDA backend off:")]
            self.assertEqual(len(warnings), 1, "expected one fallback line, got %s" % warnings)
            self.assertIn("host backend", warnings[0])
            show = subprocess.run([self.gcprof, "show", db, "--json"], capture_output=True, text=True,
                                  timeout=60)
            self.assertEqual(show.returncode, 0, show.stderr)
            run = json.loads(show.stdout)["runs"][-1]
            print({k: run.get(k) for k in ("backend", "status", "allocations", "peak_bytes")})
            self.assertEqual(run["backend"], "host")
            self.assertEqual(run["status"], "complete")
            self.assertGreater(run["allocations"], 0, "nothing recorded")
            self.assertGreater(run["peak_bytes"], 0, "nothing recorded")


def main():
    CpuJob.gcprof = sys.argv[1]
    if driver_present():
        print("a CUDA driver is installed: this test is for machines without one")
        return SKIP
    result = unittest.main(argv=sys.argv[:1], exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
