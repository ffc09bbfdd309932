"""course_lib.train_step: one step equals the update written out by hand."""

import json
from pathlib import Path

import pytest
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


# --- the progress bar a saved notebook shows ------------------------------------------------

_NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def _bar_texts(nb) -> list[str]:
    return [
        "".join(out["data"]["text/plain"])
        for cell in nb["cells"]
        for out in cell.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in out.get("data", {})
        and "it/s" in "".join(out["data"].get("text/plain", ""))
    ]


@pytest.mark.slow
def test_a_notebook_saves_the_finished_bar_not_the_zero_percent_it_started_as(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import torch\nfrom course_lib import train\n"
            "m = torch.nn.Linear(2, 1)\n"
            "log = train(m, lambda s: torch.ones(3, 2), lambda model, b: model(b).pow(2).mean(),"
            " steps=30, lr=0.01, desc='toy')"
        )
    )
    NotebookClient(nb, timeout=120, kernel_name="python3").execute(
        cwd=str(Path(__file__).resolve().parents[1])
    )
    (text,) = _bar_texts(nb)
    assert text.startswith("toy: 100%") and "30/30" in text, text


@pytest.mark.parametrize("path", _NOTEBOOKS, ids=lambda p: p.stem)
def test_no_lecture_stores_a_progress_bar_that_never_moved(path):
    """GitHub, nbviewer and the offline site show only a bar's text: it must be the end state."""
    stuck = [t for t in _bar_texts(json.loads(path.read_text())) if " 0%|" in t]
    assert not stuck, f"{path.name}: re-execute it with tools.notebooks.nbbuild; stored {stuck}"
