"""Robustness sweep: the Hugging Face Trainer on a tiny GPT-2 (random
weights, synthetic tokens); prints the logged loss per step. Under torchrun
(2 ranks, DDP on CPU with gloo) each rank prints `rank <r> step <i> loss <v>`.

    python3 probe_trainer.py [--accum N]
    torchrun --standalone --nproc_per_node=2 probe_trainer.py --accum 2
"""
import argparse
import os
import tempfile

import torch
import transformers as tf

p = argparse.ArgumentParser()
p.add_argument("--accum", type=int, default=1, help="gradient_accumulation_steps")
args = p.parse_args()
rank = os.environ.get("RANK")

torch.set_num_threads(1)
cfg = tf.GPT2Config(n_layer=4, n_embd=64, n_head=4, n_positions=256, vocab_size=256,
                    attn_implementation="eager", use_cache=False)
tf.set_seed(0)
model = tf.GPT2LMHeadModel(cfg)
gen = torch.Generator().manual_seed(1)
data = [{"input_ids": t, "labels": t} for t in torch.randint(0, 256, (64, 256), generator=gen)]


class Print(tf.TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "loss" in logs:
            who = f"rank {rank} " if rank is not None else ""
            print("%sstep %d loss %.6f" % (who, state.global_step - 1, logs["loss"]), flush=True)


targs = tf.TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=8,
                             gradient_accumulation_steps=args.accum,
                             max_steps=3, logging_steps=1, save_strategy="no", report_to=[],
                             use_cpu=True, seed=0, dataloader_num_workers=0, disable_tqdm=True,
                             learning_rate=1e-3)
tf.Trainer(model=model, args=targs, train_dataset=data, callbacks=[Print()]).train()
