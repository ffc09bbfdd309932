"""The training scripts under torchrun (issue 47): two CPU processes (gloo) on half-batches give
the parameters one process gives on the full batch, to 1e-6, after a few steps.

Each worker is started by ``torch.multiprocessing`` with the environment ``torchrun`` sets
(``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``), so the scripts'
own ``start_run`` joins the group as under ``torchrun``; one test runs ``torchrun`` itself on a
world size that does not divide the batch. One thread per process, tiny configs, 3 steps.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from course_lib.configs import TINY_GPT_CONFIG, BertEncoderConfig, GPTConfig, TrainingConfig
from course_lib.data_parallel import shard_batch
from tools.training import (
    distributed,
    fine_tune_minilm,
    modern_ladder,
    moe_experiment,
    train_assistant,
    train_gpt,
    train_rl,
    train_tiny_bert,
)

ROOT = Path(__file__).resolve().parents[1]
STEPS = 3
TINY_GPT = GPTConfig(vocab_size=512, context_length=32, d_model=32, num_heads=2, num_layers=1)
TINY_TRAINING = TrainingConfig(seed=0, steps=STEPS, batch_size=4, lr=2e-3, warmup=1,
                               schedule="cosine", weight_decay=0.1, eval_every=1000)  # fmt: skip


def _gpt(ranks):
    model, _, _ = train_gpt.train_tiny_gpt(TINY_GPT, TINY_TRAINING, ranks)
    return model, []


def _ladder(ranks):
    record, model = modern_ladder.run(modern_ladder.GQA, 0, stop_after=STEPS, ranks=ranks)
    return model, record["first_losses"]


def _moe(ranks):  # routed experts: some get no token on one process (find_unused_parameters)
    record = moe_experiment.run("MoE, no aux loss", 0, stop_after=STEPS, ranks=ranks)
    return None, record["first_losses"]


def _bert(ranks):  # the MLM loss: a mean over masked tokens, whose number differs between rows
    # lr 1e-4: AdamW divides each gradient by its own size, so a gradient near eps = 1e-8 turns
    # rounding into a step difference of up to ~lr * 1e-3 (lr 2e-3 gave 7.4e-6 on the pooler,
    # lr 1e-4 is measured below 1e-6); leaving out the MLM rescaling moves the weights by more
    training = TrainingConfig(seed=0, steps=STEPS, batch_size=4, lr=1e-4, warmup=1)
    model, _, _, log = train_tiny_bert.pretrain(training, eval_every=1000, ranks=ranks)
    return model, []


def _chat_gpt():
    from course_lib.data.chat import load_chat_tokenizer

    tok = load_chat_tokenizer()
    config = GPTConfig(vocab_size=len(tok), context_length=TINY_GPT_CONFIG.context_length,
                       d_model=32, num_heads=2, num_layers=1)  # fmt: skip
    torch.manual_seed(0)
    return tok, train_gpt.GPT(config)


def _assistant(ranks):  # SFT (a mean over reply tokens), then DPO + NLL with LoRA adapters
    from course_lib.data.instructions import preference_pair, training_instructions

    tok, model = _chat_gpt()
    cfg = dict(train_assistant.SETTINGS, batch_size=4, dpo_pairs=4)
    log, _ = train_assistant.sft(model, tok, STEPS, 2e-3, cfg, "SFT", ranks)
    triples = [(x, *preference_pair(x)) for x in training_instructions(8, 1)]
    candidate = {"lr": 1e-3, "beta": 0.1, "nll": 1.0, "steps": STEPS}
    policy, _, _, trajectory = train_assistant.train_dpo(model, tok, cfg, candidate, triples, ranks)
    return policy, trajectory["chosen"] + trajectory["rejected"]


def _rl(ranks):  # GRPO (DAPO loss) on lecture 14's tuned model: rewards that vary in a group
    from course_lib.data.chat import load_chat_tokenizer
    from course_lib.models.assistant import load_assistant
    from course_lib.models.rl import exact_match_rewards

    tuned, _ = load_assistant("tuned")
    cfg = dict(train_rl.SETTINGS, prompts_per_rollout=2, group_size=4, max_new_tokens=24,
               hacking_steps=0)  # fmt: skip
    policy, log = train_rl.run_grpo(tuned, load_chat_tokenizer(), cfg, 1e-3, "all", STEPS,
                                    exact_match_rewards, ranks)  # fmt: skip
    return policy, log.rewards


TINY_ENCODER = BertEncoderConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=64, hidden_dropout_prob=0.0)  # fmt: skip


def _minilm_full(ranks):  # every layer + head on [CLS], batches encoded then split by rows
    from course_lib.data.docstrings import load_topic_sentences
    from course_lib.pretrained import load_minilm

    tokenizer = load_minilm()[0]
    budget = load_topic_sentences("train", per_topic=2)
    got = fine_tune_minilm.fine_tune_full(
        tokenizer, lambda: fine_tune_minilm.random_encoder(TINY_ENCODER), None, budget, budget,
        budget, [1e-3], None, 1, 4, first_steps=STEPS, stop=True, ranks=ranks, head_dropout=0.0,
    )  # fmt: skip
    return torch.nn.ModuleList(got["modules"]), got["first_losses"]


def _minilm_top(ranks):  # the top layer + head on cached states (course_lib.fine_tune's rows)
    from course_lib.models.bert_encoder import BertEncoder

    torch.manual_seed(0)
    encoder = BertEncoder(TINY_ENCODER)
    g = torch.Generator().manual_seed(1)
    states = [torch.randn(int(n), 32, generator=g) for n in torch.randint(3, 9, (12,), generator=g)]
    labels = torch.arange(12) % 6
    best, _ = fine_tune_minilm.fine_tune_top(encoder, states, labels, states[:6],
                                             labels[:6].numpy(), 1e-3, 1e-2, 1, 4, ranks,
                                             head_dropout=0.0)  # fmt: skip
    return best["model"], []


RUNS = {"train_gpt": _gpt, "modern_ladder": _ladder, "moe_experiment": _moe,
        "train_tiny_bert": _bert, "train_assistant": _assistant, "train_rl": _rl,
        "fine_tune_minilm_full": _minilm_full, "fine_tune_minilm_top": _minilm_top}  # fmt: skip


def _key_bias(key: str) -> bool:
    """A GPT's key bias (in LoRA's frozen base too): its gradient is 0 up to rounding."""
    return key.endswith(("attn.w_k.bias", "attn.w_k.base.bias"))


def _worker(rank: int, world_size: int, port: int, name: str, out: str) -> None:
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))  # fmt: skip
    ranks = distributed.start_run("cpu")
    try:
        model, losses = RUNS[name](ranks)
        if ranks.is_main:
            params = {} if model is None else {k: v.detach().clone() for k, v in
                                               model.state_dict().items()}  # fmt: skip
            torch.save({"params": params, "losses": losses}, out)
    finally:
        distributed.finish(ranks)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RUNS))
def test_two_processes_give_the_parameters_of_one_process_on_the_full_batch(name, tmp_path):
    import torch.multiprocessing as mp

    out = tmp_path / "two.pt"
    mp.spawn(_worker, args=(2, _free_port(), name, str(out)), nprocs=2)
    two = torch.load(out, weights_only=True)
    model, losses = RUNS[name](distributed.ONE_PROCESS)  # this process: no process group
    one = {} if model is None else model.state_dict()
    assert two["params"].keys() == one.keys()
    for key, value in one.items():
        if _key_bias(key):  # its gradient is 0: see below
            continue
        assert torch.allclose(two["params"][key], value, rtol=0, atol=1e-6), key
    if name in ("train_assistant", "train_rl", "fine_tune_minilm_full", "fine_tune_minilm_top"):
        # the key biases (see below) stay at AdamW's noise level, ~lr * 1e-2 per step: measured
        # 6.2e-7 (SFT + DPO), 0 (GRPO), 7.3e-7 (MiniLM, all layers), 3.0e-5 (top layer, lr 1e-3)
        for key in [k for k in one if _key_bias(k)]:
            assert torch.allclose(two["params"][key], one[key], rtol=0, atol=1e-4), key
    assert len(two["losses"]) == len(losses)
    # DPO's trajectory: log pi - log pi_ref, each a float32 sum over an answer's tokens (tens of
    # nats, whose float32 spacing is ~4e-6): two processes sum other rows (1.9e-6 apart, measured)
    tolerance = 1e-5 if name == "train_assistant" else 1e-6
    assert two["losses"] == pytest.approx(losses, rel=0, abs=tolerance)
    if name in ("train_gpt", "train_assistant"):  # the run moved the weights: not two copies
        fresh = (train_gpt.GPT(TINY_GPT) if name == "train_gpt" else _chat_gpt()[1]).state_dict()
        plain = {k.replace(".base.", "."): v for k, v in one.items()}  # LoRA's frozen base
        assert max((v - plain[k]).abs().max().item() for k, v in fresh.items()) > 1e-3
        # A key bias adds q.b to every score of a row, which softmax takes away: its gradient is
        # 0 up to rounding, and AdamW turns that rounding (~1e-10) into steps of ~lr * g / eps.
        # It starts at 0 and stays at that noise level in both runs (1.1e-6 apart, measured).
        for key in [k for k in one if _key_bias(k)]:
            assert fresh[key.replace(".base.", ".")].abs().max() == 0
            assert one[key].abs().max() < 1e-4 and two["params"][key].abs().max() < 1e-4


def test_one_process_is_the_script_as_it_was():
    ranks = distributed.start_run("cpu")  # no torchrun environment here
    assert ranks == distributed.ONE_PROCESS
    batch = torch.arange(12).reshape(4, 3)
    assert distributed.my_rows(batch, ranks) is batch  # no copy, no reordering
    model = torch.nn.Linear(2, 2)
    assert distributed.wrap(model, ranks) is model
    assert distributed.mean_over_ranks(torch.tensor(0.25), ranks) == 0.25


def test_each_rank_takes_its_rows_of_the_global_batch():
    batch = {"ids": torch.arange(8)[:, None], "mask": (torch.arange(8) % 2 == 0, torch.ones(8, 2))}
    halves = [shard_batch(batch, r, 2) for r in range(2)]
    assert halves[0]["ids"].flatten().tolist() == [0, 1, 2, 3]
    assert halves[1]["ids"].flatten().tolist() == [4, 5, 6, 7]
    assert halves[1]["mask"][0].tolist() == [True, False, True, False]
    assert torch.equal(torch.cat([h["ids"] for h in halves]), batch["ids"])


def test_a_world_size_that_does_not_divide_the_batch_is_refused_by_name():
    with pytest.raises(ValueError, match=r"--batch-size 15 \(the global batch\) must be a multiple"
                       r" of the world size 2"):  # fmt: skip
        distributed.check_batch_size(15, distributed.Ranks(0, 2))
    with pytest.raises(ValueError, match="must divide the global batch: batch has 6 rows"):
        shard_batch(torch.zeros(6, 3), 0, 4)
    with pytest.raises(ValueError, match="--device must be 'cpu' or 'cuda', got 'gpu'"):
        distributed.start_run("gpu")


@pytest.mark.slow
def test_torchrun_with_a_world_size_that_does_not_divide_the_batch_says_so():
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    got = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "tools.training.train_gpt", "--batch-size", "15", "--steps", "200",
         "--out", "/nonexistent/never_written.pt"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert got.returncode != 0
    assert "--batch-size 15 (the global batch) must be a multiple of the world size 2" in (
        got.stdout + got.stderr
    )
