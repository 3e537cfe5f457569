"""A new user's Whisper job: whisper-tiny's shape (4+4 layers, d_model 384, 6 heads,
ffn 1536, 80 mels, 3000 frames), random weights, HF's default attention (sdpa),
default threads. --trainer: HF Seq2SeqTrainer; --bf16: CPU autocast."""
import argparse, tempfile, torch, transformers as tf
p = argparse.ArgumentParser()
p.add_argument("--batch", type=int, default=1)
p.add_argument("--frames", type=int, default=3000)
p.add_argument("--hidden", type=int, default=384)
p.add_argument("--heads", type=int, default=6)
p.add_argument("--vocab", type=int, default=1000)
p.add_argument("--tokens", type=int, default=64)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--attn", default=None)
p.add_argument("--dropout", type=float, default=0.0)
p.add_argument("--bf16", action="store_true")
p.add_argument("--trainer", action="store_true")
a = p.parse_args()
torch.manual_seed(0)
kw = dict(d_model=a.hidden, encoder_layers=4, decoder_layers=4, encoder_attention_heads=a.heads,
          decoder_attention_heads=a.heads, encoder_ffn_dim=4 * a.hidden, decoder_ffn_dim=4 * a.hidden,
          num_mel_bins=80, max_source_positions=a.frames // 2, vocab_size=a.vocab,
          decoder_start_token_id=1, pad_token_id=0, bos_token_id=1, eos_token_id=2, use_cache=False,
          dropout=a.dropout, activation_dropout=a.dropout, attention_dropout=a.dropout)
if a.attn:
    kw["attn_implementation"] = a.attn
model = tf.WhisperForConditionalGeneration(tf.WhisperConfig(**kw))
gen = torch.Generator().manual_seed(1)
n = a.batch * a.steps
feats = torch.randn(n, 80, a.frames, generator=gen)
labels = torch.randint(3, a.vocab, (n, a.tokens), generator=gen)
if a.trainer:
    data = [{"input_features": f, "labels": l} for f, l in zip(feats, labels)]
    class Print(tf.TrainerCallback):
        def on_log(self, args, state, control, logs=None, **k):
            if logs and "loss" in logs:
                print("step %d loss %.6f" % (state.global_step - 1, logs["loss"]), flush=True)
    targs = tf.Seq2SeqTrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=a.batch,
                                        max_steps=a.steps, logging_steps=1, save_strategy="no", report_to=[],
                                        use_cpu=True, seed=0, dataloader_num_workers=0, disable_tqdm=True,
                                        learning_rate=1e-3, bf16=a.bf16)
    tf.Seq2SeqTrainer(model=model, args=targs, train_dataset=data, callbacks=[Print()]).train()
else:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    for s in range(a.steps):
        x, y = feats[s * a.batch:(s + 1) * a.batch], labels[s * a.batch:(s + 1) * a.batch]
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            loss = model(input_features=x, labels=y).loss
        loss.backward()
        opt.step()
        print("step %d loss %.6f" % (s, loss.item()), flush=True)
