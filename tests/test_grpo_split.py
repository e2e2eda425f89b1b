"""GRPO on tickets the training never saw: a row or environment draws its customers from one side of the
ticket bank's held-out split, in process and over ``csr-marl serve``; each held-out episode says whether
the case needed an action beyond the lookup and the reply and whether the model took it; the real
model's page counts only runs scored on the current score."""

from __future__ import annotations

import difflib
import sys
from collections import Counter
from pathlib import Path

import pytest

from extras import need
from serve_helpers import running_server

from csr_marl.grpo import environment_factory
from csr_marl.grpo.backends import InProcess, split_overrides
from csr_marl.grpo.cases import action_counts
from csr_marl.grpo.environment import environment_class
from csr_marl.text.scripted import play
from csr_marl.text.tasks import task_session

ROOT = Path(__file__).resolve().parents[1]
SEEDS = range(80)


def drawn(task: str, split: str | None, env_split: str = "all", seeds=SEEDS) -> list:
    """The ticket of each seed's first decision, the episode started by a dataset row (with ``split``
    when given) on an environment whose own split is ``env_split``."""
    backend = InProcess()
    env = environment_class(task, split=env_split)(backend)
    tickets = []
    for seed in seeds:
        row = {"task": task, "seed": seed, **({"split": split} if split else {})}
        env.reset(**row)
        tickets.append(backend.session.decision.ticket)
    return tickets


def wording(ticket) -> str:
    """The split of the text variant a ticket's (noisy) text was written from: the closest variant."""
    def text(variant) -> str:
        return f"{variant.subject}\n{variant.body}".format_map(ticket.slot_values)

    return max(ticket.template.variants, key=lambda v: difflib.SequenceMatcher(None, ticket.text, text(v)).ratio()).split


def test_a_test_row_draws_the_held_out_template_and_a_train_row_never_does() -> None:
    train = Counter(t.template.id for t in drawn("tasks/order_status", "train"))
    test = Counter(t.template.id for t in drawn("tasks/order_status", "test"))
    assert "shipping.missed_delivery" not in train and test["shipping.missed_delivery"] > 0
    assert "shipping.missed_delivery" in Counter(t.template.id for t in drawn("tasks/order_status", None))  # all


def test_refund_holds_out_wordings_only_and_a_row_wins_over_the_environments_split() -> None:
    on_test = drawn("tasks/refund", None, env_split="test", seeds=range(40))
    assert {wording(t) for t in on_test} == {"test"}
    assert {t.template.split for t in on_test} == {"train"}  # every refund template trains
    assert {wording(t) for t in drawn("tasks/refund", "train", env_split="test", seeds=range(40))} == {"train"}


def test_an_unknown_split_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="split must be one of all, train, test, got 'heldout'"):
        environment_factory("tasks/refund", split="heldout")
    with pytest.raises(ValueError, match="got 'heldout'"):
        environment_factory("tasks/refund")().reset(seed=0, split="heldout")


def test_the_dataset_rows_carry_the_split() -> None:
    need("datasets")
    from csr_marl.grpo import task_dataset

    rows = task_dataset("tasks/order_status", range(3), split="train")
    assert rows["split"] == ["train"] * 3
    assert "split" not in task_dataset("tasks/order_status", range(3)).column_names


def test_over_the_server_a_split_draws_the_same_customers_as_in_process(tmp_path: Path) -> None:
    need("openenv")
    seeds = range(12)
    local = {split: [environment_factory("tasks/order_status", split=split)().reset(seed=s) for s in seeds]
             for split in ("all", "test")}
    assert local["all"] != local["test"]
    with running_server(tmp_path / "serve.log", ["--scenario", "tasks/order_status", "--roles", "resolver"]) as served:
        env = environment_factory("tasks/order_status", base_url=served.url, split="test")()
        assert [env.reset(seed=s) for s in seeds] == local["test"]
        env = environment_factory("tasks/order_status", base_url=served.url)()
        assert [env.reset(seed=s) for s in seeds] == local["all"]


def replayed(task: str, agent: str, seeds, split: str = "all") -> list[dict]:
    """The scored tickets of ``agent``'s episodes replayed call for call through the GRPO environment."""
    env = environment_factory(task, split=split, max_calls=12)()
    session = task_session(task, overrides=split_overrides(split))
    tickets = []
    for seed in seeds:
        calls: list = []
        play(session, agent, seed, max_calls=12, record=calls)
        env.reset(seed=seed)
        for name, arguments in calls:
            getattr(env, name)(**arguments)
        tickets += env.score_breakdown
    return tickets


