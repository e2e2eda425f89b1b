"""TRL's ``rollout_func`` path: the caller runs each rollout, generation included.

    from csr_marl.grpo.rollout import episode_reward, make_rollout_func, rollout_dataset
    trainer = GRPOTrainer(model=..., processing_class=tokenizer, reward_funcs=[episode_reward],
                          args=GRPOConfig(num_generations=4, ...),
                          train_dataset=rollout_dataset("tasks/one_ticket", seeds=range(64)),
                          rollout_func=make_rollout_func("tasks/one_ticket", base_url="http://127.0.0.1:8000"))

TRL passes ``rollout_func`` the prompts only (no other dataset columns), so each row's prompt ends
with a marker naming its seed (:func:`rollout_dataset`); the rollout swaps the marker for the
episode's first decision before the model sees anything. TRL's sampler repeats each row
``num_generations`` times, so a group plays one customer. For each prompt the trainer's model generates, a tool call is parsed with TRL's parser
and sent to the environment (in process, or over the OpenEnv client with ``base_url``), the tool's
result is appended (masked out of the loss by ``env_mask``), until the model stops calling tools,
the rollout reaches ``max_completion_length`` or the call limit. The episode score comes back as the
``episode_score`` column, which :func:`episode_reward` returns as the reward.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable
from typing import Any

from . import SYSTEM_PROMPT, require_grpo_extra
from .environment import ContactCenterToolEnv, environment_factory

MARKER = "csr_marl episode seed="
_SEED = re.compile(re.escape(MARKER) + r"(\d+)")
_PARSERS: dict[int, Any] = {}  # tokenizer id -> a copy that parses tool calls


def rollout_dataset(task: str, seeds: Any, system_prompt: str = SYSTEM_PROMPT) -> Any:
    """Rows ``{prompt}`` whose user message is the seed marker (replaced by the first decision)."""
    require_grpo_extra()
    from datasets import Dataset

    prompts = [[{"role": "system", "content": system_prompt}, {"role": "user", "content": f"{MARKER}{int(s)}"}]
               for s in seeds]
    return Dataset.from_dict({"prompt": prompts, "task": [task] * len(prompts)})


def episode_reward(completions: list[Any], episode_score: list[float], **_: Any) -> list[float]:
    """A TRL reward function: the episode score each rollout reported."""
    return [float(score) for score in episode_score]


def make_rollout_func(
    task: str, *, base_url: str | None = None, max_calls: int = 12, max_new_tokens: int = 256
) -> Callable[[list[Any], Any], dict[str, list[Any]]]:
    """A ``rollout_func`` playing ``task`` in process, or on a ``csr-marl serve`` at ``base_url``."""
    make_env = environment_factory(task, base_url=base_url, max_calls=max_calls)
    environments: list[ContactCenterToolEnv] = []  # reused across steps, one per rollout slot

    def rollout(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        # TRL's sampler already repeats each row num_generations times: one rollout per prompt given.
        require_grpo_extra()
        while len(environments) < len(prompts):
            environments.append(make_env())
        out: dict[str, list[Any]] = {k: [] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "episode_score")}
        for env, prompt in zip(environments, prompts):
            for key, value in _play(env, prompt, _seed_of(prompt), trainer, max_new_tokens).items():
                out[key].append(value)
        return out

    return rollout


def _seed_of(prompt: Any) -> int:
    text = prompt[-1]["content"] if isinstance(prompt, list) else str(prompt)
    found = _SEED.search(text if isinstance(text, str) else str(text))
    if found is None:
        raise ValueError(f"rollout prompt has no '{MARKER}N' marker: build the dataset with rollout_dataset()")
    return int(found.group(1))


def _play(env: ContactCenterToolEnv, prompt: list[dict], seed: int, trainer: Any, max_new_tokens: int) -> dict[str, Any]:
    """One rollout: the tokens the model produced and the tool results between them."""
    from transformers.utils import get_json_schema
    from trl.chat_template_utils import add_response_schema, parse_response

    tokenizer = trainer.processing_class
    parser = _PARSERS.get(id(tokenizer))
    if parser is None:
        # A copy with TRL's response parser for the chat template: setting it on the trainer's own
        # tokenizer would make TRL parse the returned completions per prompt, which rollout_func breaks.
        parser = _PARSERS[id(tokenizer)] = copy.copy(tokenizer)
        if getattr(parser, "response_template", None) is None and getattr(parser, "response_schema", None) is None:
            add_response_schema(parser)
    tools = {name: method for name, method in _tools(env)}
    schemas = [get_json_schema(method) for method in tools.values()]
    first = env.reset(seed=seed)
    messages = [*prompt[:-1], {"role": "user", "content": _SEED.sub("", prompt[-1]["content"]).strip() + first}]
    prompt_ids = _ids(tokenizer.apply_chat_template(messages, tools=schemas, add_generation_prompt=True, tokenize=True))
    completion: list[int] = []
    mask: list[int] = []
    logprobs: list[float] = []
    budget = trainer.max_completion_length
    while len(completion) < budget:
        generated, scores = _generate(trainer, prompt_ids + completion, min(max_new_tokens, budget - len(completion)))
        completion += generated
        mask += [1] * len(generated)
        logprobs += scores
        if not generated or generated[-1] != tokenizer.eos_token_id:
            break  # cut short: no complete call to run
        calls = parse_response(parser, generated, prefix=prompt_ids + completion[: -len(generated)], tools=schemas)
        calls = calls.get("tool_calls") or []
        if not calls:
            break  # the model answered without a tool: the rollout is over
        function = calls[0]["function"]
        method = tools.get(function["name"])
        arguments = function.get("arguments") or {}
        try:
            result = method(**arguments) if method is not None else f"Refused: no tool named {function['name']!r}"
        except TypeError as exc:  # wrong argument names: the session never sees the call
            result = f"Refused: {exc}"
        suffix = _tool_suffix(tokenizer, function["name"], result)
        suffix = suffix[: max(0, budget - len(completion))]
        completion += suffix
        mask += [0] * len(suffix)
        logprobs += [0.0] * len(suffix)
    return {"prompt_ids": prompt_ids, "completion_ids": completion, "logprobs": logprobs, "env_mask": mask,
            "episode_score": env.get_reward()}


def _generate(trainer: Any, ids: list[int], max_new_tokens: int) -> tuple[list[int], list[float]]:
    import torch

    from transformers import GenerationConfig

    model = trainer.accelerator.unwrap_model(trainer.model)
    tokenizer = trainer.processing_class
    # Sample as TRL does: eval mode (the trainer leaves the model training, with activation
    # checkpointing that turns the KV cache off) and a generation config of its own.
    config = GenerationConfig(
        max_new_tokens=max_new_tokens, do_sample=True, temperature=trainer.temperature, top_p=1.0, top_k=0,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, use_cache=True,
    )
    training = model.training
    model.eval()
    try:
        with torch.no_grad():
            output = model.generate(
                torch.tensor([ids], device=model.device),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=model.device),
                generation_config=config, output_scores=True, return_dict_in_generate=True,
            )
    finally:
        model.train(training)
    generated = output.sequences[0, len(ids):].tolist()
    scores = [float(torch.log_softmax(step[0].float(), -1)[token]) for step, token in zip(output.scores, generated)]
    return generated, scores


def _tool_suffix(tokenizer: Any, name: str, result: str) -> list[int]:
    """The tokens the chat template puts after an assistant's tool call: the tool's result and the
    next assistant header (worked out on a two-message conversation, as TRL does)."""
    call = [{"type": "function", "function": {"name": name, "arguments": {}}}]
    base = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": call}]
    before = _ids(tokenizer.apply_chat_template(base, tokenize=True))
    after = _ids(tokenizer.apply_chat_template(
        base + [{"role": "tool", "name": name, "content": result}], add_generation_prompt=True, tokenize=True,
    ))
    # The generated call ends with the end-of-turn token; the template's rendering of it may add a newline.
    end = max(i for i, token in enumerate(before) if token == tokenizer.eos_token_id) + 1
    return after[end:]


def _ids(encoded: Any) -> list[int]:
    ids = encoded["input_ids"] if hasattr(encoded, "keys") else encoded
    return list(ids[0] if ids and isinstance(ids[0], list) else ids)


def _tools(env: ContactCenterToolEnv) -> list[tuple[str, Any]]:
    return [
        (name, getattr(env, name)) for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    ]
