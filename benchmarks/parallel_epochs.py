"""Decision epochs of the parallel API: real decisions per step, forced no-ops, and what latency costs.

For each decision interval, whole `standard_day` episodes through `csr_marl.parallel_env` with a
masked random team and with the heuristic team: the mean number of real decisions per parallel step,
the share of agent samples that are forced no-ops (agents with nothing to decide, which PettingZoo's
parallel API still asks for an action), and the KPIs the latency moves. The row "v0" is the
environment before decision epochs: one decision per step (measured as the core's decisions, each a
step), the reference for the issue's targets (>= 3x the decisions per step, no-ops below half).

    python benchmarks/parallel_epochs.py                 # prints the table
    python benchmarks/parallel_epochs.py --write         # also writes results/parallel_epochs.{md,json}
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np

import csr_marl
from csr_marl.policies import make_policy
from csr_marl.sim.center import ContactCenter
from csr_marl.whatif.store import atomic_write, write_json

INTERVALS = (0.25, 0.5, 1.0, 2.0, 3.0)
KPIS = ("service_level_first_response", "service_level", "abandonment_rate", "resolved")
RESULTS = Path(__file__).parent / "results"


def epochs(scenario: str, policy: str, interval: float | None, seed: int) -> dict[str, float]:
    """One episode; ``interval=None`` is v0 (one decision per step, through the core)."""
    scn = csr_marl.load_scenario(scenario)
    if interval is None:
        center = ContactCenter(scn, seed)
        choose = make_policy(policy, scn, center.streams["policy"])
        steps = 0
        while (decision := center.next_decision()) is not None:
            center.decide(choose(decision))
            steps += 1
        decisions, samples = steps, steps * len(center.staff)
    else:
        env = csr_marl.parallel_env(scn, decision_interval_minutes=interval)
        env.reset(seed=seed)
        center = env.center
        choose = make_policy(policy, scn, center.streams["policy"])
        steps = decisions = samples = 0
        while env.agents:
            due = env.due_decisions
            steps, decisions, samples = steps + 1, decisions + len(due), samples + len(env.agents)
            env.step({agent: choose(decision) for agent, decision in due.items()})
    kpis = center.result().kpis
    return {
        "steps": steps,
        "decisions_per_step": decisions / steps,
        "noop_share": 1 - decisions / samples,
        **{k: kpis[k] for k in KPIS},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="standard_day")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="write results/parallel_epochs.{md,json}")
    args = parser.parse_args()
    rows = []
    for policy in ("random", "heuristic"):
        for interval in (None, *INTERVALS):
            runs = [epochs(args.scenario, policy, interval, seed) for seed in range(args.seeds)]
            row = {"policy": policy, "interval": "v0" if interval is None else interval}
            row.update({k: statistics.fmean(r[k] for r in runs) for k in runs[0]})
            rows.append(row)
    head = "| policy | interval (min) | steps | decisions / step | forced no-ops | FR service level | service level | abandonment | resolved |"
    lines = [
        f"`{args.scenario}`, {args.seeds} seeds per row (means); {len(csr_marl.parallel_env(args.scenario).possible_agents)} agents.",
        "",
        head,
        "|" + "---|" * 9,
    ]
    for r in rows:
        lines.append(
            f"| {r['policy']} | {r['interval']} | {r['steps']:,.0f} | {r['decisions_per_step']:.2f} | {r['noop_share']:.0%} | "
            f"{r['service_level_first_response']:.3f} | {r['service_level']:.3f} | {r['abandonment_rate']:.3f} | {r['resolved']:.0f} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.write:
        atomic_write(RESULTS / "parallel_epochs.md", "# Decision epochs of the parallel API\n\n" + text + "\n")
        write_json(RESULTS / "parallel_epochs.json", {"scenario": args.scenario, "seeds": args.seeds, "rows": rows})


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
