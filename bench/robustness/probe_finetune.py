"""Fine-tuning probes of the robustness sweep (sweep.py, bench/history/robustness-sweep.md):
the ways people fine-tune, on the probe_job.py models (tiny, random weights,
nothing downloaded). Prints `step <i> loss <value>`.

    probe_finetune.py MODEL --tune T [--layers N --hidden H --seq S --batch B --image PX]
    sweep.py ft-freeze-gpt2 probe_finetune.py gpt2 --tune freeze_half

T (one or more, comma-separated):
  freeze_half  the embeddings and the lower half of the blocks frozen
               (requires_grad_(False)); the optimizer gets the rest
  freeze_head  everything but the head frozen (HF: but the last block)
  lora         peft LoRA (r=8) on the attention projections; base frozen
  prefix       peft prefix tuning (8 virtual tokens: keys and values passed
               to every layer as past_key_values); base frozen (HF causal LMs)
  hf_gc        the user's HF model.gradient_checkpointing_enable()
  user_ckpt    the user's torch.utils.checkpoint around each block, from
               the parent's forward (MODEL tenc only)
  varlen       text padded to the batch's longest, a new length every step
  two_backward a second loss on the same output, two backward calls
               (retain_graph=True on the first)
  distill      a frozen teacher (same architecture, eval, torch.no_grad)
               runs first each step; the student learns its logits
  ema          a momentum teacher (BYOL/DINO/MoCo): a deep copy of the model
               run under torch.no_grad each step (after the student), and
               lerped toward the student's parameters after each
               optimizer step; the student also learns the teacher's logits
  ckpt_mlp     the user's torch.utils.checkpoint around the MLP of each
               block only, from the block's forward (MODEL blocks, clip)
MODEL: a probe_job.py model, llama, vit (a small torchvision
VisionTransformer), tenc (an nn.TransformerEncoderLayer stack), blocks
(pre-norm transformer blocks with `attn` and `mlp` sub-modules) or clip (two
towers of such blocks, an image encoder and a text encoder, two separate
root modules trained by one optimizer on one contrastive loss; --towers 3:
three TextTower instances, one per text field, their losses summed) or recsys
(nn.EmbeddingBag(sparse=True) under SparseAdam and an MLP tower of blocks
under Adam: two optimizers, sparse gradients).
"""
import argparse
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

import probe_job

V = probe_job.V


class Tenc(nn.Module):
    """A text encoder whose forward checkpoints each layer itself, as users write it."""

    def __init__(self, layers, hidden, user_ckpt):
        super().__init__()
        self.emb = nn.Embedding(V, hidden)
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(hidden, 4, 4 * hidden, dropout=0.1,
                                                               batch_first=True)
                                    for _ in range(layers))
        self.head = nn.Linear(hidden, V)
        self.user_ckpt = user_ckpt

    def forward(self, ids):
        x = self.emb(ids)
        for layer in self.layers:
            if self.user_ckpt and torch.is_grad_enabled():
                x = checkpoint(layer, x, use_reentrant=False)
            else:
                x = layer(x)
        return self.head(x)


class Block(nn.Module):
    """A pre-norm transformer block, `attn` and `mlp` as sub-modules (as
    timm, open_clip, nanoGPT write it); with ckpt_mlp the block checkpoints
    its MLP itself."""

    def __init__(self, hidden, ckpt_mlp):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = nn.MultiheadAttention(hidden, 4, batch_first=True)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))
        self.ckpt_mlp = ckpt_mlp

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        h = self.ln2(x)
        if self.ckpt_mlp and torch.is_grad_enabled():
            return x + checkpoint(self.mlp, h, use_reentrant=False)
        return x + self.mlp(h)


class Blocks(nn.Module):
    """A token model of Blocks: embedding, blocks, head."""

    def __init__(self, layers, hidden, ckpt_mlp, out=V):
        super().__init__()
        self.emb = nn.Embedding(V, hidden)
        self.blocks = nn.ModuleList(Block(hidden, ckpt_mlp) for _ in range(layers))
        self.head = nn.Linear(hidden, out)

    def forward(self, ids):
        x = self.emb(ids)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


class ImageTower(nn.Module):
    """CLIP's image encoder: patches, Blocks, the mean token projected."""

    def __init__(self, layers, hidden, ckpt_mlp, patch=8):
        super().__init__()
        self.patch = nn.Conv2d(3, hidden, patch, stride=patch)
        self.blocks = nn.ModuleList(Block(hidden, ckpt_mlp) for _ in range(layers))
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, images):
        x = self.patch(images).flatten(2).transpose(1, 2)
        for b in self.blocks:
            x = b(x)
        return self.proj(x.mean(1))


class TextTower(nn.Module):
    """CLIP's text encoder: tokens, Blocks, the mean token projected."""

    def __init__(self, layers, hidden, ckpt_mlp):
        super().__init__()
        self.emb = nn.Embedding(V, hidden)
        self.layers = nn.ModuleList(Block(hidden, ckpt_mlp) for _ in range(layers))
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, ids):
        x = self.emb(ids)
        for b in self.layers:
            x = b(x)
        return self.proj(x.mean(1))


