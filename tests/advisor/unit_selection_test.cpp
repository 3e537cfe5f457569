// `--units auto` on the module trees of public model families, as the python
// shim names them (saved bytes shaped like real ones): the units must be the
// blocks of every stage, whatever the naming habit.
#include "units/unit_selection.h"

#include "advice_error.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gcprof::advisor {
namespace {

// Builds a module list in forward order; every module gets a backward.
class Tree {
 public:
  Tree& add(const std::string& name, Bytes saved, double calls = 1, bool backward = true) {
    ModuleStats m;
    m.name = name;
    m.calls = calls;
    m.depth = name.empty() ? 0 : 1 + static_cast<int>(std::count(name.begin(), name.end(), '.'));
    m.saved_bytes = saved;
    m.first_forward = static_cast<Ns>(modules_.size());
    m.backward_calls = backward ? 1 : 0;
    modules_.push_back(m);
    return *this;
  }
  // The module added last was called at top level (a root of the job).
  Tree& root() {
    modules_.back().root = true;
    return *this;
  }
  const std::vector<ModuleStats>& modules() const { return modules_; }

 private:
  std::vector<ModuleStats> modules_;
};

std::vector<std::string> names(std::initializer_list<const char*> l) {
  return std::vector<std::string>(l.begin(), l.end());
}

// torchvision resnet18: stages layer1..layer4 of two BasicBlocks each.
TEST(AutoUnits, ResNetTakesTheBlocksOfEveryStage) {
  Tree t;
  t.add("", 0).add("conv1", 0).add("bn1", 40).add("relu", 0).add("maxpool", 10);
  for (int s = 1; s <= 4; ++s) {
    std::string stage = "layer" + std::to_string(s);
    t.add(stage, 2 * 50 + 5);  // the stage also holds its first block's output
    for (int b = 0; b < 2; ++b) {
      std::string blk = stage + "." + std::to_string(b);
      t.add(blk, 50);
      for (const char* leaf : {"conv1", "bn1", "relu", "conv2", "bn2"}) t.add(blk + "." + leaf, 8);
      if (b == 0 && s > 1) t.add(blk + ".downsample", 6).add(blk + ".downsample.0", 3).add(blk + ".downsample.1", 3);
    }
  }
  t.add("avgpool", 1).add("fc", 0);
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names, names({"layer1.0", "layer1.1", "layer2.0", "layer2.1", "layer3.0", "layer3.1",
                            "layer4.0", "layer4.1"}));
  EXPECT_EQ(u.rule, "auto: layer#.# (the blocks of the stages layer#)");
}

// torchvision VisionTransformer: encoder.layers.encoder_layer_N, whose MLP is
// a Sequential of single operations (mlp.0 Linear, mlp.1 GELU, ...).
TEST(AutoUnits, VitEncoderLayersWhateverTheirNaming) {
  Tree t;
  t.add("", 0).add("conv_proj", 0).add("encoder", 0).add("encoder.dropout", 0).add("encoder.layers", 0);
  for (int i = 0; i < 4; ++i) {
    std::string l = "encoder.layers.encoder_layer_" + std::to_string(i);
    t.add(l, 100).add(l + ".ln_1", 5).add(l + ".self_attention", 40)
        .add(l + ".self_attention.out_proj", 0).add(l + ".dropout", 0).add(l + ".ln_2", 5)
        .add(l + ".mlp", 40);
    for (int k = 0; k < 5; ++k) t.add(l + ".mlp." + std::to_string(k), 12);  // 60 > mlp's 40
  }
  t.add("encoder.ln", 2).add("heads", 0).add("heads.head", 0);
  // The whole encoder holds more, but is not repeated; the per-layer mlp.#
  // family has more members, but they are single operations.
  UnitSelection u = selectUnits(t.modules(), "auto");
  ASSERT_EQ(u.names.size(), 4u);
  EXPECT_EQ(u.names.front(), "encoder.layers.encoder_layer_0");
  EXPECT_EQ(u.rule, "auto: encoder.layers.encoder_layer_#");
}

