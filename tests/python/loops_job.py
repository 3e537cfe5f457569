"""Training loops whose optimizer steps are not one per iteration, for
test_steps.py: each prints one `loss <iteration> <repr>` line per iteration.

    python loops_job.py gan          D's optimizer steps, then G's (DCGAN)
    python loops_job.py gan-g-first  G's optimizer steps, then D's
    python loops_job.py wgan         5 critic steps on detached fakes, then G's step
    python loops_job.py wgan-no-grad the same, the fakes made under no_grad
    python loops_job.py unused       a second optimizer that never steps (20 iterations)
    python loops_job.py accumulate   two micro-batches per optimizer step
    python loops_job.py scheduler    one optimizer and a StepLR
    python loops_job.py teacher      a trainable root no optimizer steps
    python loops_job.py distill      a frozen teacher under no_grad, called first
    python loops_job.py two-backward two losses, two backward calls (retain_graph=True)
    python loops_job.py two-towers   two separate root modules (CLIP-style image and text
                                     towers), one contrastive loss, one optimizer;
                                     `--apply-plan PLAN` applies a plan from code to both
    python loops_job.py three-towers the image tower (the model) and three TextTower
                                     instances (separate roots of one class), one loss;
                                     `--apply-plan PLAN` as above
"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


def mlp(a, b):
    return nn.Sequential(nn.Linear(a, 32), nn.Tanh(), nn.Linear(32, b))


def gan(d_first):
    g, d = mlp(8, 16), mlp(16, 1)
    og = torch.optim.Adam(g.parameters(), lr=1e-3)
    od = torch.optim.Adam(d.parameters(), lr=1e-3)

    def d_step(fake, real):
        od.zero_grad()
        ld = F.binary_cross_entropy_with_logits(d(real), torch.ones(4, 1)) + \
            F.binary_cross_entropy_with_logits(d(fake.detach()), torch.zeros(4, 1))
        ld.backward()
        od.step()

    def g_step(fake):
        og.zero_grad()
        lg = F.binary_cross_entropy_with_logits(d(fake), torch.ones(4, 1))
        lg.backward()
        og.step()
        return lg

    for it in range(3):
        real, fake = torch.randn(4, 16), g(torch.randn(4, 8))
        if d_first:
            d_step(fake, real)
            loss = g_step(fake)
        else:
            loss = g_step(fake)
            d_step(fake, real)
        print("loss %d %r" % (it, loss.item()), flush=True)


def distill():
    teacher = mlp(16, 1).eval().requires_grad_(False)
    student = mlp(16, 1)
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    for it in range(3):
        x = torch.randn(4, 16)
        with torch.no_grad():
            target = teacher(x)
        loss = F.mse_loss(student(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("loss %d %r" % (it, loss.item()), flush=True)


def two_backward():
    model = mlp(16, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for it in range(3):
        out = model(torch.randn(4, 16))
        main, aux = out[:, 0].pow(2).mean(), out[:, 1].abs().mean()
        opt.zero_grad()
        main.backward(retain_graph=True)
        aux.backward()
        opt.step()
        print("loss %d %r" % (it, main.item()), flush=True)


class TextTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(32, 16)
        self.layers = nn.ModuleList(nn.Sequential(nn.Linear(16, 32), nn.Dropout(0.2), nn.Tanh(),
                                                  nn.Linear(32, 16)) for _ in range(2))

    def forward(self, ids):
        x = self.emb(ids)
        for layer in self.layers:
            x = x + layer(x)
        return x.mean(1)


def two_towers(texts=1):
    image = mlp(16, 16)
    towers = [TextTower() for _ in range(texts)]
    opt = torch.optim.SGD([p for m in [image] + towers for p in m.parameters()], lr=0.1)
    if "--apply-plan" in sys.argv:
        import gcprof
        gcprof.apply_plan([image] + towers, sys.argv[sys.argv.index("--apply-plan") + 1])
    for it in range(3):
        a = F.normalize(image(torch.randn(4, 16)), dim=-1)
        losses = []
        for text in towers:  # one text field per tower (title, body, tags)
            b = F.normalize(text(torch.randint(0, 32, (4, 5))), dim=-1)
            losses.append(F.cross_entropy(a @ b.t() / 0.1, torch.arange(4)))
        loss = sum(losses[1:], losses[0])
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("loss %d %r" % (it, loss.item()), flush=True)


def wgan(no_grad):
    g, d = mlp(8, 16), mlp(16, 1)
    og = torch.optim.Adam(g.parameters(), lr=1e-3, betas=(0.0, 0.9))
    od = torch.optim.Adam(d.parameters(), lr=1e-3, betas=(0.0, 0.9))
    for it in range(3):
        for _ in range(5):
            if no_grad:
                with torch.no_grad():
                    fake = g(torch.randn(4, 8))
            else:
                fake = g(torch.randn(4, 8)).detach()
            od.zero_grad()
            (d(fake).mean() - d(torch.randn(4, 16)).mean()).backward()
            od.step()
        og.zero_grad()
        loss = -d(g(torch.randn(4, 8))).mean()
        loss.backward()
        og.step()
        print("loss %d %r" % (it, loss.item()), flush=True)


def single(accumulate=1, scheduler=False, teacher=False, unused=False):
    model = mlp(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    later = torch.optim.SGD(model.parameters(), lr=0.01) if unused else None  # never steps
    sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5) if scheduler else None
    frozen = mlp(16, 16) if teacher else None  # requires_grad left on, in no optimizer
    for it in range(20 if unused else 3):
        for _ in range(accumulate):
            x = torch.randn(4, 16)
            if frozen is not None:
                x = frozen(x).detach()
            loss = model(x).pow(2).mean()
            loss.backward()
        opt.step()
        opt.zero_grad()
        if sched is not None:
            sched.step()
        print("loss %d %r" % (it, loss.item()), flush=True)


if __name__ == "__main__":
    {"gan": lambda: gan(True), "gan-g-first": lambda: gan(False),
     "accumulate": lambda: single(accumulate=2), "scheduler": lambda: single(scheduler=True),
     "teacher": lambda: single(teacher=True), "unused": lambda: single(unused=True),
     "wgan": lambda: wgan(False), "wgan-no-grad": lambda: wgan(True), "distill": distill,
     "two-backward": two_backward, "two-towers": two_towers,
     "three-towers": lambda: two_towers(texts=3)}[sys.argv[1]]()
