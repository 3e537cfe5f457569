#!/usr/bin/env python3
"""The training samples: deterministic, twins of each other, importable; and the
saved-bytes reference the end-to-end tests compare recordings against.

    python3 tests/torch/samples_test.py build/bin/gpt_train

The C++ and python samples run the same ATen ops from the same seeds, so on CPU
they print the same losses; a model change on one side only breaks this test.
"""
import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRAIN_GPT = os.path.join(ROOT, "samples", "python", "train_gpt.py")
REFERENCE = os.path.join(ROOT, "tests", "e2e", "saved_bytes_reference.py")
GPT_TRAIN = os.path.join(ROOT, "build", "bin", "gpt_train")  # argv[1] overrides
TINY = ["--layers", "3", "--hidden", "32", "--heads", "2", "--seq", "16", "--batch", "2",
        "--vocab", "64", "--steps", "3", "--seed", "11"]


def run(test, cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    test.assertEqual(p.returncode, 0, "%s exited %d:\n%s" % (cmd, p.returncode, p.stderr))
    return p.stdout


def losses(test, text):
    lines = text.splitlines()
    test.assertTrue(all(l.startswith("step %d loss " % i) for i, l in enumerate(lines)), text)
    return [float(l.split()[-1]) for l in lines]


class Samples(unittest.TestCase):
    def test_python_sample_is_deterministic(self):
        first = run(self, [sys.executable, TRAIN_GPT] + TINY + ["--dropout", "0.1"])
        self.assertEqual(len(losses(self, first)), 3)
        self.assertEqual(first, run(self, [sys.executable, TRAIN_GPT] + TINY + ["--dropout", "0.1"]))

    def test_cpp_and_python_samples_are_twins(self):
        for extra in ([], ["--dropout", "0.1"]):
            py = losses(self, run(self, [sys.executable, TRAIN_GPT] + TINY + extra))
            cpp = losses(self, run(self, [GPT_TRAIN] + TINY + extra))
            self.assertEqual((len(py), len(cpp)), (3, 3))
            for a, b in zip(py, cpp):
                self.assertLessEqual(abs(a - b), 1e-4 * max(1.0, abs(a)),
                                     "python %s vs C++ %s (%s)" % (py, cpp, extra))

    def test_python_sample_is_importable(self):
        sys.path.insert(0, os.path.dirname(TRAIN_GPT))
        import torch
        import train_gpt
        args = train_gpt.parse_args(TINY)
        model = train_gpt.build_model(args)
        names = {n for n, _ in model.named_modules()}
        for expected in ("tok", "pos", "layers.2", "layers.2.attn", "layers.2.attn.qkv",
                         "layers.2.mlp.fc2", "ln_f", "head"):
            self.assertIn(expected, names)
        inputs, targets = train_gpt.make_batch(args, train_gpt.data_generator(args))
        self.assertEqual(tuple(inputs.shape), (2, 16))
        self.assertEqual(tuple(targets.shape), (2, 16))
        self.assertTrue(torch.equal(inputs[:, 1:], targets[:, :-1]))
        self.assertEqual(tuple(model(inputs).shape), (2, 16, 64))

    def test_saved_bytes_reference(self):
        plain = json.loads(run(self, [sys.executable, REFERENCE] + TINY))
        dropout = json.loads(run(self, [sys.executable, REFERENCE] + TINY + ["--dropout", "0.1"]))
        self.assertEqual(list(plain), ["layers.0", "layers.1", "layers.2"])
        self.assertTrue(all(v > 0 for v in plain.values()) and len(set(plain.values())) == 1, plain)
        # Parameters (12*32*32 floats per layer) are not activations: a layer saves
        # at least its ln1 output, qkv output, attention probabilities and fc1/gelu outputs.
        b, s, h, heads = 2, 16, 32, 2
        floor = 4 * (b * s * h + b * s * 3 * h + b * heads * s * s + 2 * b * s * 4 * h)
        self.assertGreaterEqual(plain["layers.0"], floor)
        # Dropout keeps its masks for backward.
        self.assertTrue(all(dropout[k] > plain[k] for k in plain), (plain, dropout))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        GPT_TRAIN = sys.argv.pop(1)
    unittest.main(verbosity=2)
