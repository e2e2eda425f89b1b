"""Built-in policies: ``random``, ``heuristic`` and contrasting baselines (``fifo``, ``escalate_all``)."""

from .base import Policy, RandomPolicy, make_policy, policy_names, register
from .heuristic import EscalateAllPolicy, FifoPolicy, HeuristicPolicy, KnowledgeBase

__all__ = [
    "EscalateAllPolicy",
    "FifoPolicy",
    "HeuristicPolicy",
    "KnowledgeBase",
    "Policy",
    "RandomPolicy",
    "make_policy",
    "policy_names",
    "register",
]
