"""Probe jobs of the robustness sweep (sweep.py, bench/history/robustness-sweep.md): public
model families and training patterns, tiny, random weights, nothing
downloaded. Prints `step <i> loss <value>` (and `val <i> <value>` with the
val pattern).

    probe_job.py MODEL [--layers N --hidden H --seq S --batch B --image PX]
                 [--pattern p1,p2,...] [--layerdrop P]

MODEL: bert roberta mistral qwen2 neox mixtral qwen2moe bart whisper gpt2
falcon gemma2 mamba deberta modernbert bert2bert (Hugging Face), lstm / gru (a language model of a ModuleList of
single-layer nn.LSTM / nn.GRU), lstm_deep (one nn.LSTM(num_layers=N): a
single module), unet (a small UNet), fpn (ResNet-18 feature pyramid), lraspp,
fcn_resnet50, deeplabv3_resnet50, or any torchvision classifier
name (convnext_tiny, swin_t, efficientnet_b0, mobilenet_v3_small, resnet18).
Also: fasterrcnn, maskrcnn, retinanet (fine-tuned: frozen BN and stages;
pattern `scratch` trains all), r3d_18 mc3_18 r2plus1d_18 s3d swin3d_t
mvit_v2_s (video, --frames), wav2vec2 hubert (CTC), hf_swin convnextv2
dinov2 beit vitmae (masked-autoencoder pre-training) segformer (HF vision),
vision2text (a ViT encoder and a GPT-2 decoder: captioning, OCR),
clip (two towers).
And: sd_unet (diffusers UNet2DConditionModel, Stable-Diffusion-style
fine-tuning: DDPM noise-prediction MSE on random latents of --image px,
conditioned by a frozen tiny CLIPTextModel run under no_grad), timm_vit
timm_convnext timm_effnet (timm, pretrained=False), multitask (a ResNet-18
trunk, classification + regression + segmentation heads, losses summed).
Patterns: scratch (detectors), bf16 (CPU autocast), clip (grad-norm clipping), sched (StepLR),
val (eval() + no_grad validation pass after each step), adamw, zero_none
(zero_grad(set_to_none=False)), channels_last, own_ckpt (the library's own
gradient checkpointing: timm set_grad_checkpointing(), diffusers
enable_gradient_checkpointing(), HF gradient_checkpointing_enable()),
weighted (multitask: losses weighted 1, 0.5, 0.25), frozen_head (multitask:
the segmentation head frozen), heads_apart (multitask: the trunk and each
head separate root modules, the heads of one class).
"""
import argparse
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

V = 256