// Hugging Face GPT-2 (transformer.h.N) and Llama (model.layers.N): every
// sub-module of a block repeats once per block, so no finer family splits it.
TEST(AutoUnits, HuggingFaceDecoderLayers) {
  Tree t;
  t.add("", 0).add("model", 0).add("model.embed_tokens", 0);
  for (int i = 0; i < 3; ++i) {
    std::string l = "model.layers." + std::to_string(i);
    t.add(l, 100).add(l + ".input_layernorm", 5).add(l + ".self_attn", 50);
    for (const char* p : {"q_proj", "k_proj", "v_proj", "o_proj"}) t.add(l + ".self_attn." + p, 5);
    t.add(l + ".post_attention_layernorm", 5).add(l + ".mlp", 40);
    for (const char* p : {"gate_proj", "up_proj", "down_proj", "act_fn"}) t.add(l + ".mlp." + p, 8);
  }
  t.add("model.norm", 2).add("model.rotary_emb", 0).add("lm_head", 0);
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names, names({"model.layers.0", "model.layers.1", "model.layers.2"}));
  EXPECT_EQ(u.rule, "auto: model.layers.#");
}

// EfficientNet / MobileNet style: features.S.B blocks whose sub-layers
// (block.0 .. block.3, composites themselves) hold much less than the block:
// the search stops at the blocks. The stem features.0.N are single operations.
TEST(AutoUnits, HierarchicalStagesStopAtTheBlocks) {
  Tree t;
  t.add("", 0).add("features", 0).add("features.0", 20);
  for (int k = 0; k < 3; ++k) t.add("features.0." + std::to_string(k), 7);
  for (int s = 1; s <= 3; ++s) {
    std::string stage = "features." + std::to_string(s);
    t.add(stage, 3 * 60);
    for (int b = 0; b < 3; ++b) {
      std::string blk = stage + "." + std::to_string(b);
      t.add(blk, 60);
      for (int k = 0; k < 4; ++k) {
        std::string sub = blk + ".block." + std::to_string(k);
        t.add(sub, 10).add(sub + ".0", 4).add(sub + ".1", 4);
      }
      t.add(blk + ".block", 55);
    }
  }
  t.add("classifier", 0).add("classifier.0", 0).add("classifier.1", 0);
  UnitSelection u = selectUnits(t.modules(), "auto");
  ASSERT_EQ(u.names.size(), 9u);
  EXPECT_EQ(u.names.front(), "features.1.0");
  EXPECT_EQ(u.names.back(), "features.3.2");
  EXPECT_EQ(u.rule, "auto: features.#.# (the blocks of the stages features.#)");
}

// Names with the index glued on (block3, denselayer12) are families too.
TEST(AutoUnits, GluedIndexes) {
  Tree t;
  t.add("", 0);
  for (int s = 1; s <= 2; ++s) {
    std::string stage = "features.denseblock" + std::to_string(s);
    t.add(stage, 200);
    for (int b = 1; b <= 4; ++b) {
      std::string l = stage + ".denselayer" + std::to_string(b);
      t.add(l, 48).add(l + ".norm1", 8).add(l + ".conv1", 8);
    }
    t.add("features.transition" + std::to_string(s), 20)
        .add("features.transition" + std::to_string(s) + ".conv", 5);
  }
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names.size(), 8u);
  EXPECT_EQ(u.rule, "auto: features.denseblock#.denselayer# (the blocks of the stages features.denseblock#)");
}

// Chains marked with ranges only (C API, NVTX): the units are single ranges.
TEST(AutoUnits, LeafChainsStillWork) {
  Tree t;
  for (int i = 0; i < 5; ++i) t.add("layers." + std::to_string(i), 10);
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names.size(), 5u);
  EXPECT_EQ(u.rule, "auto: layers.#");
}

// Hugging Face T5: the encoder's and the decoder's blocks are both the
// model's blocks; their sub-layers (block.#.layer.#) are not.
TEST(AutoUnits, EncoderDecoderTakesBothStacks) {
  Tree t;
  t.add("", 0).add("shared", 0).add("encoder", 0);
  for (int b = 0; b < 3; ++b) {
    std::string blk = "encoder.block." + std::to_string(b);
    t.add(blk, 60).add(blk + ".layer.0", 30).add(blk + ".layer.1", 30);
  }
  t.add("encoder.final_layer_norm", 2).add("decoder", 0);
  for (int b = 0; b < 3; ++b) {
    std::string blk = "decoder.block." + std::to_string(b);
    t.add(blk, 80).add(blk + ".layer.0", 30).add(blk + ".layer.1", 20).add(blk + ".layer.2", 30);
  }
  t.add("decoder.final_layer_norm", 2).add("lm_head", 0);
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names, names({"encoder.block.0", "encoder.block.1", "encoder.block.2", "decoder.block.0",
                            "decoder.block.1", "decoder.block.2"}));
  EXPECT_EQ(u.rule, "auto: decoder.block.# + encoder.block.#");
}

