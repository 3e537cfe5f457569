"""A small GAN, two models and two optimizers, for e2e.loops.Gan and the
robustness sweep (bench/robustness/sweep.py gan ../../tests/e2e/gan_job.py).
Prints `step <i> loss <value>` (the generator's loss) once per iteration.

    --loop dcgan      DCGAN: D stepped on real data and detached fakes, then G
                      through D (G's backward also fills D's gradients)
    --loop coupled    D's loss on the fakes themselves, not detached: its
                      backward runs through G too (retain_graph), then G's step
    --loop wgan       WGAN: n_critic = 5 critic steps, each on new detached
                      fakes, then one generator step
    --loop wgan-gp    WGAN-GP: as wgan, the critic's loss with a gradient
                      penalty (autograd.grad with create_graph: double backward)
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self, a, width, b, blocks):
        super().__init__()
        self.layers = nn.ModuleList(
            [nn.Sequential(nn.Linear(a if i == 0 else width, width), nn.LayerNorm(width), nn.LeakyReLU(0.2))
             for i in range(blocks)])
        self.out = nn.Linear(width, b)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.out(x)


ap = argparse.ArgumentParser()
ap.add_argument("--loop", choices=("dcgan", "coupled", "wgan", "wgan-gp"), default="dcgan")
ap.add_argument("--steps", type=int, default=3)
ap.add_argument("--batch", type=int, default=512)
args = ap.parse_args()

g, d = Net(64, 512, 256, 4), Net(256, 512, 1, 3)
wgan = args.loop.startswith("wgan")
betas = (0.0, 0.9) if wgan else (0.5, 0.999)
og = torch.optim.Adam(g.parameters(), lr=1e-4, betas=betas)
od = torch.optim.Adam(d.parameters(), lr=1e-4, betas=betas)
data = torch.Generator().manual_seed(1)
B = args.batch


def noise():
    return torch.randn(B, 64, generator=data)


def bce(logits, target):
    return F.binary_cross_entropy_with_logits(logits, torch.full((B, 1), float(target)))


def gradient_penalty(real, fake):
    mix = torch.rand(B, 1, generator=data)
    x = (mix * real + (1 - mix) * fake).requires_grad_(True)
    grad, = torch.autograd.grad(d(x).sum(), x, create_graph=True)
    return 10 * ((grad.norm(2, dim=1) - 1) ** 2).mean()


def critic_step():
    real = torch.randn(B, 256, generator=data)
    fake = torch.tanh(g(noise())).detach()
    ld = d(fake).mean() - d(real).mean()
    if args.loop == "wgan-gp":
        ld = ld + gradient_penalty(real, fake)
    od.zero_grad()
    ld.backward()
    od.step()


for step in range(args.steps):
    if wgan:
        for _ in range(5):
            critic_step()
        fake = torch.tanh(g(noise()))
        lg = -d(fake).mean()
    else:
        real = torch.randn(B, 256, generator=data)
        fake = torch.tanh(g(noise()))
        coupled = args.loop == "coupled"
        ld = bce(d(real), 1) + bce(d(fake if coupled else fake.detach()), 0)
        od.zero_grad()
        ld.backward(retain_graph=coupled)
        od.step()
        lg = bce(d(fake), 1)
    og.zero_grad()
    lg.backward()
    og.step()
    print("step %d loss %.6f" % (step, lg.item()), flush=True)
