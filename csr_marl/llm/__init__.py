"""A small language model on this machine: fetch it (:mod:`.models`), talk to it in SmolLM2's
tool-calling chat format (:mod:`.chat_format`), run it in process (:mod:`.local`) or serve it as an
OpenAI-compatible endpoint on localhost (:mod:`.server`). The model needs the ``local`` and ``grpo``
extras (gguf, torch, transformers), imported on first use."""