def hf(name, layers, hidden, seq):
    import transformers as tf
    c = dict(vocab_size=V, attn_implementation="eager", use_cache=False)
    if name == "bert":
        cfg = tf.BertConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                            intermediate_size=4 * hidden, max_position_embeddings=seq,
                            hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, **c)
        return tf.BertForMaskedLM(cfg), "mlm"
    if name == "roberta":
        cfg = tf.RobertaConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                               intermediate_size=4 * hidden, max_position_embeddings=seq + 2,
                               pad_token_id=1, **c)
        return tf.RobertaForMaskedLM(cfg), "mlm"
    if name == "mistral":
        cfg = tf.MistralConfig(hidden_size=hidden, intermediate_size=3 * hidden,
                               num_hidden_layers=layers, num_attention_heads=4,
                               num_key_value_heads=2, max_position_embeddings=seq,
                               sliding_window=seq // 2, **c)
        return tf.MistralForCausalLM(cfg), "clm"
    if name == "qwen2":
        cfg = tf.Qwen2Config(hidden_size=hidden, intermediate_size=3 * hidden,
                             num_hidden_layers=layers, num_attention_heads=4,
                             num_key_value_heads=2, max_position_embeddings=seq, **c)
        return tf.Qwen2ForCausalLM(cfg), "clm"
    if name == "neox":
        cfg = tf.GPTNeoXConfig(hidden_size=hidden, intermediate_size=4 * hidden,
                               num_hidden_layers=layers, num_attention_heads=4,
                               max_position_embeddings=seq, **c)
        return tf.GPTNeoXForCausalLM(cfg), "clm"
    if name == "mixtral":
        cfg = tf.MixtralConfig(hidden_size=hidden, intermediate_size=2 * hidden,
                               num_hidden_layers=layers, num_attention_heads=4,
                               num_key_value_heads=2, num_local_experts=4,
                               num_experts_per_tok=2, max_position_embeddings=seq, **c)
        return tf.MixtralForCausalLM(cfg), "clm"
    if name == "qwen2moe":
        cfg = tf.Qwen2MoeConfig(hidden_size=hidden, intermediate_size=2 * hidden,
                                moe_intermediate_size=hidden, shared_expert_intermediate_size=hidden,
                                num_hidden_layers=layers, num_attention_heads=4,
                                num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                                max_position_embeddings=seq, **c)
        return tf.Qwen2MoeForCausalLM(cfg), "clm"
    if name == "bart":
        cfg = tf.BartConfig(d_model=hidden, encoder_layers=layers, decoder_layers=layers,
                            encoder_attention_heads=4, decoder_attention_heads=4,
                            encoder_ffn_dim=4 * hidden, decoder_ffn_dim=4 * hidden,
                            max_position_embeddings=seq, **c)
        return tf.BartForConditionalGeneration(cfg), "s2s"
    if name == "whisper":
        cfg = tf.WhisperConfig(d_model=hidden, encoder_layers=layers, decoder_layers=layers,
                               encoder_attention_heads=4, decoder_attention_heads=4,
                               encoder_ffn_dim=4 * hidden, decoder_ffn_dim=4 * hidden,
                               num_mel_bins=16, max_source_positions=seq // 2,
                               max_target_positions=seq, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1, **c)
        return tf.WhisperForConditionalGeneration(cfg), "whisper"
    if name == "gpt2":
        cfg = tf.GPT2Config(n_layer=layers, n_embd=hidden, n_head=4, n_positions=seq, **c)
        return tf.GPT2LMHeadModel(cfg), "clm"
    if name == "bert2bert":  # EncoderDecoderModel: a BERT encoder, a BERT decoder with cross-attention
        bert = dict(vocab_size=V, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                    intermediate_size=4 * hidden, max_position_embeddings=seq, attn_implementation="eager")
        cfg = tf.EncoderDecoderConfig.from_encoder_decoder_configs(tf.BertConfig(**bert), tf.BertConfig(**bert))
        cfg.decoder_start_token_id, cfg.pad_token_id = 1, 0
        return tf.EncoderDecoderModel(config=cfg), "s2s"
    if name == "falcon":  # parallel attention + MLP, multi-query
        cfg = tf.FalconConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                              new_decoder_architecture=False, multi_query=True, parallel_attn=True,
                              max_position_embeddings=seq, **c)
        return tf.FalconForCausalLM(cfg), "clm"
    if name == "gemma2":  # soft-capped logits, alternating local/global attention
        cfg = tf.Gemma2Config(hidden_size=hidden, intermediate_size=3 * hidden,
                              num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                              head_dim=hidden // 4, max_position_embeddings=seq,
                              sliding_window=seq // 2, **c)
        return tf.Gemma2ForCausalLM(cfg), "clm"
    if name == "mamba":  # selective state space, no attention (the slow path on CPU)
        c.pop("attn_implementation")
        cfg = tf.MambaConfig(hidden_size=hidden, num_hidden_layers=layers, state_size=8, **c)
        return tf.MambaForCausalLM(cfg), "clm"
    if name == "deberta":  # disentangled relative attention
        cfg = tf.DebertaV2Config(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                                 intermediate_size=4 * hidden, max_position_embeddings=seq,
                                 relative_attention=True, pos_att_type=["p2c", "c2p"],
                                 max_relative_positions=seq, **c)
        return tf.DebertaV2ForMaskedLM(cfg), "mlm"
    if name == "modernbert":  # alternating local/global attention, unpadded
        cfg = tf.ModernBertConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                                  intermediate_size=2 * hidden, max_position_embeddings=seq,
                                  local_attention=seq // 2, pad_token_id=0, cls_token_id=1,
                                  sep_token_id=2, bos_token_id=1, eos_token_id=2, **c)
        return tf.ModernBertForMaskedLM(cfg), "mlm"
    if name == "albert":  # one layer's weights shared by every layer: one module called `layers` times
        cfg = tf.AlbertConfig(hidden_size=hidden, embedding_size=hidden // 2, num_hidden_layers=layers,
                              num_attention_heads=4, intermediate_size=4 * hidden,
                              max_position_embeddings=seq, **c)
        return tf.AlbertForMaskedLM(cfg), "mlm"
    if name == "opt":  # learned positions offset by 2, pre-norm decoder
        cfg = tf.OPTConfig(hidden_size=hidden, ffn_dim=4 * hidden, num_hidden_layers=layers,
                           num_attention_heads=4, max_position_embeddings=seq, word_embed_proj_dim=hidden, **c)
        return tf.OPTForCausalLM(cfg), "clm"
    if name == "bloom":  # ALiBi attention bias, made once and passed to every block
        cfg = tf.BloomConfig(hidden_size=hidden, n_layer=layers, n_head=4, **c)
        return tf.BloomForCausalLM(cfg), "clm"
    if name == "phi":  # parallel attention and MLP, partial rotary
        cfg = tf.PhiConfig(hidden_size=hidden, intermediate_size=4 * hidden, num_hidden_layers=layers,
                           num_attention_heads=4, max_position_embeddings=seq, **c)
        return tf.PhiForCausalLM(cfg), "clm"
    raise SystemExit("unknown " + name)


