"""TRL's GRPOTrainer trains against the contact center with the shipped integration: one step with a
tiny model and tokenizer built here (no downloads) changes the weights, in process and over a real
``csr-marl serve`` on localhost."""

from __future__ import annotations

import copy
import inspect
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extras import need

from csr_marl.grpo import ContactCenterToolEnv, environment_factory
from csr_marl.text.tasks import GRPO_TASKS

ROOT = Path(__file__).resolve().parents[1]
TASK = "tasks/payment_failure"


# One worker runs this module, so its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("grpo")


def tool_names(env: ContactCenterToolEnv) -> set[str]:
    return {
        name for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    }


# --- the environment, without TRL ---------------------------------------------------------------
def test_the_tools_are_the_tasks_roles_tools() -> None:
    assert tool_names(environment_factory("tasks/ticket_classify")()) == {"classify"}
    resolver = tool_names(environment_factory("tasks/refund")())
    assert {"check_payment", "initiate_refund", "respond_user", "pick_ticket"} <= resolver
    assert "classify" not in resolver and "fraud_review" not in resolver


def test_a_call_not_legal_now_is_refused_in_the_result_and_never_raises() -> None:
    env = environment_factory("tasks/ticket_resolve")()
    first = env.reset(seed=0)
    assert "Classify this ticket" in first
    result = env.check_payment()  # legal later (work), not at triage
    assert result.startswith("Refused:") and "classify" in result
    assert env.step_rewards[-1] < 0


def test_the_reward_is_the_episode_score_and_the_call_limit_ends_the_episode() -> None:
    env = environment_factory("tasks/order_status", max_calls=3)()
    env.reset(seed=0)
    assert env.get_reward() == 0.0  # no call: nothing done
    env.reset(seed=0)
    for _ in range(3):
        env.check_order_status()
    assert "Call limit" in env.check_order_status()
    assert 0.0 < env.get_reward() < 0.3  # a lookup, repeated: little credit


def test_brief_follow_ups_show_what_changed_on_the_ticket_and_a_new_decision_whole() -> None:
    full, brief = (environment_factory(TASK, follow_ups=mode)() for mode in ("full", "brief"))
    assert full.reset(seed=100) == brief.reset(seed=100)
    whole, short = full.check_payment(), brief.check_payment()
    assert whole.startswith("Done.") and short.startswith("Done.")
    # what the lookup found and the question are there; the ticket's body, already in the conversation, is not
    found = next(line for line in whole.splitlines() if line.startswith("Your tools found:"))
    assert found in short and short.splitlines()[-1] == whole.splitlines()[-1]
    assert "Subject:" in whole and "Subject:" not in short and len(short) < len(whole) * 0.6
    assert "Ticket #0, as above" in short
    # the same episode either way: same reward, same score
    assert full.step_rewards == brief.step_rewards
    assert full.get_reward() == brief.get_reward()
    # a new decision (the next ticket's pick on a multi-ticket task) is shown whole
    env = environment_factory("tasks/few_tickets", follow_ups="brief")()
    env.reset(seed=100)
    env.check_payment()
    after_reply = env.respond_user(message="Hi, I have looked into it.")
    assert "Tickets waiting in your queue" in after_reply and "as above" not in after_reply
    with pytest.raises(ValueError, match="follow_ups must be one of full, brief"):
        environment_factory(TASK, follow_ups="short")


def test_the_careful_agents_episodes_fit_a_cap_with_brief_follow_ups_that_cuts_them_with_full_ones() -> None:
    """The order_status run's rollouts all ended after one lookup: TRL drops a tool result that would pass
    max_completion_length (256 there), and a whole resolver decision is about 250 tokens."""
    need("transformers")
    from csr_marl.grpo import tiny
    from csr_marl.grpo.demos import completion_tokens, demonstrations
    from csr_marl.llm.chat_format import attach_parser

    tokenizer = attach_parser(tiny.build_tokenizer(tiny.corpus([TASK], range(4)), vocab_size=800))
    seeds = range(100, 106)
    full = completion_tokens(demonstrations(TASK, seeds), tokenizer)
    brief = completion_tokens(demonstrations(TASK, seeds, follow_ups="brief"), tokenizer)
    assert len(full) == len(brief) == len(seeds)  # one per episode that ended in a closing reply
    assert all(b < f for b, f in zip(brief, full))
    assert sum(brief) < 0.75 * sum(full)


