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

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRAIN_GPT = os.path.join(ROOT, "samples", "python", "train_gpt.py")
REFERENCE = os.path.join(ROOT, "tests", "e2e", "saved_bytes_reference.py")
TINY = ["--layers", "3", "--hidden", "32", "--heads", "2", "--seq", "16", "--batch", "2",
        "--vocab", "64", "--steps", "3", "--seed", "11"]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, "%s exited %d:\n%s" % (cmd, p.returncode, p.stderr)
    return p.stdout


def losses(text):
    lines = text.splitlines()
    assert all(l.startswith("step %d loss " % i) for i, l in enumerate(lines)), text
    return [float(l.split()[-1]) for l in lines]


def test_python_sample_is_deterministic():
    first = run([sys.executable, TRAIN_GPT] + TINY + ["--dropout", "0.1"])
    assert len(losses(first)) == 3
    assert first == run([sys.executable, TRAIN_GPT] + TINY + ["--dropout", "0.1"])


def test_cpp_and_python_samples_are_twins(gpt_train):
    for extra in ([], ["--dropout", "0.1"]):
        py = losses(run([sys.executable, TRAIN_GPT] + TINY + extra))
        cpp = losses(run([gpt_train] + TINY + extra))
        assert len(py) == len(cpp) == 3
        for a, b in zip(py, cpp):
            assert abs(a - b) <= 1e-4 * max(1.0, abs(a)), "python %s vs C++ %s (%s)" % (py, cpp, extra)


def test_python_sample_is_importable():
    sys.path.insert(0, os.path.dirname(TRAIN_GPT))
    import torch
    import train_gpt
    args = train_gpt.parse_args(TINY)
    model = train_gpt.build_model(args)
    names = {n for n, _ in model.named_modules()}
    for expected in ("tok", "pos", "layers.2", "layers.2.attn", "layers.2.attn.qkv", "layers.2.mlp.fc2",
                     "ln_f", "head"):
        assert expected in names, expected
    inputs, targets = train_gpt.make_batch(args, train_gpt.data_generator(args))
    assert inputs.shape == targets.shape == (2, 16)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])
    assert model(inputs).shape == (2, 16, 64)


def test_saved_bytes_reference():
    plain = json.loads(run([sys.executable, REFERENCE] + TINY))
    dropout = json.loads(run([sys.executable, REFERENCE] + TINY + ["--dropout", "0.1"]))
    assert list(plain) == ["layers.0", "layers.1", "layers.2"], plain
    assert all(v > 0 for v in plain.values()) and len(set(plain.values())) == 1, plain
    # Parameters (12*32*32 floats per layer) are not activations: a layer saves
    # at least its ln1 output, qkv output, attention probabilities and fc1/gelu outputs.
    b, s, h, heads = 2, 16, 32, 2
    floor = 4 * (b * s * h + b * s * 3 * h + b * heads * s * s + 2 * b * s * 4 * h)
    assert plain["layers.0"] >= floor, (plain, floor)
    # Dropout keeps its masks for backward.
    assert all(dropout[k] > plain[k] for k in plain), (plain, dropout)


def main(argv):
    gpt_train = argv[1] if len(argv) > 1 else os.path.join(ROOT, "build", "bin", "gpt_train")
    tests = [test_python_sample_is_deterministic, lambda: test_cpp_and_python_samples_are_twins(gpt_train),
             test_python_sample_is_importable, test_saved_bytes_reference]
    for t in tests:
        t()
    print("samples ok: deterministic, C++ and python twins, importable, reference counts")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
