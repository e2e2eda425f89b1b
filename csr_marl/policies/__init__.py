"""Built-in policies: ``random``, ``heuristic`` (``heuristic_full``: its reference with the held-out tickets
known) and contrasting baselines (``fifo``, ``escalate_all``)."""

from .base import Policy, RandomPolicy, make_policy, policy_names, register
from .heuristic import EscalateAllPolicy, FifoPolicy, FullKnowledgeHeuristic, HeuristicPolicy, KnowledgeBase

__all__ = [
    "EscalateAllPolicy",
    "FifoPolicy",
    "FullKnowledgeHeuristic",
    "HeuristicPolicy",
    "KnowledgeBase",
    "Policy",
    "RandomPolicy",
    "make_policy",
    "policy_names",
    "register",
]