@pytest.mark.parametrize("task", GRPO_TASKS)
def test_every_grpo_task_resets_to_a_turn(task: str) -> None:
    assert "one tool call" in environment_factory(task)().reset(seed=3) or "tool" in environment_factory(task)().reset(seed=3)


# --- GRPO with TRL ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny() -> tuple[Any, Any]:
    need("trl")
    from csr_marl.grpo import tiny as build

    tokenizer = build.build_tokenizer(build.corpus([TASK], range(40)), vocab_size=2048)
    model = build.build_model(tokenizer, hidden=64)
    losses = build.warm_start(model, tokenizer, build.first_calls(TASK, range(6)), steps=100, lr=5e-3)
    assert losses[-1] < losses[0] / 2  # it learned the shape of a call
    return model, tokenizer


def grpo_step(model: Any, tokenizer: Any, feed: Any, out: Path) -> dict[str, float]:
    """Up to six one-step runs on fresh seeds until a group's rewards differ; the step's log.
    ``feed(seed)`` gives the trainer's environment arguments (dataset, factory or rollout function)."""
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    from trl import GRPOConfig, GRPOTrainer

    for attempt in range(6):
        args = GRPOConfig(
            output_dir=str(out), num_generations=4, per_device_train_batch_size=4, max_steps=1,
            max_completion_length=160, max_tool_calling_iterations=3, learning_rate=1e-3, use_cpu=True,
            report_to="none", logging_steps=1, save_strategy="no", seed=attempt, temperature=1.0,
        )
        trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=args, **feed(attempt))
        trainer.train()
        log = trainer.state.log_history[0]
        if log["reward_std"] > 0:
            return log
    return log


def environment_feed(factory: Any) -> Any:
    from csr_marl.grpo import task_dataset

    return lambda seed: {"train_dataset": task_dataset(TASK, [seed]), "environment_factory": factory}


def rollout_feed(base_url: str | None) -> Any:
    from csr_marl.grpo.rollout import episode_reward, make_rollout_func, rollout_dataset

    rollout = make_rollout_func(TASK, base_url=base_url, max_calls=4, max_new_tokens=48)
    return lambda seed: {
        "train_dataset": rollout_dataset(TASK, [seed]), "rollout_func": rollout, "reward_funcs": [episode_reward],
    }


def assert_weights_change(tiny: tuple[Any, Any], feed: Any, out: Path, tool_calls: bool = True) -> dict[str, float]:
    import torch

    model, tokenizer = copy.deepcopy(tiny[0]), tiny[1]
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    log = grpo_step(model, tokenizer, feed, out)
    if tool_calls:  # TRL counts the calls it ran itself (not those a rollout_func runs)
        assert log["tools/call_frequency"] > 0, log
    assert -1.0 <= log["reward"] <= 1.0
    changed = [name for name, p in model.named_parameters() if not torch.equal(before[name], p.detach())]
    assert changed, f"no weight changed: {log}"
    return log


@pytest.mark.slow
def test_one_grpo_step_in_process_changes_the_weights(tiny: tuple[Any, Any], tmp_path: Path) -> None:
    assert_weights_change(tiny, environment_feed(environment_factory(TASK, max_calls=4)), tmp_path)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    need("openenv")
    port = free_port()
    log = tmp_path_factory.mktemp("grpo_serve") / "server.log"
    command = [sys.executable, "-m", "csr_marl", "serve", "--port", str(port), "--scenario", TASK,
               "--roles", "resolver", "--max-sessions", "64", "--log-level", "warning"]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/health", timeout=5).close()
                break
            except (urllib.error.URLError, ConnectionError):
                assert process.poll() is None, f"the server exited: {log.read_text()}"
                assert time.monotonic() < deadline, f"the server did not come up: {log.read_text()}"
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert "Traceback" not in log.read_text(), log.read_text()


