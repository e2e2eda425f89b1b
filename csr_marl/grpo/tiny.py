"""A tiny chat model built locally, for tests and CPU runs of the GRPO loop (no downloads).

* :func:`build_tokenizer` trains a byte-level BPE tokenizer (the ``tokenizers`` library) on the
  tasks' first decisions, the tools' schemas and the system prompt, with merges across spaces so
  the repeated scaffolding becomes a few long tokens (short prompts for a small model), the chat
  special tokens of the Qwen2.5 chat format and TRL's copy of that chat template, so TRL parses
  tool calls from it.
* :func:`build_model` is a randomly initialised ``LlamaForCausalLM`` of a given size.
* :func:`warm_start` teaches the model the shape of a tool call (a few steps of supervised
  next-token training on scripted first calls), so a GRPO group's rollouts differ and the
  advantages are not all zero; it does not teach customer service.

These show that the loop runs and changes the weights; a model this small does not learn the job.
A real run starts from a pretrained instruct model (``docs/llm/grpo.md``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import SYSTEM_PROMPT, require_grpo_extra

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
                  "<tool_response>", "</tool_response>"]
SCAFFOLD_REPEATS = 50


def chat_template() -> str:
    """TRL's copy of the Qwen2.5 chat template (TRL recognises it and parses its tool calls)."""
    require_grpo_extra()
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text(encoding="utf-8")


def corpus(tasks: Iterable[str], seeds: Iterable[int]) -> list[str]:
    """Text to train the tokenizer on: each task's first decisions for ``seeds``, its tools' schemas
    and the system prompt."""
    from transformers.utils import get_json_schema

    from .environment import environment_factory

    texts = []
    for task in tasks:
        env = environment_factory(task)()
        schemas = [json.dumps(get_json_schema(getattr(env, name))) for name in _tool_names(env)]
        # Every prompt repeats the schemas and the system prompt: weighting them as often lets BPE merge
        # them into long tokens, which keeps prompts short for a small model.
        calls = [f'<tool_call>\n{{"name": "{name}", "arguments": {{}}}}\n</tool_call>' for name in _tool_names(env)]
        texts += ([SYSTEM_PROMPT] + schemas + calls) * SCAFFOLD_REPEATS
        texts += [env.reset(task=task, seed=seed) for seed in seeds]
    return texts


def build_tokenizer(texts: list[str], vocab_size: int = 1024) -> Any:
    """A byte-level BPE tokenizer trained on ``texts``, wrapped for ``transformers``, with the chat
    template and left padding (as TRL wants)."""
    require_grpo_extra()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    core.train_from_iterator(texts, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left",
    )
    tokenizer.chat_template = chat_template()
    return tokenizer


def build_model(tokenizer: Any, hidden: int = 32, layers: int = 2, heads: int = 2, context: int = 4096, seed: int = 0) -> Any:
    """A randomly initialised Llama of the given size for ``tokenizer``'s vocabulary."""
    require_grpo_extra()
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=context,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None,
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(config)


def warm_start(model: Any, tokenizer: Any, examples: list[tuple[list[dict], list[dict], dict | str]],
               steps: int = 60, lr: float = 1e-2, batch_size: int | None = None, seed: int = 0) -> list[float]:
    """Supervised steps on ``(messages, tools, tool_call)`` examples: the model learns to answer a
    prompt with the tool call (loss on the assistant's tokens only, its end-of-turn token included);
    a ``str`` in place of the call is a plain reply to learn. Each step takes every example, or
    ``batch_size`` of them drawn at random (a real model's long prompts). Returns the losses."""
    require_grpo_extra()
    import torch

    rows = []
    for messages, tools, call in examples:
        prompt = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
        turn = ({"role": "assistant", "content": call} if isinstance(call, str) else
                {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]})
        answer = tokenizer.apply_chat_template(messages + [turn], tools=tools, tokenize=False)
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        ids = tokenizer(answer.rstrip("\n"), add_special_tokens=False)["input_ids"]
        rows.append((ids, [-100] * len(prompt_ids) + ids[len(prompt_ids):]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    draw = torch.Generator().manual_seed(seed)
    model.train()
    losses = []
    for _ in range(steps):
        chosen = rows if batch_size is None else [rows[int(i)] for i in torch.randperm(len(rows), generator=draw)[:batch_size]]
        input_ids, labels, mask = (t.to(model.device) for t in _left_padded(chosen, tokenizer.pad_token_id))
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        loss = model(input_ids=input_ids, attention_mask=mask, position_ids=positions, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def _left_padded(rows: list[tuple[list[int], list[int]]], pad: int) -> tuple[Any, Any, Any]:
    """One left-padded batch (as generation sees prompts): input ids, labels, attention mask."""
    import torch

    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids, _ in rows])
    labels = torch.tensor([[-100] * (width - len(ids)) + lab for ids, lab in rows])
    mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids, _ in rows])
    return input_ids, labels, mask


FREE_TEXT = ("message", "reason", "question")  # the tools' arguments that carry a message, not a label or an id


def first_calls(
    task: str, seeds: Iterable[int], agents: tuple[str, ...] = ("careful", "spam")
) -> list[tuple[list[dict], list[dict], dict]]:
    """Warm-start examples: each scripted agent's first call on each seed's first decision of ``task``,
    with the prompt and tools the GRPO environment shows. Calls that carry text (a reply, a reason)
    are left out, so the examples teach the shape of a call, not a message; with a careful and a
    careless agent the model starts as a mixture of the two, which a GRPO group can tell apart. A
    triage's labels (category, priority, route) are not text and stay in."""
    from transformers.utils import get_json_schema

    from ..text.scripted import first_call
    from ..text.tasks import task_session
    from .environment import environment_factory

    env = environment_factory(task)()
    tools = [get_json_schema(getattr(env, name)) for name in _tool_names(env)]
    session = task_session(task)
    examples = []
    for seed in seeds:
        for agent in agents:
            turn = session.reset(seed=seed)
            name, arguments = first_call(session, agent, seed)
            if any(key in FREE_TEXT for key in arguments):
                continue
            messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": turn.text}]
            examples.append((messages, tools, {"name": name, "arguments": arguments}))
    return examples


def _tool_names(env: Any) -> list[str]:
    import inspect

    return [
        name for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    ]