class Recsys(nn.Module):
    """A recommendation model: sparse features pooled by an EmbeddingBag
    (sparse gradients), an MLP tower of blocks, a click logit."""

    def __init__(self, layers, hidden, rows=20000):
        super().__init__()
        self.emb = nn.EmbeddingBag(rows, hidden, mode="sum", sparse=True)
        self.tower = nn.ModuleList(nn.Sequential(nn.Linear(hidden if i == 0 else 4 * hidden, 4 * hidden),
                                                 nn.LayerNorm(4 * hidden), nn.ReLU())
                                   for i in range(layers))
        self.out = nn.Linear(4 * hidden, 1)

    def forward(self, ids, offsets):
        x = self.emb(ids, offsets)
        for block in self.tower:
            x = block(x)
        return self.out(x).squeeze(-1)


def train_recsys(a):
    model = Recsys(a.layers, a.hidden)
    sparse = torch.optim.SparseAdam(list(model.emb.parameters()), lr=1e-3)
    dense = torch.optim.Adam([p for n, p in model.named_parameters() if not n.startswith("emb.")], lr=1e-3)
    gen = torch.Generator().manual_seed(1)
    batch = a.batch * 64
    for step in range(a.steps):
        ids = torch.randint(0, 20000, (batch * 8,), generator=gen)
        offsets = torch.arange(0, batch * 8, 8)
        y = torch.randint(0, 2, (batch,), generator=gen).float()
        sparse.zero_grad()
        dense.zero_grad()
        loss = F.binary_cross_entropy_with_logits(model(ids, offsets), y)
        loss.backward()
        sparse.step()
        dense.step()
        print("step %d loss %.6f" % (step, loss.item()), flush=True)


def clip_loss(img, txt):
    img, txt = F.normalize(img, dim=-1), F.normalize(txt, dim=-1)
    logits = img @ txt.t() / 0.07
    labels = torch.arange(len(img))
    return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2


def build(a, tunes):
    if a.model == "blocks":
        return Blocks(a.layers, a.hidden, "ckpt_mlp" in tunes), "tenc"
    if a.model == "llama":
        import transformers as tf
        cfg = tf.LlamaConfig(vocab_size=V, hidden_size=a.hidden, intermediate_size=3 * a.hidden,
                             num_hidden_layers=a.layers, num_attention_heads=4,
                             num_key_value_heads=2, max_position_embeddings=a.seq,
                             attn_implementation="eager", use_cache=False)
        return tf.LlamaForCausalLM(cfg), "clm"
    if a.model == "vit":
        from torchvision.models import VisionTransformer
        return VisionTransformer(image_size=a.image, patch_size=8, num_layers=a.layers, num_heads=4,
                                 hidden_dim=a.hidden, mlp_dim=4 * a.hidden, num_classes=10), "cls"
    if a.model == "tenc":
        return Tenc(a.layers, a.hidden, "user_ckpt" in tunes), "tenc"
    try:
        return probe_job.hf(a.model, a.layers, a.hidden, a.seq)
    except SystemExit:
        return probe_job.vision(a.model, a.image)


def blocks(model):
    """(embeddings and everything before the blocks, the block list, the head) of known families."""
    for path in ("transformer.h", "model.layers", "bert.encoder.layer", "gpt_neox.layers",
                 "encoder.layers", "layers"):
        obj = model
        try:
            for part in path.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            continue
        return obj
    if hasattr(model, "layer1"):  # ResNet: its stages' blocks, in order
        return [b for s in (model.layer1, model.layer2, model.layer3, model.layer4) for b in s]
    raise SystemExit("no block list known for " + type(model).__name__)


def freeze(model, tunes):
    if not tunes & {"freeze_half", "freeze_head"}:
        return
    bl = list(blocks(model))
    if "freeze_half" in tunes:
        model.requires_grad_(False)
        for b in bl[len(bl) // 2:]:
            b.requires_grad_(True)
        # the head and final norm stay trainable: whatever follows the blocks
        for name in ("fc", "heads", "head", "cls", "lm_head", "transformer.ln_f", "model.norm",
                     "encoder.ln"):
            obj = model
            try:
                for part in name.split("."):
                    obj = getattr(obj, part)
            except AttributeError:
                continue
            obj.requires_grad_(True)
        if hasattr(model, "transformer"):  # GPT-2 ties lm_head to wte: keep the embedding frozen
            model.transformer.wte.requires_grad_(False)
    if "freeze_head" in tunes:
        model.requires_grad_(False)
        for name in ("fc", "heads", "head", "cls"):
            if hasattr(model, name):
                getattr(model, name).requires_grad_(True)
                break
        else:  # HF causal LMs: the head is tied to the embedding; the last block learns
            bl[-1].requires_grad_(True)


def lora(model, a):
    from peft import LoraConfig, get_peft_model
    targets = ["c_attn"] if a.model == "gpt2" else ["q_proj", "v_proj"]
    cfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.1, target_modules=targets,
                     fan_in_fan_out=a.model == "gpt2")
    return get_peft_model(model, cfg)