@pytest.mark.slow
def test_one_grpo_step_over_the_server_changes_the_weights(
    tiny: tuple[Any, Any], server: str, tmp_path: Path
) -> None:
    assert_weights_change(tiny, environment_feed(environment_factory(TASK, base_url=server, max_calls=4)), tmp_path)


@pytest.mark.slow
def test_one_grpo_step_with_the_rollout_func_over_the_openenv_client(
    tiny: tuple[Any, Any], server: str, tmp_path: Path
) -> None:
    assert_weights_change(tiny, rollout_feed(server), tmp_path, tool_calls=False)


def test_sixteen_concurrent_sessions_play_their_own_episodes(server: str) -> None:
    envs = [environment_factory("tasks/order_status", base_url=server)() for _ in range(16)]
    texts = [env.reset(seed=seed) for seed, env in enumerate(envs)]
    assert all("Ticket #0" in text for text in texts)
    results = [env.check_order_status() for env in envs]
    assert all(result.startswith("Done. Reward +0.20") for result in results)
    assert len(set(texts)) > 8  # different seeds, different customers


# --- warm start on scripted demonstrations, and the greedy evaluation ------------------------------
def test_demonstrations_replay_the_careful_agents_episodes_in_the_grpo_conversation() -> None:
    need("transformers")
    from csr_marl.grpo.demos import demonstrations
    from csr_marl.text.scripted import play
    from csr_marl.text.tasks import task_session

    examples = demonstrations("tasks/refund", [101, 102])
    expected: list = []
    for seed in (101, 102):
        record: list = []
        play(task_session("tasks/refund"), "careful", seed, max_calls=12, record=record)
        # every call, then the short reply that ends the turn once the last call ended the episode
        expected += [{"name": name, "arguments": dict(arguments)} for name, arguments in record] + ["Done."]
    assert [call for _, _, call in examples] == expected
    messages, tools, _ = examples[1]  # the second call sees the first call and its result
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert {t["function"]["name"] for t in tools} >= {"check_payment", "initiate_refund", "respond_user"}
    first_closing = expected.index("Done.")
    closing, _, _ = examples[first_closing]
    assert closing[-1]["role"] == "tool" and "The episode is over" in closing[-1]["content"]
    assert [call for _, _, call in demonstrations("tasks/refund", [101], closing=None)] == expected[:first_closing]


def test_first_arguments_lead_the_demonstrated_calls_as_the_template_writes_them() -> None:
    need("transformers")
    from csr_marl.grpo import tiny
    from csr_marl.grpo.demos import demonstrations
    from csr_marl.llm.chat_format import attach_parser

    plain = demonstrations("tasks/ticket_classify", [100, 101], closing=None)
    ordered = demonstrations("tasks/ticket_classify", [100, 101], closing=None, first=("priority", "missing"))
    assert [list(call["arguments"]) for *_, call in plain] == [["category", "priority", "route"]] * 2
    assert [list(call["arguments"]) for *_, call in ordered] == [["priority", "category", "route"]] * 2
    assert [call["arguments"] for *_, call in ordered] == [call["arguments"] for *_, call in plain]  # same labels
    # what the model is trained to write: the template keeps the order (it does not sort the keys)
    tokenizer = attach_parser(tiny.build_tokenizer(tiny.corpus([TASK], range(2)), vocab_size=800))
    messages, tools, call = ordered[0]
    text = tokenizer.apply_chat_template(
        messages + [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]}],
        tools=tools, tokenize=False)
    written = text[text.rindex("<tool_call>"):]
    assert written.index('"priority"') < written.index('"category"') < written.index('"route"')
    assert tokenizer.parse_response(tokenizer(written, add_special_tokens=False)["input_ids"])["tool_calls"][0][
        "function"]["arguments"] == call["arguments"]


