"""Scripted demonstrations in the GRPO conversation format, for a supervised warm start, and a
greedy evaluation of a model in that same format.

:func:`demonstrations` plays a scripted agent (``careful`` by default, :mod:`csr_marl.text.scripted`)
on training seeds and replays its calls through the ``environment_factory`` environment, so each
example is exactly what TRL shows the model during GRPO: the system prompt, the first decision, then
the assistant's earlier calls and the tools' results, and the call to learn. :func:`evaluate` plays a
model on held-out seeds the same way (the tools' schemas from the environment, calls read with the
tokenizer's chat format) and returns the episode scores. Both take the ``split`` of the ticket bank
the customers come from (``train`` for the demonstrations and ``test`` for the evaluation: templates
and wordings the model never saw; ``all``, the default, the whole bank).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from typing import Any

from . import SYSTEM_PROMPT
from .backends import split_overrides
from .environment import environment_factory

Example = tuple[list[dict[str, Any]], list[dict[str, Any]], "dict[str, Any] | str"]
# What the assistant says once the episode is over: a short turn that ends the rollout. Without it a
# warm-started model never learned to stop after its last call, and GRPO's rollouts ran on to the
# token cap (tokens that cost time and enter the loss).
CLOSING = "Done."


def tool_schemas(env: Any) -> list[dict[str, Any]]:
    """The JSON schemas of the environment's tools, as TRL builds them from the methods."""
    from transformers.utils import get_json_schema

    return [get_json_schema(getattr(env, name)) for name in tool_names(env)]


def tool_names(env: Any) -> list[str]:
    """The environment's tools: its public methods but ``reset`` and ``get_reward``."""
    return [
        name for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    ]


def demonstrations(task: str, seeds: Iterable[int], agent: str = "careful", max_calls: int = 12,
                   closing: str | None = CLOSING, first: Sequence[str] = (),
                   follow_ups: str = "full", split: str = "all") -> list[Example]:
    """``(messages, tools, call)`` examples: every call ``agent`` makes on ``task`` for ``seeds``, each
    with the conversation before it; then, where the calls ended the episode, ``(messages, tools,
    closing)``: the plain reply that ends the turn after the last tool result (None: no such example).

    ``first`` names arguments a call writes before the others, in that order (the model writes its
    calls' arguments in the order it was shown). A token's context is everything written before it, so
    the argument written first is the one whose tokens a GRPO group's rollouts share when they agree on
    it: with a per-token loss their opposite advantages then cancel on it exactly, where an argument
    written after one the rollouts disagree on is pushed up or down with that other argument's credit.

    ``split``: the side of the ticket bank's held-out split the customers come from."""
    from ..text.scripted import play
    from ..text.tasks import task_session

    env = environment_factory(task, max_calls=max_calls, follow_ups=follow_ups, split=split)()
    tools = tool_schemas(env)
    session = task_session(task, overrides=split_overrides(split))
    examples: list[Example] = []
    for seed in seeds:
        calls: list[tuple[str, dict[str, Any]]] = []
        play(session, agent, int(seed), max_calls=max_calls, record=calls)
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": env.reset(task=task, seed=int(seed))}]
        for name, arguments in calls:
            call = {"name": name, "arguments": _ordered(arguments, first)}
            examples.append(([dict(m) for m in messages], tools, call))
            result = getattr(env, name)(**arguments)
            messages += [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]},
                         {"role": "tool", "name": name, "content": result}]
        if closing is not None and calls and env.episode_over:
            examples.append(([dict(m) for m in messages], tools, closing))
    return examples