def prefix(model, a):
    from peft import PrefixTuningConfig, get_peft_model
    return get_peft_model(model, PrefixTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=8))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--tune", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--image", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--towers", type=int, default=1, help="clip: text towers (instances of one class)")
    a = ap.parse_args()
    tunes = set(a.tune.split(","))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if a.model == "clip":
        return train_clip(a, tunes)
    if a.model == "recsys":
        return train_recsys(a)
    model, kind = build(a, tunes)
    teacher = None
    if "distill" in tunes:
        teacher, _ = build(a, tunes)
        teacher.eval()
        teacher.requires_grad_(False)
    freeze(model, tunes)
    if "ema" in tunes:
        teacher = copy.deepcopy(model)
        teacher.requires_grad_(False)
    if "lora" in tunes:
        model = lora(model, a)
    if "prefix" in tunes:
        model = prefix(model, a)
    if "hf_gc" in tunes:
        model.gradient_checkpointing_enable()
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1e-2, momentum=0.9)
    gen = torch.Generator().manual_seed(1)

    def batch():
        if kind in ("cls", "seg"):
            x = torch.randn(a.batch, 3, a.image, a.image, generator=gen)
            if kind == "cls":
                return x, torch.randint(0, 10, (a.batch,), generator=gen), None
            return x, torch.randint(0, 4, (a.batch, a.image, a.image), generator=gen), None
        if "varlen" not in tunes:
            t = torch.randint(2, V, (a.batch, a.seq), generator=gen)
            return t, t, torch.ones_like(t)
        # each text its own length; the batch padded to its longest (token 0, label -100)
        lens = torch.randint(a.seq // 4, a.seq + 1, (a.batch,), generator=gen)
        longest = int(lens.max())
        t = torch.randint(2, V, (a.batch, longest), generator=gen)
        mask = (torch.arange(longest)[None, :] < lens[:, None]).long()
        return t * mask, torch.where(mask.bool(), t, torch.full_like(t, -100)), mask

    def logits_of(m, x, mask):
        if kind in ("cls", "seg", "tenc"):
            out = m(x)
            return out["out"] if isinstance(out, dict) else out
        if kind in ("s2s",):
            return m(input_ids=x, attention_mask=mask, decoder_input_ids=x).logits
        return m(input_ids=x, attention_mask=mask).logits

    def task_loss(logits, y):
        if kind in ("cls", "seg"):
            return F.cross_entropy(logits, y)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1),
                               ignore_index=-100)

    model.train()
    for step in range(a.steps):
        x, y, mask = batch()
        opt.zero_grad()
        if teacher is not None and "ema" not in tunes:
            with torch.no_grad():
                soft = F.softmax(logits_of(teacher, x, mask) / 2.0, -1)
        logits = logits_of(model, x, mask)
        loss = task_loss(logits, y)
        if "ema" in tunes:  # the teacher after the student (BYOL, DINO)
            with torch.no_grad():
                soft = F.softmax(logits_of(teacher, x, mask) / 2.0, -1)
        if teacher is not None:
            loss = loss + F.kl_div(F.log_softmax(logits / 2.0, -1), soft, reduction="batchmean")
        if "two_backward" in tunes:
            aux = 1e-3 * logits.float().pow(2).mean()  # a second task's loss on the same output
            loss.backward(retain_graph=True)
            aux.backward()
            loss = loss + aux.detach()
        else:
            loss.backward()
        opt.step()
        if "ema" in tunes:
            with torch.no_grad():
                for t, p in zip(teacher.parameters(), model.parameters()):
                    t.lerp_(p, 0.01)
        print("step %d loss %.6f" % (step, loss.item()), flush=True)


def train_clip(a, tunes):
    """Two towers, one loss: the image and the text encoder are separate root
    modules (neither a child of the other nor of a common parent that is
    called), both in one optimizer."""
    image = ImageTower(a.layers, a.hidden, "ckpt_mlp" in tunes)
    texts = [TextTower(a.layers, a.hidden, "ckpt_mlp" in tunes) for _ in range(a.towers)]
    opt = torch.optim.AdamW([p for m in [image] + texts for p in m.parameters()], lr=1e-3)
    gen = torch.Generator().manual_seed(1)
    for step in range(a.steps):
        x = torch.randn(a.batch, 3, a.image, a.image, generator=gen)
        ts = [torch.randint(0, V, (a.batch, a.seq), generator=gen) for _ in texts]
        opt.zero_grad()
        img = image(x)
        losses = [clip_loss(img, text(t)) for text, t in zip(texts, ts)]
        loss = sum(losses[1:], losses[0])
        loss.backward()
        opt.step()
        print("step %d loss %.6f" % (step, loss.item()), flush=True)


if __name__ == "__main__":
    main()
