#!/usr/bin/env python3
"""Jobs whose size is not the batch: the image side of vision models and the
sequence length of decoders, built from configs with random weights (nothing
downloaded), trained on random data. The what-if benchmark by resolution and
sequence length (bench/RESULTS.md, "What fits by resolution and sequence
length") records them at a few sizes and verifies the predictions.
Prints `step <i> loss <value>` per step.

    size_job.py resnet18 | resnet50 | vit | hf-vit --image PX [--batch B]
    size_job.py gpt2 | llama --seq N [--batch B]

gpt2, llama: 2 layers, 64 wide, eager attention, positions up to 2048 (the
parameters do not change with the sequence length).

vit: torchvision's VisionTransformer, patch 16, 2 layers, 64 wide, built for
the image side (its position embedding has one row per patch), so the side
must be a multiple of 16. Its attention runs through scaled_dot_product_attention.
hf-vit: Hugging Face's ViTForImageClassification, the same shape, with eager
attention: the scores (patches x patches per head) are materialized, so
they grow with side^4.
"""
import argparse

import torch
import torch.nn.functional as F


def vision(name, image, layers):
    import torchvision.models as m
    if name == "vit":
        from torchvision.models.vision_transformer import VisionTransformer
        return VisionTransformer(image_size=image, patch_size=16, num_layers=layers, num_heads=4,
                                 hidden_dim=64, mlp_dim=256, num_classes=10)
    if name == "hf-vit":
        import transformers as tf
        cfg = tf.ViTConfig(image_size=image, patch_size=16, num_hidden_layers=layers, hidden_size=64,
                           num_attention_heads=4, intermediate_size=256, num_labels=10,
                           attn_implementation="eager")
        return tf.ViTForImageClassification(cfg)
    return getattr(m, name)(num_classes=10)


def decoder(name, seq, layers):
    import transformers as tf
    common = dict(vocab_size=256, attn_implementation="eager", use_cache=False)
    if name == "gpt2":
        cfg = tf.GPT2Config(n_layer=layers, n_embd=64, n_head=4, n_positions=2048, **common)
        return tf.GPT2LMHeadModel(cfg)
    cfg = tf.LlamaConfig(hidden_size=64, intermediate_size=172, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=2048, **common)
    return tf.LlamaForCausalLM(cfg)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", choices=["resnet18", "resnet50", "vit", "hf-vit", "gpt2", "llama"])
    ap.add_argument("--image", type=int, default=64)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    text = a.model in ("gpt2", "llama")
    model = decoder(a.model, a.seq, a.layers) if text else vision(a.model, a.image, a.layers)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    gen = torch.Generator().manual_seed(1)
    for step in range(a.steps):
        if text:
            ids = torch.randint(0, 256, (a.batch, a.seq), generator=gen)
            loss = model(input_ids=ids, labels=ids).loss
        else:
            x = torch.randn(a.batch, 3, a.image, a.image, generator=gen)
            y = torch.randint(0, 10, (a.batch,), generator=gen)
            loss = model(pixel_values=x, labels=y).loss if a.model == "hf-vit" else F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)


if __name__ == "__main__":
    main()
