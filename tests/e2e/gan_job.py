"""A small GAN for e2e.loops.Gan: two models, two optimizers, DCGAN's loop
(the discriminator stepped on real data and detached fakes, then the
generator through the discriminator). Prints `step <i> loss <value>` (the
generator's loss) once per iteration."""
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


g, d = Net(64, 512, 256, 4), Net(256, 512, 1, 3)
og = torch.optim.Adam(g.parameters(), lr=1e-4, betas=(0.5, 0.999))
od = torch.optim.Adam(d.parameters(), lr=1e-4, betas=(0.5, 0.999))
data = torch.Generator().manual_seed(1)
B = 512
for step in range(3):
    real = torch.randn(B, 256, generator=data)
    fake = torch.tanh(g(torch.randn(B, 64, generator=data)))
    od.zero_grad()
    ld = F.binary_cross_entropy_with_logits(d(real), torch.ones(B, 1)) + \
        F.binary_cross_entropy_with_logits(d(fake.detach()), torch.zeros(B, 1))
    ld.backward()
    od.step()
    og.zero_grad()
    lg = F.binary_cross_entropy_with_logits(d(fake), torch.ones(B, 1))
    lg.backward()
    og.step()
    print("step %d loss %.6f" % (step, lg.item()), flush=True)
