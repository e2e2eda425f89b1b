"""A first-day AgileRL user's IPPO script on csr_marl's parallel env, measured.

AgileRL 2.58.0 pins ``pettingzoo<1.27`` and ``tensordict==0.13.0``, so it gets its own venv (csr_marl
accepts pettingzoo 1.26.1)::

    python -m venv .venv-agilerl && . .venv-agilerl/bin/activate
    echo "torch==2.13.0" > agile-constraints.txt      # keeps pip from replacing torch
    pip install torch==2.13.0
    pip install -c agile-constraints.txt agilerl==2.58.0 peft==0.21.0   # IPPO's imports need peft
    pip install -c agile-constraints.txt -e .
    python benchmarks/studies/agilerl_ippo.py [--write] [--install-time "145 s"]

AgileRL's multi-agent on-policy recipe: ``AsyncPettingZooVecEnv`` (auto-resetting sub-processes),
``IPPO(observation_spaces, action_spaces, agent_ids)`` sharing networks per ``<group>_<idx>`` prefix,
``get_action(obs, infos)`` (masks from ``infos[agent]["action_mask"]``) and ``learn()`` on the 8-tuple
(states, actions, log_probs, rewards, dones, values, next_obs, next_done). Prints env steps/s of random
masked play through the vector env vs the bare ``csr_marl.parallel_env`` loop (interleaved rounds),
learn() calls, the policy's mean episode team return before/after, and illegal actions.
``--write`` writes ``benchmarks/results/agilerl.md``.
"""

from __future__ import annotations

import argparse
import os
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import torch
from agilerl.algorithms import IPPO
from agilerl.vector.pz_async_vec_env import AsyncPettingZooVecEnv

import csr_marl
from csr_marl.envs import REWARD_COMPONENTS

ILLEGAL = REWARD_COMPONENTS.index("illegal_action")
RESULTS = Path(__file__).resolve().parents[1] / "results" / "agilerl.md"


class MaskedIPPO(IPPO):
    """IPPO whose ``extract_action_masks`` works with numpy masks. 2.58.0 tests ``None in group_masks``,
    which compares each mask array to None elementwise and raises "The truth value of an array with
    more than one element is ambiguous". Same output: per group, masks stacked in agent order."""

    def extract_action_masks(self, infos: dict[str, Any]) -> dict[str, torch.Tensor | None]:
        groups: dict[str, list[Any]] = {g: [] for g in self.observation_space}
        for agent in self.agent_ids:
            if isinstance(infos.get(agent), dict):
                groups[self.get_group_id(agent) if self.has_grouped_agents() else agent].append(
                    infos[agent].get("action_mask"))
        return {g: None if not ms or any(m is None for m in ms) else torch.Tensor(np.array(ms))
                for g, ms in groups.items()}


