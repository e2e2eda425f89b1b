"""Sizes of the asv suite's runs."""

from __future__ import annotations

#: Arrivals per contender for the core's ratios: ciw's rate falls as a run grows, so the ratio's
#: size matters; 20,000 keeps a --quick run short (the scripts' own targets use 100,000).
ARRIVALS = 20_000
#: Agent-steps per contender for the environment's ratios (the script's default is 40,000).
AGENT_STEPS = 10_000
#: The first seed of the environment's episodes: new to the content caches, as in the script.
FRESH_SEED = 100_000
