"""Robustness sweep: a small GAN -- two models, two optimizers, the
discriminator stepped on detached fakes, then the generator (DCGAN's loop)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


def block(a, b):
    return nn.Sequential(nn.Linear(a, b), nn.LayerNorm(b), nn.LeakyReLU(0.2))


class G(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([block(64, 512)] + [block(512, 512) for _ in range(4)])
        self.out = nn.Linear(512, 256)

    def forward(self, z):
        for l in self.layers:
            z = l(z)
        return torch.tanh(self.out(z))


class D(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([block(256, 512)] + [block(512, 512) for _ in range(4)])
        self.out = nn.Linear(512, 1)

    def forward(self, x):
        for l in self.layers:
            x = l(x)
        return self.out(x)


g, d = G(), D()
og = torch.optim.Adam(g.parameters(), lr=1e-4, betas=(0.5, 0.999))
od = torch.optim.Adam(d.parameters(), lr=1e-4, betas=(0.5, 0.999))
gen = torch.Generator().manual_seed(1)
B = 512
for step in range(3):
    real = torch.randn(B, 256, generator=gen)
    z = torch.randn(B, 64, generator=gen)
    fake = g(z)
    od.zero_grad()
    ld = F.binary_cross_entropy_with_logits(d(real), torch.ones(B, 1)) + \
        F.binary_cross_entropy_with_logits(d(fake.detach()), torch.zeros(B, 1))
    ld.backward()
    od.step()
    og.zero_grad()
    lg = F.binary_cross_entropy_with_logits(d(fake), torch.ones(B, 1))
    lg.backward()
    og.step()
    print("d %d %.6f" % (step, ld.item()))
    print("step %d loss %.6f" % (step, lg.item()), flush=True)