class RecurrentLM(nn.Module):
    """A word-level language model as the PyTorch examples write it:
    embedding, recurrent layers (a ModuleList of one-layer modules, or one
    multi-layer module), dropout between them, a linear decoder."""

    def __init__(self, cell, layers, hidden, stacked):
        super().__init__()
        rnn = {"lstm": nn.LSTM, "gru": nn.GRU}[cell]
        self.emb = nn.Embedding(V, hidden)
        if stacked:
            self.rnns = nn.ModuleList(rnn(hidden, hidden, batch_first=True) for _ in range(layers))
        else:
            self.rnn = rnn(hidden, hidden, num_layers=layers, dropout=0.1, batch_first=True)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(hidden, V)

    def forward(self, ids):
        x = self.emb(ids)
        if hasattr(self, "rnn"):
            x = self.rnn(x)[0]
        else:
            for r in self.rnns:
                x = self.drop(r(x)[0])
        return self.head(x)


def recurrent(name, layers, hidden):
    if name in ("lstm", "gru"):
        return RecurrentLM(name, layers, hidden, True), "lm"
    if name == "lstm_deep":
        return RecurrentLM("lstm", layers, hidden, False), "lm"
    return None


def vision(name, image):
    import torchvision.models as m
    if name == "unet":
        return TinyUNet(), "seg"
    if name == "lraspp":
        return m.segmentation.lraspp_mobilenet_v3_large(num_classes=4, weights=None,
                                                        weights_backbone=None), "seg"
    if name in ("fcn_resnet50", "deeplabv3_resnet50"):
        return getattr(m.segmentation, name)(num_classes=4, weights=None, weights_backbone=None,
                                             aux_loss=False), "seg"
    if name == "fpn":
        return TinyFPN(), "seg"
    kw = {"num_classes": 10}
    if name in ("googlenet", "inception_v3"):  # train mode returns the aux heads' logits too
        kw["aux_logits"] = False
    return getattr(m, name)(**kw), "cls"


