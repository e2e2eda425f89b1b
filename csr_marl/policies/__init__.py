"""Built-in policies: ``random``, ``heuristic`` (``heuristic_full``: its reference with the held-out tickets
known) contrasting baselines (``fifo``, ``escalate_all``), the shortcut teams of
:mod:`csr_marl.policies.shortcuts` and the non-RL baselines of
:mod:`csr_marl.policies.baselines` (``declared_labels``, ``text_classifier``)."""

from .base import Policy, RandomPolicy, make_policy, policy_names, register
from .baselines import DeclaredLabelsPolicy, TextClassifierPolicy
from .heuristic import EscalateAllPolicy, FifoPolicy, FullKnowledgeHeuristic, HeuristicPolicy, KnowledgeBase
from .shortcuts import SHORTCUTS

__all__ = [
    "DeclaredLabelsPolicy",
    "TextClassifierPolicy",
    "EscalateAllPolicy",
    "FifoPolicy",
    "FullKnowledgeHeuristic",
    "HeuristicPolicy",
    "KnowledgeBase",
    "Policy",
    "RandomPolicy",
    "SHORTCUTS",
    "make_policy",
    "policy_names",
    "register",
]