// A masked autoencoder (HF ViTMAEForPreTraining, probe_job.py vitmae): the
// encoder's and the decoder's blocks are one class under two names
// (vit.layers.#, decoder.decoder_layers.#), the decoder's on every patch and
// the encoder's on the quarter kept: the decoder's alone left the encoder's
// activations live before the first unit. A list of other blocks sharing
// only one kind of sub-module (`heads.#`: an mlp each) stays out.
TEST(AutoUnits, BlocksOfOneKindUnderTwoNamesAreAllUnits) {
  auto layer = [](Tree& t, const std::string& l, Bytes saved) {
    t.add(l, saved).add(l + ".layernorm_before", 0).add(l + ".attention", saved / 2);
    t.add(l + ".layernorm_after", 0).add(l + ".mlp", saved / 2);
  };
  Tree t;
  t.add("", 0).add("vit", 0).add("vit.embeddings", 4);
  for (int i = 0; i < 4; ++i) layer(t, "vit.layers." + std::to_string(i), 30);
  t.add("decoder", 0).add("decoder.decoder_embed", 0);
  for (int i = 0; i < 2; ++i) layer(t, "decoder.decoder_layers." + std::to_string(i), 100);
  for (int h = 0; h < 2; ++h) {
    std::string head = "heads." + std::to_string(h);
    t.add(head, 60).add(head + ".mlp", 30).add(head + ".proj", 30);
  }
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names, names({"vit.layers.0", "vit.layers.1", "vit.layers.2", "vit.layers.3",
                            "decoder.decoder_layers.0", "decoder.decoder_layers.1"}));
  EXPECT_EQ(u.rule, "auto: decoder.decoder_layers.# + vit.layers.#");
}

// An image-to-text model (HF VisionEncoderDecoderModel: TrOCR, Donut,
// captioning; probe_job.py vision2text): a ViT encoder and a GPT-2 decoder,
// blocks of two classes under two names, both kept to the one backward.
// The decoder's alone left 60% out of reach. An FPN-like list of single
// layers (`neck.convs.#`: an nn.Sequential's indexes only) stays out.
TEST(AutoUnits, AnEncoderAndADecoderOfDifferentBlocksAreAllUnits) {
  Tree t;
  t.add("", 0).add("encoder", 0).add("encoder.embeddings", 2);
  for (int i = 0; i < 4; ++i) {
    std::string l = "encoder.layers." + std::to_string(i);
    t.add(l, 60).add(l + ".layernorm_before", 0).add(l + ".attention", 30).add(l + ".mlp", 30);
  }
  for (int i = 0; i < 2; ++i) {
    std::string c = "neck.convs." + std::to_string(i);
    t.add(c, 40).add(c + ".0", 20).add(c + ".1", 20);
  }
  t.add("decoder", 0).add("decoder.transformer", 0);
  for (int i = 0; i < 4; ++i) {
    std::string h = "decoder.transformer.h." + std::to_string(i);
    t.add(h, 40).add(h + ".ln_1", 0).add(h + ".attn", 10).add(h + ".crossattention", 10).add(h + ".mlp", 20);
  }
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names, names({"encoder.layers.0", "encoder.layers.1", "encoder.layers.2", "encoder.layers.3",
                            "decoder.transformer.h.0", "decoder.transformer.h.1", "decoder.transformer.h.2",
                            "decoder.transformer.h.3"}));
  EXPECT_EQ(u.rule, "auto: encoder.layers.# + decoder.transformer.h.#");
}

