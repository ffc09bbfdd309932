"""course_lib.train_step: one step equals the update written out by hand."""

import torch
from torch import nn

from course_lib import train_step


def mse(model, batch):
    x, y = batch
    return ((model(x) - y) ** 2).mean()


def test_one_sgd_step_by_hand():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    w, b = model.weight.detach().clone(), model.bias.detach().clone()
    # by hand: d/dw mean((xw^T + b - y)^2) = 2/N (r^T x), d/db = 2/N sum(r)
    r = x @ w.T + b - y
    grad_w, grad_b = 2 * r.T @ x / 8, 2 * r.sum(0) / 8
    loss = train_step(model, torch.optim.SGD(model.parameters(), lr=0.1), mse, (x, y), None)
    assert abs(loss - (r**2).mean().item()) < 1e-6
    assert torch.allclose(model.weight, w - 0.1 * grad_w, atol=1e-6)
    assert torch.allclose(model.bias, b - 0.1 * grad_b, atol=1e-6)


def test_clipping_scales_the_gradient_to_the_limit():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    x, y = torch.randn(8, 3) * 100, torch.randn(8, 1)
    before = [p.detach().clone() for p in model.parameters()]
    train_step(model, torch.optim.SGD(model.parameters(), lr=1.0), mse, (x, y), clip_grad=0.5)
    step = torch.cat(
        [(p0 - p.detach()).flatten() for p0, p in zip(before, model.parameters(), strict=True)]
    )
    assert abs(step.norm().item() - 0.5) < 1e-5  # lr 1: the update is the clipped gradient
