"""The warning for a policy that acts illegally: it names the user's line, whichever layers it came through.

Kept as Python in the compiled build (tools/csr_marl_build.py compiles the driver that judges the
episode): a compiled function has no frame, so the frames this module walks are the interpreted ones
either way, and a warning category cannot be a compiled class.
"""

from __future__ import annotations

import os
import sys
import warnings

import gymnasium.core
import gymnasium.wrappers
import pettingzoo.utils.wrappers

ILLEGAL_WARN_SHARE = 0.05  # an agent with more illegal actions than this share of its decisions warns
ILLEGAL_WARN_MIN_DECISIONS = 20  # ... judged once it has this many decisions (pooled over short episodes)
MASKING_FIXES = (
    "Routes tested to reach 0 illegal actions: Stable-Baselines3: sb3-contrib's MaskablePPO, which "
    "reads action_masks() (the Gymnasium tasks and csr_marl.envs.vector.TaskVectorEnv have it); "
    "RLlib: csr_marl.envs.rllib.RLlibEnv with mask_in_observation=True and RLlib's "
    "ActionMaskingTorchRLModule; Tianshou: csr_marl.train.TianshouEnv, which passes "
    "info['action_mask'] to the policy; TorchRL: csr_marl.envs.torchrl.TorchRLEnv with a "
    "MaskedCategorical actor over its action_mask (random collection: its MaskedRandomPolicy, not "
    "policy=None)"
)


class IllegalActionWarning(UserWarning):
    """Many of an agent's actions were illegal: its policy is probably not reading the mask."""


def warn_illegal(offenders: list[str]) -> None:
    """One warning naming every offender ("agent share (illegal of decisions)"), at the user's line."""
    warnings.warn(
        f"illegal actions: {'; '.join(offenders)}. Each costs rewards.illegal_action and is "
        f"replaced by a random legal action: the policy is probably not using the action mask "
        f"(info['action_mask']). {MASKING_FIXES}. Each agent is warned once per environment.",
        IllegalActionWarning,
        stacklevel=_callers_level(),
    )


# Frames of the environment itself, between a user's step() or reset() and the warning: this package's,
# and those of the wrappers that csr_marl.env() (PettingZoo's) and gymnasium.make() put around it.
_OWN_FRAMES = (
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # csr_marl/
    os.path.dirname(os.path.abspath(pettingzoo.utils.wrappers.__file__)) + os.sep,  # what csr_marl.env() adds
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