// A U-Net (bench/robustness/probe_job.py): the down path's blocks and the
// up path's, two sibling lists of one kind of block (c1, n1, c2, n2), are
// all its blocks; the down path alone left 60% and 75% out of reach. A
// sibling list of other modules (`heads.#`, one conv each) stays out.
TEST(AutoUnits, UNetTakesTheDownAndTheUpPath) {
  auto block = [](Tree& t, const std::string& b, Bytes saved) {
    t.add(b, saved).add(b + ".c1", 0).add(b + ".n1", saved / 2).add(b + ".c2", 0).add(b + ".n2", saved / 2);
  };
  Tree t;
  t.add("", 0);
  block(t, "down.0", 180);
  block(t, "down.1", 90);
  block(t, "down.2", 45);
  block(t, "mid", 11);
  block(t, "up.0", 22);
  block(t, "up.1", 45);
  block(t, "up.2", 180);
  for (int h = 0; h < 2; ++h) t.add("heads." + std::to_string(h), 150).add("heads." + std::to_string(h) + ".conv", 0);
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names, names({"down.0", "down.1", "down.2", "up.0", "up.1", "up.2"}));
  EXPECT_EQ(u.rule, "auto: down.# + up.#");
}

// A diffusers UNet2DConditionModel (probe_job.py sd_unet): the down and up
// paths are sibling lists of blocks of different classes (DownBlock2D,
// CrossAttnDownBlock2D; CrossAttnUpBlock2D, UpBlock2D) whose ModuleLists
// (resnets, attentions) are never called, so no block has recorded direct
// children; they share their kind of sub-module, resnets.#. The up path
// alone left the down path's activations live before the first unit
// (every budget out of reach, least 241 of 261 MiB).
TEST(AutoUnits, DiffusersUNetTakesTheDownAndTheUpPath) {
  auto resnet = [](Tree& t, const std::string& r, Bytes saved) {
    t.add(r, saved).add(r + ".norm1", saved / 4).add(r + ".conv1", saved / 4).add(r + ".norm2", saved / 4);
    t.add(r + ".conv2", saved / 4);
  };
  auto attention = [](Tree& t, const std::string& a, Bytes saved) {
    t.add(a, saved).add(a + ".proj_in", saved / 4).add(a + ".transformer_blocks.0", saved / 2);
    t.add(a + ".transformer_blocks.0.attn1", saved / 4).add(a + ".proj_out", saved / 4);
  };
  Tree t;
  t.add("", 0).add("conv_in", 4).add("time_embedding", 1).add("time_embedding.linear_1", 1);
  t.add("down_blocks.0", 80);
  for (int r = 0; r < 2; ++r) resnet(t, "down_blocks.0.resnets." + std::to_string(r), 36);
  t.add("down_blocks.0.downsamplers.0", 8).add("down_blocks.0.downsamplers.0.conv", 8);
  t.add("down_blocks.1", 60);
  for (int r = 0; r < 2; ++r) {
    resnet(t, "down_blocks.1.resnets." + std::to_string(r), 14);
    attention(t, "down_blocks.1.attentions." + std::to_string(r), 16);
  }
  t.add("mid_block", 20);
  resnet(t, "mid_block.resnets.0", 6);
  attention(t, "mid_block.attentions.0", 8);
  resnet(t, "mid_block.resnets.1", 6);
  t.add("up_blocks.0", 120);
  for (int r = 0; r < 3; ++r) {
    resnet(t, "up_blocks.0.resnets." + std::to_string(r), 20);
    attention(t, "up_blocks.0.attentions." + std::to_string(r), 16);
  }
  t.add("up_blocks.0.upsamplers.0", 12).add("up_blocks.0.upsamplers.0.conv", 12);
  t.add("up_blocks.1", 150);
  for (int r = 0; r < 3; ++r) resnet(t, "up_blocks.1.resnets." + std::to_string(r), 50);
  for (int h = 0; h < 2; ++h) t.add("heads." + std::to_string(h), 40).add("heads." + std::to_string(h) + ".conv", 40);
  t.add("conv_norm_out", 8).add("conv_out", 0);
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names, names({"down_blocks.0", "down_blocks.1", "up_blocks.0", "up_blocks.1"}));
  EXPECT_EQ(u.rule, "auto: up_blocks.# + down_blocks.#");
}