def completion_tokens(examples: Sequence[Example], tokenizer: Any) -> list[int]:
    """Per demonstrated episode that ended in a closing reply: the tokens after its prompt up to and
    including its last call (calls and tool results), as TRL counts a rollout against
    ``max_completion_length``. TRL drops a tool result that would pass the cap and ends the rollout
    there, silently; a cap below these ends the careful agent's own episodes before their last call."""
    out = []
    last_call = None
    for example in examples:
        if not isinstance(example[2], str):
            last_call = example
            continue
        if last_call is None:
            continue
        before, tools, call = last_call
        turn = {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]}
        prompt = tokenizer.apply_chat_template(before[:2], tools=tools, add_generation_prompt=True, tokenize=False)
        whole = tokenizer.apply_chat_template(before + [turn], tools=tools, tokenize=False)
        out.append(len(tokenizer(whole, add_special_tokens=False)["input_ids"])
                   - len(tokenizer(prompt, add_special_tokens=False)["input_ids"]))
        last_call = None
    return out


def _ordered(arguments: dict[str, Any], first: Sequence[str]) -> dict[str, Any]:
    """``arguments`` with the names in ``first`` (those present) leading, in that order."""
    leading = {name: arguments[name] for name in first if name in arguments}
    return {**leading, **{name: value for name, value in arguments.items() if name not in leading}}


def evaluate(model: Any, tokenizer: Any, task: str, seeds: Iterable[int], *, max_calls: int = 4,
             max_new_tokens: int = 64, follow_ups: str = "full", split: str = "all") -> list[float]:
    """Greedy episodes of ``model`` on ``task`` for ``seeds`` in the GRPO conversation format; their scores.
    The tokenizer's ``parse_response`` reads the calls (``csr_marl.llm.chat_format.attach_parser``)."""
    return [e["score"] for e in episodes(model, tokenizer, task, seeds, max_calls=max_calls,
                                         max_new_tokens=max_new_tokens, follow_ups=follow_ups, split=split)]


def episodes(model: Any, tokenizer: Any, task: str, seeds: Iterable[int], *, max_calls: int = 4,
             max_new_tokens: int = 64, follow_ups: str = "full", split: str = "all") -> list[dict[str, Any]]:
    """:func:`evaluate`, with what each episode's score is made of, so a gain can be checked as work:
    ``score``; ``calls`` (the tools named, in order) and ``replies``/``parsed`` (replies made, and those
    that held a call); per ticket the triage ``checks`` (category, priority, route credit), the work
    ``steps`` done right, the judge's ``reply`` grade of the caller's own closing reply (0-0.5; None: no
    reply of the caller's), ``collateral`` (damaging calls: refunds not owed, needless specialist work),
    the ticket's ``grade`` (-1 after damage; a ticket shown and never called on: ``acted`` False, grade
    0), its ``template`` and what its case needed of the model
    (``needs``, ``needs_done``, ``actions``, ``unneeded``: :func:`csr_marl.grpo.cases.case_actions`).
    ``split``: the side of the ticket bank's held-out split the customers come from."""
    import torch

    env = environment_factory(task, max_calls=max_calls, follow_ups=follow_ups, split=split)()
    tools = tool_schemas(env)
    names = tool_names(env)
    out = []
    model.eval()
    for seed in seeds:
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                          {"role": "user", "content": env.reset(task=task, seed=int(seed))}]
        called, replies, parsed = [], 0, 0
        for _ in range(max_calls):
            ids = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, return_tensors="pt",
                                                return_dict=True).to(getattr(model, "device", "cpu"))
            with torch.no_grad():
                generated = model.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False,
                                           pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
            reply = tokenizer.parse_response(generated[0, ids["input_ids"].shape[1]:].tolist())
            replies += 1
            calls = reply.get("tool_calls") or []
            if not calls:
                break
            parsed += 1
            function = calls[0]["function"]
            called.append(str(function["name"]))
            method = getattr(env, function["name"], None) if function["name"] in names else None
            arguments = function.get("arguments") if isinstance(function.get("arguments"), dict) else {}
            try:
                result = method(**arguments) if method else f"Refused: no tool named {function['name']!r}"
            except TypeError as error:
                result = f"Refused: {error}"
            messages += [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": function}]},
                         {"role": "tool", "name": function["name"], "content": result}]
            if env.episode_over:
                break
        score = env.get_reward()
        out.append({"seed": int(seed), "score": score, "calls": called, "replies": replies, "parsed": parsed,
                    "tickets": env.score_breakdown})
    return out
