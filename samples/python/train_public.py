#!/usr/bin/env python3
"""Public model families trained small on synthetic data, in plain PyTorch.

The jobs gcprof must understand without being told their naming habits:
torchvision ResNet and VisionTransformer, Hugging Face GPT-2, Llama, BERT, ALBERT
(one layer shared by every depth: weight sharing), T5 and BART (encoder-decoders), Whisper
(an audio encoder-decoder reading log-mel frames), all built from configs with
random weights (nothing is downloaded). It imports nothing of gcprof.

    python3 samples/python/train_public.py --model resnet18 --steps 3
    python3 samples/python/train_public.py --model gpt2 --accum 2
    python3 samples/python/train_public.py --model vit --compile
    python3 samples/python/train_public.py --model gpt2 --validate
    python3 samples/python/train_public.py --model gpt2 --distill

Prints one line per optimizer step: `step <i> loss <value>` (the last
micro-batch's loss with --accum). Deterministic on CPU for a given --seed.
"""
import argparse
import sys

import torch
import torch.nn.functional as F

MODELS = ("resnet18", "resnet50", "vit", "gpt2", "llama", "albert", "bert", "t5", "bart", "whisper")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=MODELS, required=True)
    p.add_argument("--layers", type=int, default=4, help="transformer layers (vit, gpt2, llama, albert, bert)")
    p.add_argument("--hidden", type=int, default=64, help="transformer width")
    p.add_argument("--seq", type=int, default=128, help="tokens per sequence (gpt2, llama, albert)")
    p.add_argument("--image", type=int, default=64, help="image side in pixels (resnet, vit)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--accum", type=int, default=1, help="micro-batches per optimizer step")
    p.add_argument("--compile", action="store_true", help="train torch.compile(model)")
    p.add_argument("--validate", action="store_true",
                   help="after each optimizer step, a validation forward in eval() mode under no_grad")
    p.add_argument("--distill", action="store_true",
                   help="distillation: a frozen teacher of the same architecture runs first each "
                        "step (eval(), no_grad); the student also learns its logits")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="cuda: model and batches on the GPU (batches still drawn on the CPU, "
                        "so the data are the same on either)")
    args = p.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda but no CUDA device is available; use --device cpu")
    if args.accum < 1:
        p.error("--accum must be at least 1")
    return args


def is_vision(args):
    return args.model in ("resnet18", "resnet50", "vit")


def build_model(args):
    torch.manual_seed(args.seed)
    if args.model in ("resnet18", "resnet50"):
        import torchvision
        return getattr(torchvision.models, args.model)(num_classes=10)
    if args.model == "vit":
        from torchvision.models import VisionTransformer
        return VisionTransformer(image_size=args.image, patch_size=8, num_layers=args.layers,
                                 num_heads=4, hidden_dim=args.hidden, mlp_dim=4 * args.hidden,
                                 num_classes=10)
    import transformers as tf
    # Eager attention keeps the textbook tensors (scores, probabilities) for
    # backward: activation-heavy as training at long sequence lengths is.
    # No KV cache: training does not use one (a cache would also grow again
    # when a checkpoint recomputes a layer; safe plans handle that case, docs/plan.md).
    common = dict(vocab_size=args.vocab, attn_implementation="eager", use_cache=False)
    if args.model == "gpt2":
        cfg = tf.GPT2Config(n_layer=args.layers, n_embd=args.hidden, n_head=4,
                            n_positions=args.seq, resid_pdrop=0.0, embd_pdrop=0.0,
                            attn_pdrop=0.0, **common)
        return tf.GPT2LMHeadModel(cfg)
    if args.model == "llama":
        cfg = tf.LlamaConfig(hidden_size=args.hidden, intermediate_size=3 * args.hidden,
                             num_hidden_layers=args.layers, num_attention_heads=4,
                             num_key_value_heads=2, max_position_embeddings=args.seq, **common)
        return tf.LlamaForCausalLM(cfg)
    if args.model == "t5":
        cfg = tf.T5Config(d_model=args.hidden, d_kv=args.hidden // 4, d_ff=4 * args.hidden,
                          num_layers=args.layers, num_decoder_layers=args.layers, num_heads=4,
                          dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0,
                          vocab_size=args.vocab, use_cache=False)
        return tf.T5ForConditionalGeneration(cfg)
    if args.model == "bart":
        cfg = tf.BartConfig(d_model=args.hidden, encoder_layers=args.layers, decoder_layers=args.layers,
                            encoder_attention_heads=4, decoder_attention_heads=4,
                            encoder_ffn_dim=4 * args.hidden, decoder_ffn_dim=4 * args.hidden,
                            max_position_embeddings=args.seq, dropout=0.0, attention_dropout=0.0,
                            **common)
        return tf.BartForConditionalGeneration(cfg)
    if args.model == "whisper":
        # --seq mel frames (the encoder's second convolution halves them), 80
        # mel bins, a transcript of a sixteenth as many tokens: speech is
        # encoder-heavy.
        cfg = tf.WhisperConfig(d_model=args.hidden, encoder_layers=args.layers, decoder_layers=args.layers,
                               encoder_attention_heads=4, decoder_attention_heads=4,
                               encoder_ffn_dim=4 * args.hidden, decoder_ffn_dim=4 * args.hidden,
                               num_mel_bins=80, max_source_positions=args.seq // 2,
                               max_target_positions=args.seq, dropout=0.0, attention_dropout=0.0,
                               decoder_start_token_id=1, pad_token_id=0, bos_token_id=1,
                               eos_token_id=2, **common)
        return tf.WhisperForConditionalGeneration(cfg)
    if args.model == "bert":
        cfg = tf.BertConfig(hidden_size=args.hidden, num_hidden_layers=args.layers, num_attention_heads=4,
                            intermediate_size=4 * args.hidden, max_position_embeddings=args.seq,
                            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **common)
        return tf.BertForMaskedLM(cfg)
    cfg = tf.AlbertConfig(embedding_size=32, hidden_size=args.hidden, num_hidden_layers=args.layers,
                          num_attention_heads=4, intermediate_size=4 * args.hidden,
                          max_position_embeddings=args.seq, hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0, **common)
    return tf.AlbertForMaskedLM(cfg)


