"""The allocator trace tracker's registration in a real recorded PyTorch job
on a machine without a GPU: the python shim queues the attach with
torch.cuda._lazy_call (CUDA is never initialised here, so it stays queued),
the queued call loads libgcprof_allocator_trace.so and, run by hand, reports
"not attached" (no device allocators) without raising; the job trains, its
PYTORCH_CUDA_ALLOC_CONF stays unset, and nothing is said on stderr about the
allocator.

usage: allocator_trace_cpu_job_test.py GCPROF_BINARY
"""
import os
import subprocess
import sys
import tempfile
import unittest

from cupti_cpu_job_test import driver_present  # this folder is sys.path[0]

SKIP = 77  # CTest SKIP_RETURN_CODE

JOB = """
import os
import torch
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    loss = model(torch.randn(16, 64)).square().mean()
    opt.zero_grad(); loss.backward(); opt.step()
from gcprof.allocator_trace import Attacher
queued = [c for c, _ in torch.cuda._queued_calls if isinstance(c, Attacher)]
print("queued", len(queued))
for c in queued:
    c()  # what torch.cuda._lazy_init would do, minus CUDA
    print("attached", c.attached, "calls", c.calls)
print("conf", os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))
print("cuda initialised", torch.cuda.is_initialized())
"""


def cuda_torch():
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.version.cuda or '')"],
                           capture_output=True, text=True, timeout=120)
    return probe.returncode == 0 and probe.stdout.strip() != ""


class Registration(unittest.TestCase):
    gcprof = None

    def test_the_attach_is_queued_and_harmless_without_cuda(self):
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "trace.db")
            env = dict(os.environ)
            env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
            job = subprocess.run([self.gcprof, "record", "-o", db, "--", sys.executable, "-c", JOB],
                                 capture_output=True, text=True, timeout=300, env=env)
            print(job.stdout, job.stderr, sep="\n")
            self.assertEqual(job.returncode, 0, "record exited %d" % job.returncode)
            self.assertIn("queued 1", job.stdout, "the shim did not queue the attach exactly once")
            self.assertIn("attached False calls 1", job.stdout)
            self.assertIn("conf None", job.stdout, "the job's allocator settings were changed")
            self.assertIn("cuda initialised False", job.stdout)
            self.assertNotIn("allocator not observed", job.stderr)


def main():
    Registration.gcprof = sys.argv[1]
    if driver_present():
        print("a CUDA driver is installed: this test is for machines without one")
        return SKIP
    if not cuda_torch():
        print("python3's torch is a CPU-only build: no CUDA allocator to register with")
        return SKIP
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[1]))), "lib",
                       "libgcprof_allocator_trace.so")
    if not os.path.exists(lib):
        print("no %s: built without LibTorch's CUDA libraries" % lib)
        return SKIP
    result = unittest.main(argv=sys.argv[:1], exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