def test_the_tiny_models_first_calls_keep_a_triages_labels_and_leave_out_messages() -> None:
    need("transformers")
    from csr_marl.grpo.tiny import first_calls

    triage = [call for *_, call in first_calls("tasks/ticket_classify", range(100, 103))]
    assert triage and {call["name"] for call in triage} == {"classify"}
    assert all(set(call["arguments"]) == {"category", "priority", "route"} for call in triage)
    worked = [call for *_, call in first_calls("tasks/one_ticket", range(100, 103))]
    assert worked and not any({"message", "reason", "question"} & set(call["arguments"]) for call in worked)


@pytest.mark.slow
def test_a_warm_start_on_demonstrations_and_the_evaluation_run_in_smollm2s_format() -> None:
    need("trl")
    from csr_marl.grpo import demos, tiny
    from csr_marl.llm.chat_format import attach_parser

    tokenizer = attach_parser(tiny.build_tokenizer(tiny.corpus([TASK], range(4)), vocab_size=800))
    model = tiny.build_model(tokenizer, hidden=32)
    losses = tiny.warm_start(model, tokenizer, demos.demonstrations(TASK, range(100, 103)), steps=30, lr=5e-3, batch_size=2)
    assert losses[-1] < losses[0]
    scores = demos.evaluate(model, tokenizer, TASK, [10_000, 10_001], max_calls=2, max_new_tokens=24)
    assert len(scores) == 2 and all(-1.0 <= s <= 1.0 for s in scores)


class _Scripted:
    """A stand-in for a chat model in :func:`csr_marl.grpo.demos.episodes`: it answers each prompt with the
    next of its calls, written in the tokenizer's own chat format (so the real parser reads them)."""

    def __init__(self, tokenizer, calls: list[dict]) -> None:
        self.tokenizer, self.calls = tokenizer, list(calls)

    def eval(self) -> None:
        pass

    def generate(self, input_ids, **_):
        import torch

        call = self.calls.pop(0)
        text = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]}],
            tokenize=False,
        )
        prompt = self.tokenizer.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False, add_generation_prompt=True)
        ids = self.tokenizer(text[len(prompt):].rstrip("\n"), add_special_tokens=False)["input_ids"]
        return torch.cat((input_ids, torch.tensor([ids])), dim=1)


def test_the_held_out_episodes_say_what_each_score_is_made_of() -> None:
    # The careful agent's calls, read back through the parser, score as the careful agent does; the
    # judge's reply grade, the steps done and an unowed refund are each reported.
    need("trl")
    from csr_marl.grpo import demos, tiny
    from csr_marl.llm.chat_format import attach_parser
    from csr_marl.text.scripted import play
    from csr_marl.text.tasks import task_session

    tokenizer = attach_parser(tiny.build_tokenizer(tiny.corpus(["tasks/refund"], range(4)), vocab_size=800))
    record: list = []
    careful = play(task_session("tasks/refund"), "careful", 10_000, max_calls=12, record=record)
    calls = [{"name": name, "arguments": dict(arguments)} for name, arguments in record]
    [episode] = demos.episodes(_Scripted(tokenizer, calls), tokenizer, "tasks/refund", [10_000], max_calls=4)
    assert episode["score"] == pytest.approx(careful.score) and episode["score"] > 0.8
    assert episode["calls"] == [c["name"] for c in calls] and episode["parsed"] == len(calls)
    [ticket] = episode["tickets"]
    assert ticket["reply"] is not None and ticket["reply"] > 0.3 and ticket["resolved"]
    assert "initiate_refund" in ticket["steps"] and ticket["collateral"] == 0
    assert ticket["needs"] == ticket["needs_done"] == ["initiate_refund"] and ticket["unneeded"] == []

    greedy = [c if c["name"] != "initiate_refund" else {"name": "initiate_refund", "arguments": {"amount": 99999.0}}
              for c in calls]
    [episode] = demos.episodes(_Scripted(tokenizer, greedy), tokenizer, "tasks/refund", [10_000], max_calls=4)
    [ticket] = episode["tickets"]
    assert episode["score"] < 0.5 and "initiate_refund" not in ticket["steps"]
    assert ticket["needs_done"] == [] and ticket["actions"] == ["initiate_refund"]  # too large: not the refund owed


