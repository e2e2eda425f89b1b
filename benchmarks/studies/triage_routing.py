"""Where the trained standard_day team's lead over `text_classifier` comes from: how each triage routes.

On held-out tickets (the learning page's 20 episodes, seed 0) it records every triage decision of:

- the committed standard_day teams (`benchmarks/checkpoints/learning/standard_day_s*.pt`);
- the same teams with classify's triage in place of their own (the curriculum's starting point; seeds
  whose classify checkpoint is committed);
- `text_classifier`, and `text_classifier_overflow` (`overflow_routing.py`);
- the committed teams with `text_classifier_overflow`'s triage in place of their own (what their
  resolvers and desk reach behind the best triage the ladder has).

and prints, per team: held-out team return, the share of tickets routed to the escalation desk, the
share that need a specialist, category accuracy, and the share routed where the ticket needs to go.

    python benchmarks/studies/triage_routing.py           # prints the table (about 5 minutes on one core)
    python benchmarks/studies/triage_routing.py --write   # also writes results/triage_routing.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the learning benchmark it reads

from learning import EPISODES, OVERFLOW, RESULTS, SPLITS, TASKS, kept_checkpoint, overrides  # noqa: E402
from overflow_routing import OverflowRouting  # noqa: E402

from csr_marl import load_scenario
from csr_marl.cli.train import score_policy
from csr_marl.policies import make_policy
from csr_marl.sim.decisions import decode_triage
from csr_marl.train import load_checkpoint_policy
from csr_marl.train.curriculum import init_role


class OverflowTriage:
    """A trained team whose triage decisions go to ``text_classifier_overflow``."""

    def __init__(self, team, scenario) -> None:
        self.team, self.triage = team, OverflowRouting(scenario)

    def bind(self, center) -> None:
        self.team.bind(center)
        self.triage.bind(center)

    def __call__(self, decision) -> int:
        return (self.triage if decision.role == "triage" else self.team)(decision)


class Recorded:
    """A team whose triage decisions are kept: (category right, route, route the ticket needs)."""

    def __init__(self, team, scenario) -> None:
        self.team, self.scenario, self.playing = team, scenario, None
        self.decisions: list[tuple[bool, str, str]] = []

    def bind(self, center) -> None:
        if isinstance(self.team, str):  # a built-in policy, made per episode as simulate makes it
            self.playing = make_policy(self.team, self.scenario, center.streams["policy"])
        else:
            self.team.bind(center)
            self.playing = self.team

    def __call__(self, decision) -> int:
        action = self.playing(decision)
        if decision.role == "triage" and decision.ticket is not None:
            ticket = decision.ticket
            category, _, route = decode_triage(action)
            needs = "escalation" if ticket.requirement.needs_escalation else "resolver"
            self.decisions.append((category == ticket.true_category, route, needs))
        return action


def measure(label: str, team, scenario, name: str) -> dict:
    recorded = Recorded(team, scenario)
    row = score_policy(name, scenario, recorded, label, episodes=EPISODES, seed=0)
    n = len(recorded.decisions)
    return {
        "team": label, "team_return": row.estimates["team_return"]._asdict(), "decisions": n,
        "to_desk": sum(route == "escalation" for _, route, _ in recorded.decisions) / n,
        "need_desk": sum(needs == "escalation" for *_, needs in recorded.decisions) / n,
        "category_right": sum(right for right, *_ in recorded.decisions) / n,
        "route_right": sum(route == needs for _, route, needs in recorded.decisions) / n,
    }


def rows() -> list[dict]:
    name = TASKS["standard_day"]["config"]["scenario"]
    scenario = load_scenario(name, overrides(SPLITS["held-out"]))
    out = [measure("text_classifier", "text_classifier", scenario, name),
           measure(OVERFLOW, OverflowRouting(scenario), scenario, name)]
    seed = 0
    while kept_checkpoint("standard_day", seed).is_file():
        day = kept_checkpoint("standard_day", seed)
        out.append(measure(f"PPO seed {seed}", load_checkpoint_policy(day, scenario), scenario, name))
        if kept_checkpoint("classify", seed).is_file():
            team = load_checkpoint_policy(day, scenario)
            init_role("triage", kept_checkpoint("classify", seed), team.checkpoint.actor, team.checkpoint.critic,
                      team.layout)
            out.append(measure(f"PPO seed {seed}, classify's triage", team, scenario, name))
        team = OverflowTriage(load_checkpoint_policy(day, scenario), scenario)
        out.append(measure(f"PPO seed {seed}, {OVERFLOW}'s triage", team, scenario, name))
        seed += 1
    return out


def markdown(table: list[dict], minutes: float) -> str:
    lines = [
        "# How each standard_day triage routes, held-out tickets",
        "",
        f"Generated by `python benchmarks/studies/triage_routing.py --write` ({minutes:.1f} minutes, one process): "
        f"{EPISODES} held-out episodes (seed 0, the learning page's), every triage decision recorded. *To the "
        "desk*: the share of tickets the triage routes to the escalation desk; *need the desk*: the share whose "
        "case needs a specialist; *route right*: routed where the case needs to go.",
        "",
        "| team | team return held-out | to the desk | need the desk | category right | route right |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in table:
        e = r["team_return"]
        lines.append(f"| {r['team']} | {e['mean']:.1f} [{e['low']:.1f}, {e['high']:.1f}] | {r['to_desk']:.3f} | "
                     f"{r['need_desk']:.3f} | {r['category_right']:.3f} | {r['route_right']:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write results/triage_routing.md")
    args = parser.parse_args()
    started = time.perf_counter()
    table = rows()
    text = markdown(table, (time.perf_counter() - started) / 60)
    print(text)
    if args.write:
        (RESULTS / "triage_routing.md").write_text(text)
        print(f"wrote {RESULTS / 'triage_routing.md'}")


if __name__ == "__main__":
    main()
