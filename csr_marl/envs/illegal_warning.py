"""The warning for a policy that acts illegally: it names the user's line, whichever layers it came through.

Kept as Python in the compiled build (tools/csr_marl_build.py compiles the driver that judges the
episode): a compiled function has no frame, so the frames this module walks are the interpreted ones
either way, and a warning category cannot be a compiled class.
"""

from __future__ import annotations

import math
import os
import sys
import warnings

import gymnasium.core
import gymnasium.wrappers
import pettingzoo.utils.conversions
import pettingzoo.utils.wrappers

# The rule (docs/envs/illegal-actions.md): at each of its illegal actions an agent is judged on its
# decisions since its count was last cleared, by a one-sided binomial test against a policy that acts
# illegally on ILLEGAL_WARN_SHARE of its decisions, at level ILLEGAL_WARN_LEVEL; the count carries over
# episodes and is cleared every ILLEGAL_WARN_WINDOW decisions.
ILLEGAL_WARN_SHARE = 0.05  # the rate tested against: a policy illegal this often is warned only by chance
ILLEGAL_WARN_LEVEL = 0.001  # warned when k or more illegal of n decisions are less likely than this at that rate
ILLEGAL_WARN_WINDOW = 100  # decisions judged together at most (then the count starts again)
MASKING_FIXES = (
    "Routes tested to reach 0 illegal actions: Stable-Baselines3: sb3-contrib's MaskablePPO, which "
    "reads action_masks() (the Gymnasium tasks and csr_marl.envs.vector.TaskVectorEnv have it); "
    "RLlib: csr_marl.envs.rllib.RLlibEnv with mask_in_observation=True and RLlib's "
    "ActionMaskingTorchRLModule; Tianshou: csr_marl.train.TianshouEnv, which passes "
    "info['action_mask'] to the policy; TorchRL: csr_marl.envs.torchrl.TorchRLEnv with a "
    "MaskedCategorical actor over its action_mask (random collection: its MaskedRandomPolicy, not "
    "policy=None)"
)


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p): summed from k up, each term from the one before."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    term = math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                    + k * math.log(p) + (n - k) * math.log1p(-p))
    total = term
    for i in range(k, n):
        term *= (n - i) / (i + 1) * p / (1 - p)
        total += term
        if term < total * 1e-16:
            break
    return min(total, 1.0)


def illegal_beyond_rate(illegal: int, decided: int) -> bool:
    """Whether ``illegal`` illegal actions of ``decided`` decisions say the policy is not reading the
    mask: that many or more would have a chance below :data:`ILLEGAL_WARN_LEVEL` for a policy illegal
    on :data:`ILLEGAL_WARN_SHARE` of its decisions. Three of three are enough."""
    return illegal > ILLEGAL_WARN_SHARE * decided and binomial_tail(illegal, decided, ILLEGAL_WARN_SHARE) < ILLEGAL_WARN_LEVEL


class IllegalActionWarning(UserWarning):
    """Many of an agent's actions were illegal: its policy is probably not reading the mask."""


def warn_illegal(offender: str) -> None:
    """The warning naming the first agent found ("agent share (illegal of decisions)"), at the user's line."""
    warnings.warn(
        f"illegal actions: {offender}. Each costs rewards.illegal_action and is "
        f"replaced by a random legal action: the policy is probably not using the action mask "
        f"(info['action_mask']). {MASKING_FIXES}. An environment warns once, for the first agent "
        f"found; the KPIs illegal_actions and illegal_action_share count every agent's.",
        IllegalActionWarning,
        stacklevel=_callers_level(),
    )


# Frames of the environment itself, between a user's step() or reset() and the warning: this package's,
# and those of the wrappers that csr_marl.env() (PettingZoo's) and gymnasium.make() put around it.
_OWN_FRAMES = (
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # csr_marl/
    os.path.dirname(os.path.abspath(pettingzoo.utils.wrappers.__file__)) + os.sep,  # what csr_marl.env() adds
    os.path.abspath(pettingzoo.utils.conversions.__file__),  # cyclic AEC turns (max_cycles): parallel_to_aec
    os.path.dirname(os.path.abspath(gymnasium.wrappers.__file__)) + os.sep,  # what gymnasium.make() adds
    os.path.abspath(gymnasium.core.__file__),  # gymnasium.Wrapper's own step and reset
)


def _callers_level() -> int:
    """The ``stacklevel`` of the first frame outside the environment (the user's line), for a
    ``warnings.warn`` in the function that calls this one: whichever of the package's own layers
    (``env()``'s checks, ``RLlibEnv``, the parallel API) the step came through. Compiled functions
    (the driver's, in the compiled build) have no frame: neither this walk nor ``warnings`` counts them."""
    frame, level = sys._getframe(2), 2  # level 1 is the function that warns
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_OWN_FRAMES):
        frame, level = frame.f_back, level + 1
    return level
