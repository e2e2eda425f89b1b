"""Behaviour cloning of the strongest non-RL baseline on `tasks/classify`: how far the environment's own
observation carries a learner that imitates `text_classifier`.

The teacher (`csr_marl.policies.baselines.TextClassifierPolicy`, TF-IDF + logistic regression fitted on
train-split tickets) triages `--episodes` train-split episodes; at every decision the environment's
observation (the one PPO learns from: `uniform_spaces`, 256 hashed text features, as in
`benchmarks/learning.py`) and the teacher's action are recorded. An MLP the size of the PPO actor (two
hidden layers of 256) is fitted to those actions (masked cross-entropy, Adam), then scored greedily as the
baselines are: 20 episodes per split, episode e with `SeedSequence(0, spawn_key=(e,))`.

    python benchmarks/studies/bc_classify.py                    # prints the rows
    python benchmarks/studies/bc_classify.py --write            # also writes results/bc_classify.{md,json}

Needs the `train` and `baselines` extras.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

import csr_marl
from csr_marl.cli.train import score_policy
from csr_marl.envs.observations import ObservationEncoder
from csr_marl.policies.baselines import TextClassifierPolicy
from csr_marl.simulation import simulate
from csr_marl.train.checkpoint import observation_layout
from csr_marl.whatif.store import atomic_write, write_json

RESULTS = Path(__file__).resolve().parents[1] / "results"
OVERRIDES = {"observation.text_features": 256}
SPLITS = {"train": "train", "held-out": "test"}
COLUMNS = ("team_return", "triage_accuracy", "triage_priority_accuracy")


class Observed:
    """A policy over the environment's observation of the core it is bound to (``simulate`` binds it)."""

    def __init__(self, scenario) -> None:
        self.layout = observation_layout(scenario)
        self.encoder = ObservationEncoder(self.layout, scenario)
        self.center = None

    def bind(self, center) -> None:
        self.center = center
        self.encoder.invalidate()

    def observe(self, decision) -> tuple[np.ndarray, np.ndarray]:
        self.encoder.invalidate()
        observation = self.encoder.observe(self.center, decision.staff, decision)
        return observation, self.encoder.mask(self.layout.roles_layout[decision.role], decision).astype(bool)


class Recorder(Observed):
    """The teacher plays; every decision's observation, mask and the teacher's action are kept."""

    def __init__(self, scenario) -> None:
        super().__init__(scenario)
        self.teacher = TextClassifierPolicy(scenario)
        self.samples: list[tuple[np.ndarray, np.ndarray, int]] = []

    def __call__(self, decision) -> int:
        action = self.teacher(decision)
        observation, mask = self.observe(decision)
        self.samples.append((observation, mask, action))
        return action


class Cloned(Observed):
    """The fitted network, greedy over the legal actions."""

    def __init__(self, scenario, network: torch.nn.Module) -> None:
        super().__init__(scenario)
        self.network = network

    def __call__(self, decision) -> int:
        observation, mask = self.observe(decision)
        with torch.no_grad():
            logits = self.network(torch.from_numpy(observation[None]))[0].numpy()
        logits[~mask] = -np.inf
        return int(np.argmax(logits))


def fit(samples, n_actions: int, epochs: int, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    x = torch.from_numpy(np.stack([s[0] for s in samples]))
    mask = torch.from_numpy(np.stack([s[1] for s in samples]))
    y = torch.tensor([s[2] for s in samples])
    network = torch.nn.Sequential(
        torch.nn.Linear(x.shape[1], 256), torch.nn.Tanh(), torch.nn.Linear(256, 256), torch.nn.Tanh(),
        torch.nn.Linear(256, n_actions),
    )
    optimiser = torch.optim.Adam(network.parameters(), lr=1e-3, weight_decay=1e-4)
    for _ in range(epochs):
        for batch in torch.randperm(len(y)).split(256):
            logits = network(x[batch]).masked_fill(~mask[batch], -1e9)
            loss = torch.nn.functional.cross_entropy(logits, y[batch])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    return network.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=30, help="teacher episodes on the train split")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--score-episodes", type=int, default=20, help="scoring episodes per split")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.process_time()
    train = csr_marl.load_scenario("tasks/classify", overrides={**OVERRIDES, "tickets.split": "train"})
    recorder = Recorder(train)
    for episode in range(args.episodes):
        simulate(train, recorder, 100_000 + episode)  # seeds apart from the scoring episodes'
    n_actions = int(recorder.samples[0][1].shape[0])
    network = fit(recorder.samples, n_actions, args.epochs, seed=0)
    fitted = time.process_time() - started
    rows = {}
    for column, split in SPLITS.items():
        scenario = csr_marl.load_scenario("tasks/classify", overrides={**OVERRIDES, "tickets.split": split})
        for label, policy in (("BC from text_classifier", Cloned(scenario, network)), ("text_classifier", TextClassifierPolicy(scenario))):
            row = score_policy("tasks/classify", scenario, policy, label, episodes=args.score_episodes, seed=0)
            rows.setdefault(label, {})[column] = {k: row.estimates[k]._asdict() for k in COLUMNS}
    cpu = time.process_time() - started
    lines = [
        "| policy | team_return train | team_return held-out | triage_accuracy held-out | triage_priority_accuracy held-out |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, cols in rows.items():
        cell = lambda e: f"{e['mean']:.3f} [{e['low']:.3f}, {e['high']:.3f}]"  # noqa: E731
        lines.append(
            f"| {label} | {cell(cols['train']['team_return'])} | {cell(cols['held-out']['team_return'])} | "
            f"{cell(cols['held-out']['triage_accuracy'])} | {cell(cols['held-out']['triage_priority_accuracy'])} |"
        )
    footer = (
        f"{len(recorder.samples)} teacher decisions from {args.episodes} train-split episodes, {args.epochs} epochs; "
        f"CPU minutes: {fitted / 60:.1f} to record and fit, {cpu / 60:.1f} with scoring."
    )
    text = "\n".join(lines) + "\n\n" + footer
    print(text)
    if args.write:
        atomic_write(
            RESULTS / "bc_classify.md",
            "# Behaviour cloning of text_classifier on tasks/classify\n\nProduced by `python benchmarks/studies/bc_classify.py "
            f"--episodes {args.episodes} --epochs {args.epochs} --write`. 20 scoring episodes per split, episode e with "
            "`SeedSequence(0, spawn_key=(e,))`; mean [95 % CI over episodes].\n\n" + text + "\n",
        )
        write_json(RESULTS / "bc_classify.json", {"rows": rows, "samples": len(recorder.samples), "cpu_seconds": cpu})


if __name__ == "__main__":
    main()
