"""Service-time and patience distributions as small validated, declarative objects.

They only describe a distribution (family and parameters); the simulation core turns them into
samplers. Every family is parameterised by its mean in minutes so that overrides such as
``handle_times.tools.respond_user.mean_minutes`` work whatever the family.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Distribution(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @property
    def mean(self) -> float:  # pragma: no cover - every subclass overrides
        raise NotImplementedError


class _ByMean(_Distribution):
    mean_minutes: float = Field(gt=0)

    @property
    def mean(self) -> float:
        return self.mean_minutes


class _ByMeanAndCv(_ByMean):
    cv: float = Field(gt=0, description="coefficient of variation: std / mean")


class Exponential(_ByMean):
    """Memoryless durations: the M in M/M/c."""

    dist: Literal["exponential"]


class Lognormal(_ByMeanAndCv):
    """Right-skewed handle times, given by mean and coefficient of variation."""

    dist: Literal["lognormal"]

    @property
    def log_params(self) -> tuple[float, float]:
        """(mu, sigma) of the underlying normal."""
        sigma2 = math.log1p(self.cv**2)
        return math.log(self.mean_minutes) - sigma2 / 2.0, math.sqrt(sigma2)


class Gamma(_ByMeanAndCv):
    """Gamma durations by mean and cv (cv = 1 is exponential, cv < 1 Erlang-like)."""

    dist: Literal["gamma"]

    @property
    def shape_scale(self) -> tuple[float, float]:
        shape = 1.0 / self.cv**2
        return shape, self.mean_minutes / shape


class Deterministic(_ByMean):
    """A fixed duration."""

    dist: Literal["deterministic"]


class Empirical(_Distribution):
    """Resampling of observed durations (minutes), optionally weighted."""

    dist: Literal["empirical"]
    values: list[float] = Field(min_length=1)
    weights: list[float] | None = None

    @model_validator(mode="after")
    def _check(self) -> "Empirical":
        if any(v < 0 for v in self.values):
            raise ValueError(f"values must be >= 0, got {min(self.values)}")
        if self.weights is not None:
            if len(self.weights) != len(self.values):
                raise ValueError(
                    f"weights has {len(self.weights)} entries but values has {len(self.values)}"
                )
            if any(w < 0 for w in self.weights) or sum(self.weights) <= 0:
                raise ValueError("weights must be >= 0 and sum to more than 0")
        return self

    @property
    def probabilities(self) -> list[float]:
        if self.weights is None:
            return [1.0 / len(self.values)] * len(self.values)
        total = sum(self.weights)
        return [w / total for w in self.weights]

    @property
    def mean(self) -> float:
        return sum(v * p for v, p in zip(self.values, self.probabilities))


Distribution = Annotated[
    Union[Exponential, Lognormal, Gamma, Deterministic, Empirical],
    Field(discriminator="dist"),
]