def sample_masked(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of an (n, n_actions) mask."""
    return np.argmax(rng.random(masks.shape) * masks, axis=-1)


class Tally:
    """Episode team returns and illegal actions seen through the vector env. ``rewards.mode`` is
    'shared' by default, so the first agent's reward (and ``reward_components``) is the team's."""

    def __init__(self, agents: list[str], num_envs: int, penalty: float) -> None:
        self.lead, self.penalty, self.running = agents[0], penalty, np.zeros(num_envs)
        self.returns: list[float] = []
        self.off_mask = 0  # actions outside the mask they were chosen with
        self.penalised = 0.0  # illegal_action penalties charged, counted

    def step(self, actions: dict[str, np.ndarray], masks_from: dict[str, Any], rewards: dict[str, Any],
             terms: dict[str, Any], truncs: dict[str, Any], infos: dict[str, Any]) -> None:
        for agent, act in actions.items():
            mask = masks_from[agent]["action_mask"]
            self.off_mask += int((mask[np.arange(len(act)), act.astype(int)] == 0).sum())
        self.running += np.nan_to_num(np.asarray(rewards[self.lead], dtype=float))
        self.penalised += float(infos[self.lead]["reward_components"][:, ILLEGAL].sum()) / self.penalty
        done = np.logical_or(terms[self.lead], truncs[self.lead]).astype(bool)
        self.returns.extend(self.running[done].tolist())
        self.running[done] = 0.0


def throughput(bare: Any, vec: AsyncPettingZooVecEnv, steps: int, rounds: int, seed: int) -> tuple[float, float, int]:
    """Env steps/s of random masked play, bare env vs vector env, alternating in ``rounds``."""
    rng = np.random.default_rng(seed)
    infos_b, infos_v = bare.reset(seed=seed)[1], vec.reset(seed=seed)[1]
    per_round = steps // rounds // vec.num_envs * vec.num_envs
    t_bare = t_vec = 0.0
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(per_round):
            if not bare.agents:
                infos_b = bare.reset(seed=int(rng.integers(2**31)))[1]
            picks = sample_masked(np.stack([infos_b[a]["action_mask"] for a in bare.agents]), rng)
            infos_b = bare.step(dict(zip(bare.agents, picks.tolist())))[4]
        t1 = time.perf_counter()
        for _ in range(per_round // vec.num_envs):
            infos_v = vec.step({a: sample_masked(infos_v[a]["action_mask"], rng) for a in vec.agents})[4]
        t_bare, t_vec = t_bare + t1 - t0, t_vec + time.perf_counter() - t1
    return per_round * rounds / t_bare, per_round * rounds / t_vec, per_round * rounds


def run_policy(agent: MaskedIPPO, vec: AsyncPettingZooVecEnv, steps: int, tally: Tally, learn_every: int = 0) -> int:
    """``steps`` vector steps of the policy; with ``learn_every``, learn() on each rollout of that many
    vector steps, in AgileRL's experience layout. Returns the number of learn() calls."""
    obs, infos = vec.reset(seed=int(np.random.randint(2**31)))
    ids, learns = agent.agent_ids, 0
    done = {a: np.zeros(vec.num_envs) for a in ids}
    rollout: list[dict[str, list[Any]]] = []
    for t in range(steps):
        if learn_every and t % learn_every == 0:
            rollout = [{a: [] for a in ids} for _ in range(6)]
        action, log_prob, _, value = agent.get_action(obs=obs, infos=infos)
        next_obs, reward, term, trunc, next_infos = vec.step(action)
        tally.step(action, infos, reward, term, trunc, next_infos)
        next_done = {a: np.logical_or(term[a], trunc[a]).astype(float) for a in term}
        if learn_every:
            for field, val in zip(rollout, (obs, action, log_prob, reward, done, value)):
                for a in ids:
                    field[a].append(val[a])
            if (t + 1) % learn_every == 0:
                agent.learn((*rollout, next_obs, next_done))
                learns += 1
        obs, infos, done = next_obs, next_infos, next_done
    return learns


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="standard_day")
    p.add_argument("--horizon", type=float, default=60.0, help="horizon_minutes override")
    p.add_argument("--num-envs", type=int, default=2)
    p.add_argument("--bench-steps", type=int, default=5000, help="env steps per throughput arm")
    p.add_argument("--rounds", type=int, default=5, help="interleaved throughput rounds")
    p.add_argument("--rollout", type=int, default=250, help="vector steps per learn() call")
    p.add_argument("--learns", type=int, default=6, help="learn() calls")
    p.add_argument("--eval-steps", type=int, default=300, help="vector steps per policy evaluation")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--install-time", default="not recorded", help="for the results page")
    p.add_argument("--write", action="store_true", help="write benchmarks/results/agilerl.md")
    args = p.parse_args()
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    def env_fn() -> Any:
        return csr_marl.parallel_env(args.scenario, overrides={"horizon_minutes": args.horizon})

    bare, vec = env_fn(), AsyncPettingZooVecEnv([env_fn] * args.num_envs)
    agents, penalty = list(vec.agents), bare.unwrapped.scenario.rewards.illegal_action
    tallies = {k: Tally(agents, args.num_envs, penalty) for k in ("before", "train", "after")}
    try:
        sps_bare, sps_vec, n_bench = throughput(bare, vec, args.bench_steps, args.rounds, args.seed)
        agent = MaskedIPPO(
            observation_spaces=[vec.single_observation_space(a) for a in agents],
            action_spaces=[vec.single_action_space(a) for a in agents],
            agent_ids=agents,
            learn_step=args.rollout * args.num_envs,
        )
        run_policy(agent, vec, args.eval_steps, tallies["before"])
        t0 = time.perf_counter()
        learns = run_policy(agent, vec, args.rollout * args.learns, tallies["train"], learn_every=args.rollout)
        t_train = time.perf_counter() - t0
        run_policy(agent, vec, args.eval_steps, tallies["after"])
    finally:
        vec.close()
        bare.close()

    def mean(xs: list[float]) -> str:
        return f"{np.mean(xs):.2f} ± {np.std(xs):.2f} (n={len(xs)})" if xs else "n/a"

    before, train, after = tallies.values()
    n_train = args.rollout * args.learns * args.num_envs
    rows = [
        ("env steps/s, bare `csr_marl.parallel_env`, random masked", f"{sps_bare:,.0f} ({n_bench} steps)"),
        (f"env steps/s, `AsyncPettingZooVecEnv` x{args.num_envs}, random masked", f"{sps_vec:,.0f} ({n_bench} steps)"),
        ("vector env / bare", f"{sps_vec / sps_bare:.2f}x"),
        ("IPPO training env steps (get_action + step + learn)", f"{n_train} in {t_train:.1f} s ({n_train / t_train:,.0f}/s)"),
        ("learn() calls completed", f"{learns} (rollouts of {args.rollout} x {args.num_envs} env steps)"),
        ("episode team return, policy before training", mean(before.returns)),
        ("episode team return, during training", mean(train.returns)),
        ("episode team return, policy after training", mean(after.returns)),
        ("actions outside the mask (before / train / after)", f"{before.off_mask} / {train.off_mask} / {after.off_mask}"),
        ("illegal_action penalties (before / train / after)", f"{before.penalised:.0f} / {train.penalised:.0f} / {after.penalised:.0f}"),
    ]
    versions = ", ".join(f"{k} {version(k)}" for k in ("agilerl", "torch", "pettingzoo", "csr-marl", "gymnasium", "numpy"))
    for name, val in rows:
        print(f"{name:66s} {val}")
    print("versions:", versions)
    if args.write:
        table = "\n".join(f"| {k} | {v} |" for k, v in rows)
        RESULTS.write_text(REPORT.format(a=args, n_agents=len(agents), cores=os.cpu_count(), versions=versions, table=table))
        print(f"wrote {RESULTS}")


