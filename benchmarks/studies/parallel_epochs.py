"""The parallel API against the AEC env: the default (event-driven) steps and the epoch options.

For `standard_day`, `surge` and `night_shift`, with the heuristic team and the masked random team,
whole episodes on seeds 0..N-1 through:

* the AEC env (`csr_marl.env`, one turn per decision): the reference, with 99 % confidence intervals;
* `csr_marl.parallel_env()` with its defaults (event-driven: every decision due at a minute acts in
  one step), and `csr_marl.envs.rllib.RLlibEnv` over it (RLlib's view: only deciding agents observed);
* `decision_interval_minutes` = 0.05, 0.25 and 1.0 (decision epochs, an explicit option).

Each row gives the mean of the headline KPIs and whether it lies inside the AEC env's 99 % CI, the
mean number of real decisions per parallel step and the share of agent samples that are forced
no-ops (agents with nothing to decide, which PettingZoo's parallel API still asks for an action).

    python benchmarks/studies/parallel_epochs.py --seeds 3            # prints the tables
    python benchmarks/studies/parallel_epochs.py --seeds 20 --write   # also writes results/parallel_epochs.{md,json}
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

import csr_marl
from csr_marl.analysis.stats import mean_ci
from csr_marl.policies import make_policy
from csr_marl.whatif.store import atomic_write, write_json

SCENARIOS = ("standard_day", "surge", "night_shift")
POLICIES = ("heuristic", "random")
INTERVALS = (0.05, 0.25, 1.0)
KPIS = (
    "team_return", "service_level_first_response", "service_level", "abandonment_rate",
    "resolution_rate", "sla_attainment",
)
LABELS = ("return", "FR SL", "SL", "abandon", "resolved", "SLA")
RESULTS = Path(__file__).resolve().parents[1] / "results"


def aec_episode(scenario: str, policy: str, seed: int) -> dict[str, float]:
    env = csr_marl.env(scenario)
    env.reset(seed=seed)
    unwrapped = env.unwrapped
    choose = make_policy(policy, unwrapped.scenario, unwrapped.center.streams["policy"])
    decisions = 0
    for _ in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
        else:
            env.step(choose(unwrapped.pending_decision))
            decisions += 1
    return _row(unwrapped.center.result(), decisions, decisions, decisions)


def parallel_episode(scenario: str, policy: str, seed: int, interval: float | None, rllib: bool = False) -> dict[str, float]:
    """One episode of the parallel env (or of RLlibEnv over it): KPIs, steps, decisions, samples."""
    if rllib:
        from csr_marl.envs.rllib import RLlibEnv

        wrapper = RLlibEnv({"scenario": scenario, "decision_interval_minutes": interval})
        observations, _ = wrapper.reset(seed=seed)
        env = wrapper.par_env
    else:
        env = csr_marl.parallel_env(scenario, decision_interval_minutes=interval)
        observations, _ = env.reset(seed=seed)
    choose = make_policy(policy, env.scenario, env.center.streams["policy"])
    steps = decisions = samples = 0
    while env.agents:
        due = env.due_decisions
        asked = observations if rllib else env.agents  # RLlib observes only the deciding agents
        steps, decisions, samples = steps + 1, decisions + len(due), samples + len(asked)
        actions = {agent: choose(decision) for agent, decision in due.items()}
        observations = (wrapper.step(actions) if rllib else env.step(actions))[0]
    return _row(env.center.result(), steps, decisions, samples)


def _row(result, steps: int, decisions: int, samples: int) -> dict[str, float]:
    kpis = {**result.kpis, "team_return": result.team_return}
    return {
        "steps": steps, "decisions": decisions,
        "decisions_per_step": decisions / max(steps, 1), "noop_share": 1 - decisions / max(samples, 1),
        **{k: kpis[k] for k in KPIS},
    }


def variants(rllib: bool) -> list[tuple[str, float | None, bool]]:
    rows: list[tuple[str, float | None, bool]] = [("parallel_env() default", None, False)]
    if rllib:
        rows.append(("RLlibEnv default", None, True))
    rows += [(f"epochs {interval:g} min", interval, False) for interval in INTERVALS]
    return rows


def measure(scenario: str, policy: str, seeds: int, rllib: bool) -> dict:
    aec = [aec_episode(scenario, policy, s) for s in range(seeds)]
    reference = {k: mean_ci([r[k] for r in aec], 0.99) for k in KPIS}
    rows = [{"env": "AEC env() (reference)", **_mean(aec), "inside": dict.fromkeys(KPIS, True)}]
    for name, interval, through_rllib in variants(rllib):
        runs = [parallel_episode(scenario, policy, s, interval, through_rllib) for s in range(seeds)]
        mean = _mean(runs)
        inside = {k: reference[k][1] <= mean[k] <= reference[k][2] for k in KPIS}
        rows.append({"env": name, **mean, "inside": inside})
    return {"scenario": scenario, "policy": policy, "aec_ci99": reference, "rows": rows}


def _mean(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.fmean(r[k] for r in runs) for k in runs[0]}


def table(block: dict) -> str:
    ci = block["aec_ci99"]
    lines = [
        f"### `{block['scenario']}`, {block['policy']} team",
        "",
        "| env | decisions / step | forced no-ops | " + " | ".join(LABELS) + " |",
        "|---|---|---|" + "---|" * len(KPIS),
        "| AEC 99 % CI | | | " + " | ".join(f"[{ci[k][1]:.3g}, {ci[k][2]:.3g}]" for k in KPIS) + " |",
    ]
    for row in block["rows"]:
        cells = [f"{row[k]:.3g}" + ("" if row["inside"][k] else " **out**") for k in KPIS]
        lines.append(
            f"| {row['env']} | {row['decisions_per_step']:.2f} | {row['noop_share']:.0%} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--scenario", action="append", choices=SCENARIOS, help="default: all three")
    parser.add_argument("--no-rllib", action="store_true", help="skip the RLlibEnv rows (needs ray[rllib])")
    parser.add_argument("--write", action="store_true", help="write results/parallel_epochs.{md,json}")
    args = parser.parse_args()
    started = time.perf_counter()
    blocks = [
        measure(scenario, policy, args.seeds, not args.no_rllib)
        for scenario in (args.scenario or SCENARIOS) for policy in POLICIES
    ]
    default_rows = [row for block in blocks for row in block["rows"] if row["env"].endswith("default")]
    faithful = all(all(row["inside"].values()) for row in default_rows)
    text = "\n\n".join(table(block) for block in blocks)
    summary = (
        f"Seeds 0..{args.seeds - 1} per row (means); **out** marks a mean outside the AEC env's 99 % CI. "
        f"Every default row inside the AEC env's 99 % CI on every KPI: **{'yes' if faithful else 'no'}**. "
        f"Wall time {time.perf_counter() - started:.0f} s."
    )
    print(text + "\n\n" + summary)
    if args.write:
        header = (
            "# The parallel API against the AEC env\n\n"
            "Produced by `python benchmarks/studies/parallel_epochs.py --seeds "
            f"{args.seeds} --write`. KPIs: team return, first-response service level, service level "
            "(headline queue), abandonment rate, resolution rate, SLA attainment. \"decisions / step\": "
            "real decisions per parallel step; \"forced no-ops\": agent samples with nothing to decide "
            "(RLlibEnv asks only deciding agents, so it has none).\n\n"
        )
        atomic_write(RESULTS / "parallel_epochs.md", header + summary + "\n\n" + text + "\n")
        write_json(RESULTS / "parallel_epochs.json", {"seeds": args.seeds, "faithful": faithful, "blocks": blocks})


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