@pytest.mark.parametrize(("flags", "says"), [
    (["--beta", "0.04"], "--beta needs --model (the tiny model has no folder for TRL to build its reference from)"),
    (["--model", "smollm2-135m", "--beta", "-1"], "--beta must be 0 or more, got -1.0"),
    (["--train-layers", "2"], "--train-layers needs --model (the tiny model is trained whole)"),
    (["--model", "smollm2-135m", "--train-layers", "-1"], "--train-layers must be 0 or more, got -1"),
    (["--model", "smollm2-135m", "--first-arguments", "priority"],
     "--first-arguments needs --model and --warm-start (it orders the demonstrations' calls)"),
])
def test_grpo_train_refuses_a_kl_weight_it_cannot_use_before_anything_runs(flags: list[str], says: str) -> None:
    # The tiny model has no folder for TRL to build its reference from, and a negative weight rewards drift.
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "grpo_train.py"), *flags],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and done.stderr.strip().splitlines()[-1] == says


def test_train_layers_leaves_the_embeddings_and_the_lower_blocks_as_they_were() -> None:
    # --train-layers N: a real optimizer step moves the last N blocks and the final norm, nothing else.
    need("transformers")
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from grpo_train import freeze_below

    from csr_marl.grpo import tiny as build

    tokenizer = build.build_tokenizer(build.corpus([TASK], range(4)), vocab_size=512)
    model = build.build_model(tokenizer, hidden=32, layers=4)
    assert freeze_below(model, 1) == sum(p.numel() for p in [*model.model.layers[3].parameters(),
                                                              *model.model.norm.parameters()])
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    ids = torch.tensor([tokenizer.encode("check the order status")])
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    moved = {name.split(".")[2] if ".layers." in name else name.split(".")[-2]
             for name, p in model.named_parameters() if not torch.equal(before[name], p.detach())}
    assert moved == {"3", "norm"}, moved
    with pytest.raises(SystemExit, match="the model has 4 blocks"):
        freeze_below(model, 5)


def test_a_gpu_run_is_shown_beside_the_cpu_run_it_shares_a_warm_start_with() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from grpo_real import beside

    def run(task: str, loss: float) -> dict:
        return {"task": task, "warm_start": {"examples": 80, "closings": 40, "steps": 45, "loss_first": 1.0,
                                             "loss_last": loss}}

    page, probe, other = run("tasks/ticket_classify", 0.04), run("tasks/ticket_classify", 0.03), run("tasks/refund", 0.03)
    assert beside(run("tasks/ticket_classify", 0.03), [page, other, probe]) is probe
    assert beside(run("tasks/ticket_classify", 0.5), [page, other, probe]) is page  # no shared warm start
    assert beside(run("tasks/order_status", 0.03), [page, other, probe]) is None


def test_the_page_prints_each_run_with_the_flags_that_made_it() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from grpo_real import command

    settings = {"model": "smollm2-135m", "warm_start": 10, "lr": 2e-05, "follow_ups": "brief"}
    old = command("tasks/refund", settings)  # recorded before --prompts and --tool-format existed
    assert "--prompts" not in old and "--tool-format" not in old
    assert command("tasks/refund", {**settings, "prompts": 1, "tool_format": "schemas"}) == old
    new = command("tasks/refund", {**settings, "prompts": 2, "tool_format": "signatures"})
    assert "--prompts 2" in new and "--tool-format signatures" in new
    assert all(len(line) <= 90 for line in new.splitlines())