def test_the_careful_agent_takes_every_needed_action_and_one_that_skips_the_work_none() -> None:
    careful = replayed("tasks/refund", "careful", range(40), "train")
    counts = action_counts(careful)
    assert counts is not None and counts["needing"] >= 10
    assert counts["done"] == counts["needing"] and counts["unneeded"] == 0
    assert all(t["needs"] == ["initiate_refund"] for t in careful if t["needs"])
    for agent in ("skip_lookups", "idle"):  # idle never calls: its cases still count, as not done
        skipping = action_counts(replayed("tasks/refund", agent, range(40), "train"))
        assert skipping == {"needing": counts["needing"], "done": 0, "actions": 0, "unneeded": 0}, agent


def test_refunding_everyone_counts_as_acting_where_the_case_did_not_need_it() -> None:
    tickets = replayed("tasks/refund", "refund_everything", range(40), "train")
    counts = action_counts(tickets)
    not_owed = [t for t in tickets if "initiate_refund" not in t["needs"]]
    assert not_owed and all(t["unneeded"] == ["initiate_refund"] and t["collateral"] for t in not_owed)
    assert counts["unneeded"] == len(not_owed) and counts["actions"] == len(tickets)


def test_an_old_record_renders_as_not_counting_for_the_current_score() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import grpo_real

    from csr_marl.text.scoring import SCORING_VERSION

    record = grpo_real._load(grpo_real.RUNS / "probes" / "tasks_order_status_v2_seeds.json")  # scored before the key was kept
    line = grpo_real.target_line("tasks/order_status", record)
    assert line.endswith(f"scored with scoring v2, not the current v{SCORING_VERSION}: rerun **missed**")
    assert "(seeds of the training templates)" in line
    rows = grpo_real.case_rows(record["before"]["episodes"], record["after"]["episodes"])
    assert all(row.endswith("| not recorded | not recorded |") for row in rows)
    assert "--held-out seeds" in grpo_real.command("tasks/order_status", record["settings"])


def test_a_target_is_met_on_the_current_score_only_past_the_warm_start_and_the_canned_reply_on_held_out_templates() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import grpo_real

    from csr_marl.text.scoring import SCORING_VERSION

    before = [0.3, 0.35, 0.4, 0.3, 0.32, 0.38]
    after = [0.7, 0.8, 0.75, 0.72, 0.78, 0.74]
    def run(kind: str, after: list[float]) -> dict:
        episodes = lambda scores: [{"seed": 10_000 + i, "score": v, "tickets": []} for i, v in enumerate(scores)]  # noqa: E731
        return {"scoring_version": SCORING_VERSION, "settings": {"held_out": kind},
                "held_out": {"held_out": kind, "test_split": "test" if kind == "templates" else "all"},
                "before": {"episodes": episodes(before)}, "after": {"episodes": episodes(after)}}
    table = {"boilerplate": [0.5, 0.55, 0.6, 0.5, 0.52, 0.58], "declared_labels": [0.5, 0.55, 0.6, 0.5, 0.52, 0.58]}
    assert grpo_real.target_line("tasks/refund", run("templates", after), table).endswith("**met**")
    assert grpo_real.target_line("tasks/refund", run("seeds", after), table).endswith("(held out seeds only) **missed**")
    below_canned = [v - 0.3 for v in after]  # above the warm start, below the canned reply
    line = grpo_real.target_line("tasks/refund", run("templates", [b + 0.1 for b in before]), table)
    assert line.endswith("**missed**") and "after - `boilerplate` -" in line
    assert grpo_real.target_line("tasks/refund", run("templates", below_canned), table).endswith("**missed**")
    summary = grpo_real.reached({**run("templates", below_canned), "task": "tasks/refund", "steps_done": 6,
                                 "train_cpu_s": 3000.0}, table)
    assert "6 GRPO steps in 50 CPU-minutes" in summary and "after - `boilerplate` -" in summary
    assert "customers whose case needed" not in summary  # these episodes record no case annotations


def test_each_kept_run_is_read_by_its_own_reading_and_a_rerun_by_none() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import grpo_real

    kept = [grpo_real._load(path) for path in sorted(grpo_real.RUNS.glob("*.json"))]
    ids = {grpo_real.run_id(run) for run in kept}
    assert ids == set(grpo_real.READING)  # no reading without its run, no kept run without a reading
    rerun = {**kept[0], "train_cpu_s": kept[0]["train_cpu_s"] + 1.0}
    assert grpo_real.run_id(rerun) not in grpo_real.READING
