"""A local chat model answering OpenAI-style chat requests in this process (CPU, float32).

    from csr_marl.llm.local import LocalChatModel
    model = LocalChatModel.load("smollm2-135m")          # fetched once (csr_marl.llm.models)
    reply = model.chat(messages=[...], tools=[...], tool_choice="required", max_tokens=96)
    reply["choices"][0]["message"]["tool_calls"]

The prompt is rendered with :data:`csr_marl.llm.chat_format.CHAT_TEMPLATE` and the reply read with
:func:`~csr_marl.llm.chat_format.parse_assistant`, so the calls come back in the OpenAI shape
(arguments as a JSON string). ``tool_choice="required"`` (or naming a function) starts the
assistant's turn with ``<tool_call>[`` so that the model can only continue with a call; ``"auto"``
leaves the turn to the model. :mod:`csr_marl.llm.server` serves this over HTTP.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .chat_format import CHAT_TEMPLATE, OPEN, parse_assistant
from .models import MODELS, fetch, require_local_extra

DEFAULT_MAX_TOKENS = 128


@dataclass
class Usage:
    """Tokens and seconds spent so far (all requests)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    generate_s: float = 0.0

    @property
    def tokens_per_s(self) -> float:
        """Completion tokens per second of generation."""
        return self.completion_tokens / self.generate_s if self.generate_s > 0 else 0.0


class LocalChatModel:
    """A causal LM and its tokenizer, with the tool-calling chat format; one request at a time."""

    def __init__(self, model: Any, tokenizer: Any, name: str) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.usage = Usage()
        self._lock = threading.Lock()

    @classmethod
    def load(cls, name_or_path: str, *, threads: int | None = None) -> "LocalChatModel":
        """A model by name (fetched and converted on first use) or from a transformers folder."""
        require_local_extra()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads is not None:
            torch.set_num_threads(threads)
        path = fetch(name_or_path) if name_or_path in MODELS else Path(name_or_path)
        if not (Path(path) / "config.json").is_file():
            raise ValueError(f"{name_or_path}: not a known model ({', '.join(MODELS)}) nor a transformers folder")
        tokenizer = AutoTokenizer.from_pretrained(path)
        tokenizer.chat_template = CHAT_TEMPLATE
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        model.eval()
        return cls(model, tokenizer, name_or_path if name_or_path in MODELS else Path(path).name)

    def prompt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, force_call: bool = False) -> str:
        """The rendered prompt, ending with the assistant's header (and ``<tool_call>[`` when forced)."""
        text = self.tokenizer.apply_chat_template(messages, tools=tools or None, add_generation_prompt=True, tokenize=False)
        return text + OPEN + "[" if force_call else text

    def generate(
        self, prompt: str, *, max_tokens: int = DEFAULT_MAX_TOKENS, temperature: float = 0.0, seed: int | None = None
    ) -> tuple[str, int, int, bool]:
        """Sample a continuation of ``prompt``: ``(text, prompt tokens, completion tokens, cut at max_tokens)``."""
        import torch

        ids = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        options: dict[str, Any] = {"max_new_tokens": max_tokens, "pad_token_id": self.tokenizer.pad_token_id
                                   if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id,
                                   "eos_token_id": self.tokenizer.eos_token_id}
        if temperature > 0:
            options.update(do_sample=True, temperature=temperature, top_k=0, top_p=1.0)
        else:
            options.update(do_sample=False, temperature=None, top_k=None, top_p=None)
        with self._lock:
            if seed is not None:
                torch.manual_seed(int(seed) % (2**63))
            started = time.perf_counter()
            with torch.no_grad():
                out = self.model.generate(**ids, **options)
            spent = time.perf_counter() - started
            new = out[0, ids["input_ids"].shape[1]:].tolist()
            self.usage.requests += 1
            self.usage.prompt_tokens += ids["input_ids"].shape[1]
            self.usage.completion_tokens += len(new)
            self.usage.generate_s += spent
        finished = bool(new) and new[-1] == self.tokenizer.eos_token_id
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return text, int(ids["input_ids"].shape[1]), len(new), not finished

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        tool_choice: Any = "auto",
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> dict[str, Any]:
        """One chat completion, as the OpenAI API shapes it (a ``dict`` ready for JSON)."""
        if tool_choice == "none":
            tools = None
        force = bool(tools) and (tool_choice == "required" or isinstance(tool_choice, dict))
        prompt = self.prompt(messages, tools, force_call=force)
        text, prompt_tokens, completion_tokens, cut = self.generate(
            prompt, max_tokens=max_tokens or DEFAULT_MAX_TOKENS, temperature=temperature or 0.0, seed=seed,
        )
        reply = (OPEN + "[" + text) if force else text
        message = parse_assistant(reply) if tools else {"role": "assistant", "content": text.strip()}
        calls = [
            {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
             "function": {"name": c["function"]["name"], "arguments": json.dumps(c["function"]["arguments"])}}
            for c in message.get("tool_calls", [])
        ]
        out_message: dict[str, Any] = {"role": "assistant", "content": message["content"] or None}
        if calls:
            out_message["tool_calls"] = calls
        finish = "tool_calls" if calls else ("length" if cut else "stop")
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "object": "chat.completion", "created": int(time.time()),
            "model": self.name,
            "choices": [{"index": 0, "message": out_message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }
