"""The learning page's overflow rung (``benchmarks/overflow_routing.py``): the tuned classifier's team
whose triage sends resolver-bound tickets to the escalation desk only while resolvers are backed up and
the desk has room, and otherwise decides exactly as ``text_classifier``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from overflow_routing import TUNED, OverflowRouting  # noqa: E402

import csr_marl  # noqa: E402
from csr_marl.policies.baselines import TextClassifierOverflowPolicy, TextClassifierPolicy  # noqa: E402
from csr_marl.sim.decisions import decode_triage  # noqa: E402

pytestmark = pytest.mark.slow  # fits the tuned classifier (20,000 train tickets)
SHORT_DAY = {"horizon_minutes": 150, "tickets.split": "test"}


class Watched(OverflowRouting):
    """Records, for every triage decision it changed, the queues it saw."""

    def __init__(self, scenario, **settings) -> None:
        super().__init__(scenario, **settings)
        self.overflowed: list[tuple[int, int]] = []
        self.triaged = 0

    def __call__(self, decision) -> int:
        action = super().__call__(decision)
        if decision.role == "triage":
            self.triaged += 1
            plain = TextClassifierPolicy.triage(self.base, decision)  # the classifier's own routing
            if decode_triage(action)[2] != decode_triage(plain)[2]:
                queues = self.center.queues
                self.overflowed.append((len(queues["resolver"]), len(queues["escalation"])))
        return action


def test_overflow_that_never_triggers_plays_the_text_classifier_seed_for_seed() -> None:
    scenario = csr_marl.load_scenario("standard_day", SHORT_DAY)
    plain = csr_marl.simulate(scenario, policy="text_classifier", seed=3)
    never = csr_marl.simulate(scenario, policy=OverflowRouting(scenario, queue=10**9, desk=0), seed=3)
    assert never.team_return == plain.team_return and never.flow == plain.flow


def test_tickets_overflow_to_the_desk_only_while_resolvers_queue_and_the_desk_has_room() -> None:
    scenario = csr_marl.load_scenario("standard_day", SHORT_DAY)
    watched = Watched(scenario, **TUNED)
    result = csr_marl.simulate(scenario, policy=watched, seed=3)
    assert watched.overflowed, "a standard_day morning backs the resolvers up at least once"
    assert len(watched.overflowed) < watched.triaged  # not everything: only while they queue
    assert all(resolver > TUNED["queue"] and desk < TUNED["desk"] for resolver, desk in watched.overflowed)
    assert result.flow["arrived"] > 0 and result.team_return > 0


def test_the_registered_policy_overflows_at_the_thresholds_tuned_on_train_tickets() -> None:
    scenario = csr_marl.load_scenario("standard_day", SHORT_DAY)
    policy = TextClassifierOverflowPolicy(scenario)
    assert {"queue": policy.queue, "desk": policy.desk} == TUNED
    by_name = csr_marl.simulate(scenario, policy="text_classifier_overflow", seed=3)
    by_object = csr_marl.simulate(scenario, policy=OverflowRouting(scenario), seed=3)
    assert by_name.team_return == by_object.team_return and by_name.flow == by_object.flow