# --- More model families (detection, video, audio, HF vision) ---

def detection(name, image, pats):
    """torchvision detectors as fine-tuning builds them from a pretrained
    backbone (FrozenBatchNorm2d, the first two stages frozen:
    trainable_backbone_layers=3), random weights; `scratch` keeps
    BatchNorm2d and trains every stage (what weights_backbone=None gives)."""
    import torchvision.models as m
    from torchvision.models import detection as d
    from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
    from torchvision.ops import misc
    from torchvision.ops.feature_pyramid_network import LastLevelP6P7
    scratch = "scratch" in pats
    body = m.resnet50(weights=None, norm_layer=nn.BatchNorm2d if scratch else misc.FrozenBatchNorm2d)
    layers = 5 if scratch else 3
    size = dict(min_size=image, max_size=image * 5 // 4)
    if name == "retinanet":
        bb = _resnet_fpn_extractor(body, layers, returned_layers=[2, 3, 4],
                                   extra_blocks=LastLevelP6P7(256, 256))
        return d.RetinaNet(bb, num_classes=3, **size), "det"
    bb = _resnet_fpn_extractor(body, layers)
    cls = d.MaskRCNN if name == "maskrcnn" else d.FasterRCNN
    return cls(bb, num_classes=3, **size), "det"


def video(name):
    """torchvision video classifiers (3-D convolutions) on 8 frames."""
    import torchvision.models.video as v
    return getattr(v, name)(weights=None, num_classes=10), "video"


def hf_family(name, layers, hidden, image, layerdrop=None):
    """HF audio (CTC, layerdrop and time masking on as by default; `layerdrop`
    overrides the config's 0.1) and vision families with layer scale,
    stochastic depth, windowed attention."""
    import transformers as tf
    if name in ("wav2vec2", "hubert"):
        kw = dict(vocab_size=32, hidden_size=hidden, num_hidden_layers=layers,
                  num_attention_heads=4, intermediate_size=4 * hidden,
                  conv_dim=(32, 32, 32), conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2),
                  num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                  ctc_loss_reduction="mean", pad_token_id=0, attn_implementation="eager")
        if layerdrop is not None:
            kw["layerdrop"] = layerdrop
        if name == "hubert":
            return tf.HubertForCTC(tf.HubertConfig(**kw)), "ctc"
        return tf.Wav2Vec2ForCTC(tf.Wav2Vec2Config(**kw)), "ctc"
    if name == "clip":  # two towers, one contrastive loss
        tower = dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                     intermediate_size=4 * hidden)
        cfg = tf.CLIPConfig(text_config=dict(vocab_size=V, max_position_embeddings=32, **tower),
                            vision_config=dict(image_size=image, patch_size=8, **tower),
                            projection_dim=hidden)
        cfg._attn_implementation = "eager"
        return tf.CLIPModel(cfg), "clip"
    c = dict(num_labels=10, image_size=image, attn_implementation="eager")
    if name == "hf_swin":
        cfg = tf.SwinConfig(patch_size=4, embed_dim=32, depths=[2, 2, 2], num_heads=[2, 4, 8],
                            window_size=4, drop_path_rate=0.1, **c)
        return tf.SwinForImageClassification(cfg), "hfcls"
    if name == "convnextv2":
        c.pop("attn_implementation")
        cfg = tf.ConvNextV2Config(depths=[2, 2, 2, 2], hidden_sizes=[16, 32, 64, 128],
                                  drop_path_rate=0.1, **c)
        return tf.ConvNextV2ForImageClassification(cfg), "hfcls"
    vit = dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
               intermediate_size=4 * hidden, patch_size=8, drop_path_rate=0.1, **c)
    if name == "dinov2":
        return tf.Dinov2ForImageClassification(tf.Dinov2Config(layerscale_value=0.1, **vit)), "hfcls"
    if name == "beit":
        cfg = tf.BeitConfig(use_relative_position_bias=True, layer_scale_init_value=0.1, **vit)
        return tf.BeitForImageClassification(cfg), "hfcls"
    if name == "vitmae":  # masked-autoencoder pre-training: 75% of patches dropped at random
        vit.pop("drop_path_rate"), vit.pop("num_labels")
        cfg = tf.ViTMAEConfig(decoder_hidden_size=hidden, decoder_num_hidden_layers=2,
                              decoder_num_attention_heads=4, decoder_intermediate_size=2 * hidden, **vit)
        return tf.ViTMAEForPreTraining(cfg), "mae"
    if name == "vision2text":  # image captioning / OCR (TrOCR, Donut): a ViT encoder, a GPT-2 decoder
        enc = tf.ViTConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                           intermediate_size=4 * hidden, patch_size=8, image_size=image,
                           attn_implementation="eager")
        dec = tf.GPT2Config(n_layer=layers, n_embd=hidden, n_head=4, vocab_size=V, n_positions=32,
                            add_cross_attention=True, is_decoder=True, bos_token_id=1, eos_token_id=2,
                            attn_implementation="eager")
        cfg = tf.VisionEncoderDecoderConfig.from_encoder_decoder_configs(enc, dec)
        cfg.decoder_start_token_id, cfg.pad_token_id = 1, 0
        return tf.VisionEncoderDecoderModel(config=cfg), "captions"
    if name == "segformer":  # hierarchical encoder, efficient attention, all-MLP decoder
        c.pop("image_size"), c.pop("attn_implementation")
        cfg = tf.SegformerConfig(num_encoder_blocks=4, depths=[2, 2, 2, 2], hidden_sizes=[16, 32, 64, 128],
                                 num_attention_heads=[1, 2, 4, 8], decoder_hidden_size=64,
                                 drop_path_rate=0.1, **c)
        return tf.SegformerForSemanticSegmentation(cfg), "hfseg"
    raise SystemExit("unknown " + name)


