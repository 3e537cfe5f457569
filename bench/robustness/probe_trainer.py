"""Robustness sweep: the Hugging Face Trainer on a tiny GPT-2 (random
weights, synthetic tokens); prints the logged loss per step."""
import os
import sys
import tempfile

import torch
import transformers as tf

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
            print("step %d loss %.6f" % (state.global_step - 1, logs["loss"]), flush=True)


args = tf.TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=8,
                            max_steps=3, logging_steps=1, save_strategy="no", report_to=[],
                            use_cpu=True, seed=0, dataloader_num_workers=0, disable_tqdm=True,
                            learning_rate=1e-3)
tf.Trainer(model=model, args=args, train_dataset=data, callbacks=[Print()]).train()
