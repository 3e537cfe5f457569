"""A small training job on a public model family, built from a config with
random weights (nothing downloaded): what a user's own script looks like to
gcprof. Prints `step <i> loss <value>` like the samples.

    public_model_job.py resnet18 | gpt2 | gpt2-vocab  [--steps N]

resnet18: torchvision's, with its ReLU(inplace=True) modules and BatchNorm.
gpt2: Hugging Face GPT-2 with its defaults (use_cache=True, dropout 0.1).
gpt2-vocab: the same with GPT-2's default vocabulary (50257 tokens), as a
  GPT2Config "from a small config" keeps it: 4 layers, batch 4, sequence 128.
  Large-vocabulary models peak at the logits and the cross-entropy, not in
  the blocks.
"""
import argparse

import torch


def resnet18():
    import torchvision
    model = torchvision.models.resnet18(num_classes=10)
    gen = torch.Generator().manual_seed(1)

    def batch():
        x = torch.randn(8, 3, 64, 64, generator=gen)
        return (x,), {}, torch.randint(0, 10, (8,), generator=gen)

    def loss_of(model, inputs, kwargs, target):
        return torch.nn.functional.cross_entropy(model(*inputs), target)

    return model, batch, loss_of, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def gpt2(layers=8, vocab=256, batch=16, seq=128):
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(n_layer=layers, n_embd=64, n_head=4, vocab_size=vocab, n_positions=128,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)
    gen = torch.Generator().manual_seed(1)

    def batch_of():
        ids = torch.randint(0, vocab, (batch, seq), generator=gen)
        return (ids,), {"labels": ids}, None

    def loss_of(model, inputs, kwargs, target):
        return model(*inputs, **kwargs).loss

    return model, batch_of, loss_of, torch.optim.AdamW(model.parameters(), lr=1e-3)


def gpt2_vocab():
    from transformers import GPT2Config
    return gpt2(layers=4, vocab=GPT2Config().vocab_size, batch=4, seq=128)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=["resnet18", "gpt2", "gpt2-vocab"])
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model, batch, loss_of, opt = {"resnet18": resnet18, "gpt2": gpt2, "gpt2-vocab": gpt2_vocab}[args.model]()
    model.train()
    for step in range(args.steps):
        inputs, kwargs, target = batch()
        loss = loss_of(model, inputs, kwargs, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step %d loss %.6f" % (step, loss.item()), flush=True)


if __name__ == "__main__":
    main()