# --- More model families (diffusion, timm, multi-task) ---

def diffusion(image):
    """Stable-Diffusion-style fine-tuning of a tiny UNet2DConditionModel
    (two resolutions: a plain down/up block and a cross-attention one, skip
    connections from down to up) conditioned on a frozen tiny CLIP text
    encoder, as SD fine-tuning scripts write it."""
    import diffusers
    import transformers as tf
    unet = diffusers.UNet2DConditionModel(
        sample_size=image, in_channels=4, out_channels=4, layers_per_block=2,
        block_out_channels=(32, 64), down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=32,
        attention_head_dim=8)
    text = tf.CLIPTextModel(tf.CLIPTextConfig(vocab_size=V, hidden_size=32, intermediate_size=64,
                                              num_hidden_layers=2, num_attention_heads=4,
                                              max_position_embeddings=16))
    text.requires_grad_(False)
    text.eval()
    return unet, text, diffusers.DDPMScheduler(num_train_timesteps=1000)


def timm_family(name, layers, image):
    """timm's vision models from their own registry, pretrained=False."""
    import timm
    if name == "timm_vit":
        return timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10,
                                 img_size=image, patch_size=8, depth=layers, drop_path_rate=0.1)
    if name == "timm_convnext":
        return timm.create_model("convnext_atto", pretrained=False, num_classes=10, drop_path_rate=0.1)
    return timm.create_model("efficientnet_b0", pretrained=False, num_classes=10, drop_path_rate=0.1)


class MultiTask(nn.Module):
    """One ResNet-18 trunk, three heads: image class, a regression target,
    a segmentation map. `heads_apart`: the job calls the trunk and each head
    itself (three roots besides the trunk, the heads of one class)."""

    def __init__(self):
        super().__init__()
        import torchvision.models as m
        r = m.resnet18(weights=None)
        self.trunk = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, r.layer1, r.layer2, r.layer3, r.layer4)
        self.heads = nn.ModuleList([Head(512, 10), Head(512, 1), Head(512, 4, dense=True)])

    def forward(self, x):
        f = self.trunk(x)
        return [h(f, x.shape[-2:]) for h in self.heads]