def make_batch(args, gen):
    if is_vision(args):
        x = torch.randn(args.batch, 3, args.image, args.image, generator=gen)
        return x, torch.randint(0, 10, (args.batch,), generator=gen)
    if args.model == "whisper":  # log-mel frames in, tokens out
        x = torch.randn(args.batch, 80, args.seq, generator=gen)
        return x, torch.randint(2, args.vocab, (args.batch, max(8, args.seq // 16)), generator=gen)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=gen)
    return tokens[:, :-1], tokens[:, 1:]


def loss_of(args, model, x, y):
    # T5 and BART read x and write y (their decoders see y shifted right).
    if args.model == "whisper":
        out = model(input_features=x, labels=y.contiguous())
    else:
        out = model(input_ids=x, labels=y.contiguous()) if args.model in ("t5", "bart") else model(x)
    logits = out if torch.is_tensor(out) else out.logits
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def logits_of(args, model, x):
    out = model(x)
    return out if torch.is_tensor(out) else out.logits


def main(argv=None):
    args = parse_args(argv)
    teacher = None
    if args.distill:
        teacher = build_model(argparse.Namespace(**{**vars(args), "seed": args.seed + 7}))
        teacher.eval().requires_grad_(False)
        teacher.to(args.device)
    model = build_model(args).to(args.device)
    model.train()
    # Plain SGD: the optimizer state stays small, so activations dominate the
    # peak as they do in real training at real sizes.
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    if args.compile:
        model = torch.compile(model, backend="aot_eager")
    gen = torch.Generator().manual_seed(args.seed + 1)
    for step in range(args.steps):
        opt.zero_grad(set_to_none=True)
        for _ in range(args.accum):
            x, y = (t.to(args.device) for t in make_batch(args, gen))
            if teacher is not None:  # the teacher is the first module called each step
                with torch.no_grad():
                    soft = F.softmax(logits_of(args, teacher, x), -1)
                logits = logits_of(args, model, x)
                loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)) + \
                    F.kl_div(F.log_softmax(logits, -1), soft, reduction="batchmean")
            else:
                loss = loss_of(args, model, x, y) / args.accum
            loss.backward()
        opt.step()
        if args.validate:
            model.eval()
            with torch.no_grad():
                x, y = (t.to(args.device) for t in make_batch(args, gen))
                print(f"validation {step} loss {loss_of(args, model, x, y).item():.6f}", flush=True)
            model.train()
        print(f"step {step} loss {loss.item():.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