// A GAN (tests/e2e/gan_job.py): the generator is the first root,
// the discriminator runs three times per step (real data, detached fakes,
// the fakes for the generator's loss) and saves more. Its blocks cannot be
// planned call by call; the generator's can.
TEST(AutoUnits, BlocksCalledSeveralTimesPerStepGiveWayToBlocksCalledOnce) {
  Tree t;
  t.add("", 0).root();
  for (int b = 0; b < 3; ++b) {
    std::string blk = "layers." + std::to_string(b);
    t.add(blk, 60).add(blk + ".0", 40).add(blk + ".1", 20);
  }
  t.add("D", 0, 3).root();
  for (int b = 0; b < 3; ++b) {
    std::string blk = "D.layers." + std::to_string(b);
    t.add(blk, 180, 3).add(blk + ".0", 120, 3).add(blk + ".1", 60, 3);
  }
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names, names({"layers.0", "layers.1", "layers.2"}));
  EXPECT_EQ(u.rule, "auto: layers.#");
}

// CLIP-style contrastive training (bench/robustness/probe_finetune.py clip):
// an image encoder and a text encoder, two separate modules called at top
// level, one loss, one optimizer. The shim names the first called "" and the
// other by its class. Both keep their blocks' activations until the one
// backward: the units are the blocks of both, whatever each calls them.
TEST(AutoUnits, TwoTowersTrainedOnOneLossEachBringTheirBlocks) {
  auto block = [](Tree& t, const std::string& b, Bytes saved) {
    t.add(b, saved).add(b + ".ln1", saved / 8).add(b + ".attn", saved / 2).add(b + ".ln2", saved / 8);
    t.add(b + ".mlp", saved / 4).add(b + ".mlp.0", saved / 8).add(b + ".mlp.1", saved / 8).add(b + ".mlp.2", 0);
  };
  Tree t;
  t.add("", 0).root().add("patch", 10);
  for (int b = 0; b < 4; ++b) block(t, "blocks." + std::to_string(b), 40);
  t.add("proj", 1);
  t.add("TextTower", 0).root().add("TextTower.emb", 0);
  for (int b = 0; b < 4; ++b) block(t, "TextTower.layers." + std::to_string(b), 160);
  t.add("TextTower.proj", 1);
  t.add("CrossEntropyLoss", 1).root();
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names, names({"blocks.0", "blocks.1", "blocks.2", "blocks.3", "TextTower.layers.0",
                            "TextTower.layers.1", "TextTower.layers.2", "TextTower.layers.3"}));
  EXPECT_EQ(u.rule, "auto: blocks.# + TextTower.layers.# (the blocks of every model the job trains: "
                    "the first called and TextTower)");
}

// The model and three instances of one tower class, separate roots of one
// loss (tests/python/loops_job.py three-towers): the shim names them
// "TextTower", "TextTower[1]", "TextTower[2]". The later two look like a
// numbered list of whole towers, which would be taken as the model's
// blocks (nested with their own blocks); each brings its blocks instead.
TEST(AutoUnits, ThreeInstancesOfOneTowerClassEachBringTheirBlocks) {
  auto tower = [](Tree& t, const std::string& root) {
    t.add(root, 4 * 160 + 8).root().add(root + ".emb", 8);
    for (int b = 0; b < 4; ++b) {
      std::string blk = root + ".layers." + std::to_string(b);
      t.add(blk, 160).add(blk + ".attn", 80).add(blk + ".mlp", 80);
    }
  };
  Tree t;
  t.add("", 4 * 40).root().add("patch", 10);
  for (int b = 0; b < 4; ++b) t.add("blocks." + std::to_string(b), 40).add("blocks." + std::to_string(b) + ".mlp", 20);
  for (const char* root : {"TextTower", "TextTower[1]", "TextTower[2]"}) tower(t, root);
  UnitSelection u = selectUnits(t.modules(), "auto");
  std::vector<std::string> want = {"blocks.0", "blocks.1", "blocks.2", "blocks.3"};
  for (const char* root : {"TextTower", "TextTower[1]", "TextTower[2]"})
    for (int b = 0; b < 4; ++b) want.push_back(std::string(root) + ".layers." + std::to_string(b));
  EXPECT_EQ(u.names, want);
  EXPECT_EQ(u.rule, "auto: blocks.# + TextTower.layers.# + TextTower[#].layers.# (the blocks of every "
                    "model the job trains: the first called and TextTower, TextTower[1], TextTower[2])");
}