class Head(nn.Module):
    def __init__(self, c, out, dense=False):
        super().__init__()
        self.dense = dense
        self.body = nn.Sequential(nn.Conv2d(c, 128, 1), nn.BatchNorm2d(128), nn.ReLU(), nn.Conv2d(128, out, 1))

    def forward(self, f, size):
        y = self.body(f)
        return F.interpolate(y, size=size, mode="bilinear") if self.dense else y.mean((2, 3))


def multitask_loss(outs, y, pats):
    cls, reg, seg = outs
    losses = [F.cross_entropy(cls, y[0]), F.mse_loss(reg.squeeze(1), y[1]), F.cross_entropy(seg, y[2])]
    weights = (1.0, 0.5, 0.25) if "weighted" in pats else (1.0, 1.0, 1.0)
    return sum(w * l for w, l in zip(weights, losses))


def detection_batch(n, image, masks, gen):
    """n images of different sizes (the transform resizes and pads them),
    2 boxes each with labels 1..2 (and instance masks for Mask R-CNN)."""
    images, targets = [], []
    for _ in range(n):
        h = image - int(torch.randint(0, image // 4, (1,), generator=gen))
        w = image + int(torch.randint(0, image // 4, (1,), generator=gen))
        xy = torch.rand(2, 2, generator=gen) * torch.tensor([w / 2, h / 2])
        wh = 8 + torch.rand(2, 2, generator=gen) * torch.tensor([w / 2 - 8, h / 2 - 8])
        boxes = torch.cat([xy, xy + wh], 1)
        t = {"boxes": boxes, "labels": torch.randint(1, 3, (2,), generator=gen)}
        if masks:
            mk = torch.zeros(2, h, w, dtype=torch.uint8)
            for i, b in enumerate(boxes.int().tolist()):
                mk[i, b[1]:b[3], b[0]:b[2]] = 1
            t["masks"] = mk
        images.append(torch.rand(3, h, w, generator=gen))
        targets.append(t)
    return images, targets


class TinyFPN(nn.Module):
    """A ResNet-18 feature pyramid (torchvision's BackboneWithFPN) with a
    segmentation head on its finest level: the backbone's stage outputs are
    skip connections read by the pyramid after the whole backbone ran."""

    def __init__(self):
        super().__init__()
        from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
        self.fpn = resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=5)
        self.head = nn.Conv2d(self.fpn.out_channels, 4, 1)

    def forward(self, x):
        feats = self.fpn(x)
        return F.interpolate(self.head(feats["0"]), size=x.shape[-2:])


class Block(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.c1 = nn.Conv2d(a, b, 3, padding=1)
        self.n1 = nn.BatchNorm2d(b)
        self.c2 = nn.Conv2d(b, b, 3, padding=1)
        self.n2 = nn.BatchNorm2d(b)

    def forward(self, x):
        x = F.relu(self.n1(self.c1(x)), inplace=True)
        return F.relu(self.n2(self.c2(x)), inplace=True)


class TinyUNet(nn.Module):
    def __init__(self, w=16):
        super().__init__()
        self.down = nn.ModuleList([Block(3, w), Block(w, 2 * w), Block(2 * w, 4 * w)])
        self.mid = Block(4 * w, 4 * w)
        self.up = nn.ModuleList([Block(8 * w, 2 * w), Block(4 * w, w), Block(2 * w, w)])
        self.head = nn.Conv2d(w, 4, 1)

    def forward(self, x):
        skips = []
        for d in self.down:
            x = d(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.mid(x)
        for u in self.up:
            x = F.interpolate(x, scale_factor=2)
            x = u(torch.cat([x, skips.pop()], 1))
        return self.head(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--image", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--pattern", default="plain")
    ap.add_argument("--layerdrop", type=float, help="wav2vec2, hubert: the config's layerdrop (0.1)")
    a = ap.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)  # HF's time masking (mask_time_prob) draws from numpy
    torch.set_num_threads(1)
    pats = set(a.pattern.split(","))
    text = None
    if a.model == "sd_unet":
        (model, text, noise_sched), kind = diffusion(a.image), "diffusion"
    elif a.model.startswith("timm_"):
        model, kind = timm_family(a.model, a.layers, a.image), "cls"
    elif a.model == "multitask":
        model, kind = MultiTask(), "multitask"
        if "frozen_head" in pats:
            model.heads[2].requires_grad_(False)
    elif a.model in ("fasterrcnn", "retinanet", "maskrcnn"):
        model, kind = detection(a.model, a.image, pats)
    elif a.model in ("r3d_18", "mc3_18", "r2plus1d_18", "s3d", "swin3d_t", "mvit_v2_s"):
        model, kind = video(a.model)
    elif a.model in ("wav2vec2", "hubert", "hf_swin", "convnextv2", "dinov2", "beit", "clip",
                     "vitmae", "segformer", "vision2text"):
        model, kind = hf_family(a.model, a.layers, a.hidden, a.image, a.layerdrop)
    else:
        try:
            model, kind = recurrent(a.model, a.layers, a.hidden) or hf(a.model, a.layers, a.hidden, a.seq)
        except SystemExit:
            model, kind = vision(a.model, a.image)
    if "channels_last" in pats:
        model = model.to(memory_format=torch.channels_last)
    if "own_ckpt" in pats:
        for switch in ("set_grad_checkpointing", "enable_gradient_checkpointing",
                       "gradient_checkpointing_enable"):
            if hasattr(model, switch):
                getattr(model, switch)()
                break
        else:
            raise SystemExit("own_ckpt: %s has no gradient checkpointing switch" % type(model).__name__)
    params = [p for p in model.parameters() if p.requires_grad]
    lr = 1e-4 if kind == "det" else 1e-2  # random detectors diverge at 1e-2
    opt = torch.optim.AdamW(params, lr=1e-3) if "adamw" in pats else \
        torch.optim.SGD(params, lr=lr, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1, 0.5) if "sched" in pats else None
    gen = torch.Generator().manual_seed(1)

    def batch():
        if kind == "diffusion":  # latents, the noise, timesteps, caption tokens
            lat = torch.randn(a.batch, 4, a.image, a.image, generator=gen)
            return (lat, torch.randn(lat.shape, generator=gen),
                    torch.randint(0, 1000, (a.batch,), generator=gen)), \
                torch.randint(0, V, (a.batch, 16), generator=gen)
        if kind == "multitask":
            return torch.randn(a.batch, 3, a.image, a.image, generator=gen), (
                torch.randint(0, 10, (a.batch,), generator=gen), torch.randn(a.batch, generator=gen),
                torch.randint(0, 4, (a.batch, a.image, a.image), generator=gen))
        if kind == "det":
            return detection_batch(a.batch, a.image, a.model == "maskrcnn", gen)
        if kind == "video":
            return (torch.randn(a.batch, 3, a.frames, a.image, a.image, generator=gen),
                    torch.randint(0, 10, (a.batch,), generator=gen))
        if kind == "clip":
            return (torch.randint(2, V, (a.batch, 32), generator=gen),
                    torch.randn(a.batch, 3, a.image, a.image, generator=gen))
        if kind == "hfcls":
            return (torch.randn(a.batch, 3, a.image, a.image, generator=gen),
                    torch.randint(0, 10, (a.batch,), generator=gen))
        if kind == "mae":
            return torch.randn(a.batch, 3, a.image, a.image, generator=gen), None
        if kind == "captions":
            return (torch.randn(a.batch, 3, a.image, a.image, generator=gen),
                    torch.randint(2, V, (a.batch, 24), generator=gen))
        if kind == "hfseg":
            return (torch.randn(a.batch, 3, a.image, a.image, generator=gen),
                    torch.randint(0, 10, (a.batch, a.image, a.image), generator=gen))
        if kind == "ctc":  # seq frames of audio (20 samples each), transcripts of seq/8 tokens
            return (torch.randn(a.batch, a.seq * 20, generator=gen),
                    torch.randint(1, 32, (a.batch, a.seq // 8), generator=gen))
        if kind in ("cls", "seg"):
            x = torch.randn(a.batch, 3, a.image, a.image, generator=gen)
            if "channels_last" in pats:
                x = x.contiguous(memory_format=torch.channels_last)
            if kind == "cls":
                return x, torch.randint(0, 10, (a.batch,), generator=gen)
            return x, torch.randint(0, 4, (a.batch, a.image, a.image), generator=gen)
        if kind == "whisper":
            feats = torch.randn(a.batch, 16, a.seq, generator=gen)
            return feats, torch.randint(0, V, (a.batch, a.seq // 2), generator=gen)
        t = torch.randint(2, V, (a.batch, a.seq), generator=gen)
        return t, t

    def loss_of(x, y):
        if kind == "diffusion":  # the frozen text encoder first, as SD fine-tuning does
            with torch.no_grad():
                cond = text(input_ids=y).last_hidden_state
            latents, noise, t = x
            pred = model(noise_sched.add_noise(latents, noise, t), t, encoder_hidden_states=cond).sample
            return F.mse_loss(pred.float(), noise.float())
        if kind == "multitask":
            if "heads_apart" in pats:
                f = model.trunk(x)
                return multitask_loss([h(f, x.shape[-2:]) for h in model.heads], y, pats)
            return multitask_loss(model(x), y, pats)
        if kind == "det":
            return sum(model(x, y).values())
        if kind == "cls" and "two_views" in pats:  # one model, two views of the batch, one loss
            return F.cross_entropy(model(x), y) + F.cross_entropy(model(torch.flip(x, [-1]) * 0.9), y)
        if kind == "cls" and "two_views_cat" in pats:  # the same, the views run as one batch
            both = model(torch.cat([x, torch.flip(x, [-1]) * 0.9]))
            return F.cross_entropy(both[:len(x)], y) + F.cross_entropy(both[len(x):], y)
        if kind in ("cls", "video"):
            return F.cross_entropy(model(x), y)
        if kind in ("hfcls", "hfseg", "captions"):
            return model(pixel_values=x, labels=y).loss
        if kind == "mae":
            return model(pixel_values=x).loss
        if kind == "ctc":
            return model(input_values=x, labels=y).loss
        if kind == "clip":
            return model(input_ids=x, pixel_values=y, return_loss=True).loss
        if kind == "seg":
            out = model(x)
            out = out["out"] if isinstance(out, dict) else out
            return F.cross_entropy(out, y)
        if kind == "lm":  # next-token prediction
            out = model(x)
            return F.cross_entropy(out[:, :-1].reshape(-1, V), y[:, 1:].reshape(-1))
        if kind == "whisper":
            return model(input_features=x, labels=y).loss
        if kind == "s2s":
            return model(input_ids=x, labels=y).loss
        return model(input_ids=x, labels=y).loss

    model.train()
    for step in range(a.steps):
        x, y = batch()
        opt.zero_grad(set_to_none="zero_none" not in pats)
        if "bf16" in pats:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = loss_of(x, y)
        else:
            loss = loss_of(x, y)
        loss.backward()
        if "clip" in pats:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if sched:
            sched.step()
        if "val" in pats:
            model.eval()
            with torch.no_grad():
                vx, vy = batch()
                vl = loss_of(vx, vy)
            model.train()
            print("val %d %.6f" % (step, vl.item()), flush=True)
        print("step %d loss %.6f" % (step, loss.item()), flush=True)


if __name__ == "__main__":
    main()