REPORT = """# AgileRL IPPO on csr_marl's parallel env

`python benchmarks/studies/agilerl_ippo.py --write`: `{a.scenario}`, `horizon_minutes={a.horizon:g}`, {n_agents} agents in
AgileRL's `<group>_<idx>` groups (triage, resolver, escalation: one shared actor/critic each), seed {a.seed}, CPU
({cores} cores, shared by this process and the vector env's {a.num_envs} workers).

Versions: {versions}.

Own venv (agilerl 2.58.0 pins `pettingzoo<1.27`, `tensordict==0.13.0`); install time {a.install_time}:

    pip install torch==2.13.0
    pip install -c constraints.txt agilerl==2.58.0 peft==0.21.0   # constraints.txt: torch==2.13.0
    pip install -c constraints.txt -e .

| measure | value |
|---|---|
{table}

Throughput: {a.rounds} alternating rounds per arm, each agent a uniformly random legal action from
`infos[agent]["action_mask"]`; the vector env's rate counts every sub-env step. Training: default IPPO
hyperparameters, {a.learns} learn() calls; team return (one agent's return, `rewards.mode: shared`) need not improve.

## Workarounds and quirks

* **AgileRL bug, worked around**: `IPPO.extract_action_masks` tests `None in group_masks` on a list of
  numpy masks; `in` compares each array to None elementwise, so the first `get_action(obs, infos)` raises
  `ValueError: The truth value of an array with more than one element is ambiguous` (any numpy mask
  longer than 1 would). The script's `MaskedIPPO` overrides that one method with `any(m is None ...)`;
  its output (per group, masks stacked in agent order, as the observations are) is unchanged.
* **Install**: `peft` must be named (`from agilerl.algorithms import IPPO` reaches
  `agilerl.distributed.expert_parallel`, which imports peft); the constraints file keeps torch.
* **Quirk**: `get_action` samples from the masked distribution and stores those log-probs, but `learn`
  re-evaluates the actor without masks (the 8-tuple has no slot for them), so the PPO ratio compares
  unmasked with masked probabilities. Acting respects the mask (0 actions outside it above).
* The vector env auto-resets a finished sub-env and returns the reset's infos, so the penalties row
  misses each episode's last step; the off-mask count (against the mask each action was chosen with) is exact.
* Nothing in csr_marl needed changing: the vector env stacks its infos (int8 `action_mask`,
  `reward_components`) and observations, and all agents stay live until the shared truncation.
"""


if __name__ == "__main__":
    main()