// A multi-task job calling its trunk and three heads of one class itself
// (probe_job.py multitask --pattern heads_apart): "Head[1].body" and
// "Head[2].body" are one module per instance, parallel branches off the
// trunk whose backward windows nest, no blocks. Taken as a family, they
// made every budget refused ("backward of Head[1].body starts before
// Head[2].body's ends"); the trunk's blocks are the units.
TEST(AutoUnits, OneModulePerInstanceOfARootClassIsNoFamily) {
  Tree t;
  t.add("", 400).root();
  for (int b = 0; b < 4; ++b) t.add("4." + std::to_string(b), 100).add("4." + std::to_string(b) + ".conv1", 50);
  for (const char* head : {"Head", "Head[1]", "Head[2]"}) {
    std::string h = head;
    t.add(h, 300).root().add(h + ".body", 300).add(h + ".body.0", 150).add(h + ".body.1", 150);
  }
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names, names({"4.0", "4.1", "4.2", "4.3"}));
  EXPECT_EQ(u.rule, "auto: #.#");
}

// A language model on one nn.LSTM(num_layers=4) (probe_job.py lstm_deep):
// no repeated modules, and the LSTM, one module, saves nearly everything.
// The rule says it can only be checkpointed whole and how to split it.
TEST(AutoUnits, OneRecurrentModuleOfManyLayersIsSaidToBeCheckpointedOnlyWhole) {
  Tree t;
  t.add("", 0).root().add("emb", 5).add("rnn", 90).add("drop", 0).add("head", 5);
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names, names({"emb", "rnn", "drop", "head"}));
  EXPECT_NE(u.rule.find("rnn saves 90% of what the units save and is one module with no recorded "
                        "sub-modules"), std::string::npos) << u.rule;
  EXPECT_NE(u.rule.find("nn.ModuleList of one-layer modules"), std::string::npos) << u.rule;
  Tree spread;  // no module holds most: nothing to say
  spread.add("", 0).add("a", 40).add("b", 30).add("c", 30);
  EXPECT_EQ(selectUnits(spread.modules(), "auto").rule, "auto: depth 1 (no repeated blocks)");
}

TEST(AutoUnits, FamilyPattern) {
  EXPECT_EQ(familyPattern("layer3.1"), "layer#.#");
  EXPECT_EQ(familyPattern("encoder.layers.encoder_layer_11"), "encoder.layers.encoder_layer_#");
  EXPECT_EQ(familyPattern("features.5.2"), "features.#.#");
  EXPECT_EQ(familyPattern("head"), "head");
}

// Fine-tuning with the lower half frozen: backward never runs through h.0 and
// h.1 (no backward ranges). The units are the trainable blocks; the frozen
// ones are named, so advise can say why they are left out.
TEST(AutoUnits, FrozenBlocksRunNoBackwardAndAreNamedAsSuch) {
  Tree t;
  t.add("", 0).add("wte", 0, 1, false);
  for (int b = 0; b < 4; ++b) {
    std::string blk = "h." + std::to_string(b);
    t.add(blk, 50, 1, b >= 2).add(blk + ".attn", 30, 1, b >= 2).add(blk + ".mlp", 20, 1, b >= 2);
  }
  t.add("ln_f", 1);
  UnitSelection u = selectUnits(t.modules(), "auto");
  EXPECT_EQ(u.names, names({"h.2", "h.3"}));
  EXPECT_EQ(forwardOnlyBlocks(t.modules(), u.names), names({"h.0", "h.1"}));
}

// Everything but the head frozen: nothing repeats among the modules with a
// backward, and the error says the rest ran forward only.
TEST(AutoUnits, OnlyTheHeadTrainableSaysTheRestRanForwardOnly) {
  Tree t;
  t.add("", 0).add("conv1", 0, 1, false);
  for (int b = 0; b < 3; ++b) t.add("layer1." + std::to_string(b), 50, 1, false);
  t.add("fc", 1);
  try {
    selectUnits(t.modules(), "auto");
    FAIL() << "no error";
  } catch (const AdviceError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("(the model), fc"), std::string::npos) << what;
    EXPECT_NE(what.find("4 recorded modules ran forward only (conv1, layer1.0"), std::string::npos) << what;
    EXPECT_NE(what.find("no gradient flows through them"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace gcprof::advisor
