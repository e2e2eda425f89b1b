"""The real model's GRPO page: SmolLM2-135M-Instruct, warm-started then trained with GRPO on a CPU.

`grpo_train.py --model smollm2-135m --write-real` keeps each task's run (the held-out episodes before
and after GRPO, what each score is made of, the curve and the costs) in `results/grpo_real/<task>.json`
and rewrites `results/grpo_real.md` from every kept run; `--render-real` rewrites the page alone. The
page also plays the scripted ladder and the adversarial suite on the same held-out seeds, so a gain
can be read against policies that skip the work.
"""

from __future__ import annotations

import json
import math
import platform
from pathlib import Path

from csr_marl.analysis.stats import mean_ci
from csr_marl.whatif.store import atomic_write, write_json

RESULTS = Path(__file__).resolve().parent / "results"
RUNS = RESULTS / "grpo_real"
PAGE = RESULTS / "grpo_real.md"
COMMAND = ("python benchmarks/grpo_train.py --model smollm2-135m --write-real --tasks TASK "
           "(settings per task below)")


def keep(run: dict, settings: dict) -> Path:
    """Store one task's run beside the others (atomically; a GPU run in ``gpu/``) and rewrite the page."""
    import os

    from csr_marl.text.scoring import SCORING_VERSION

    record = {**run, "scoring_version": SCORING_VERSION, "settings": settings, "machine": {
        "cpu": _cpu(), "cores": os.cpu_count(), "python": platform.python_version(),
    }}
    folder = RUNS / "gpu" if run.get("device") else RUNS  # a GPU run is a bonus section, not a target's row
    folder.mkdir(parents=True, exist_ok=True)
    path = write_json(folder / f"{gpu_name(run['task'], settings) if run.get('device') else run['task'].replace('/', '_')}.json",
                      record)
    render()
    return path


def gpu_name(task: str, settings: dict) -> str:
    """A GPU run's file name: the task, and the sampling temperature where it is not 1 (several bonus runs
    of one task sit side by side)."""
    temperature = settings.get("temperature", 1.0)
    return task.replace("/", "_") + ("" if temperature == 1.0 else f"_t{temperature:g}")


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def ci(values: list[float]) -> tuple[float, float, float]:
    mean, low, high = mean_ci(values)
    return mean, low, high


def _fmt(stat: tuple[float, float, float]) -> str:
    return f"{stat[0]:.3f} [{stat[1]:.3f}, {stat[2]:.3f}]"


def work(episodes: list[dict], task: str) -> dict[str, float]:
    """What the held-out scores are made of: replies that held a call, label checks, lookups, the
    judge's reply grades and unowed refunds. Steps and resolutions count on the tickets the caller
    acted on when the task plays a working role (a resolver or the desk), triage too or not."""
    from csr_marl.text.tasks import task_roles

    tickets = [t for e in episodes for t in e["tickets"]]
    works = bool(set(task_roles(task)) - {"triage"})
    replies = sum(e["replies"] for e in episodes)

    def share(pick) -> float:
        values = [pick(t) for t in tickets]
        values = [v for v in values if v is not None]
        return sum(values) / len(values) if values else math.nan

    return {
        "parse_rate": sum(e["parsed"] for e in episodes) / replies if replies else math.nan,
        "calls_per_episode": sum(len(e["calls"]) for e in episodes) / len(episodes),
        "category_right": share(lambda t: t["checks"].get("category") if t["checks"] else None),
        "priority_credit": share(lambda t: t["checks"].get("priority") if t["checks"] else None),
        "route_right": share(lambda t: t["checks"].get("route") if t["checks"] else None),
        "steps_done": share(lambda t: len(t["steps"]) if works and t["acted"] else None),
        "reply_grade": share(lambda t: t["reply"]),
        "resolved": share(lambda t: float(t["resolved"]) if works and t["acted"] else None),
        "unowed_refunds": float(sum(t["collateral"] for t in tickets)),
    }


def suite(task: str, seeds: list[int], split: str = "all") -> dict[str, list[float]]:
    """Each policy's scores, seed by seed, of the scripted ladder and the adversarial suite on the same
    held-out seeds and the same side of the ticket bank's split."""
    from csr_marl.grpo.backends import split_overrides
    from csr_marl.text.adversarial import SUITE
    from csr_marl.text.scripted import play
    from csr_marl.text.tasks import task_session

    session = task_session(task, 0, overrides=split_overrides(split))
    return {policy: [play(session, policy, seed, max_calls=400).score for seed in seeds] for policy in SUITE}


WORK_ROWS = (
    ("parse_rate", "replies that held a tool call"),
    ("calls_per_episode", "tool calls per episode"),
    ("category_right", "triage: category right"),
    ("priority_credit", "triage: priority credit"),
    ("route_right", "triage: route right"),
    ("steps_done", "work: steps done right per ticket"),
    ("resolved", "work: tickets resolved"),
    ("reply_grade", "the judge's grade of the model's replies (0-0.5)"),
    ("unowed_refunds", "refunds the case did not owe (count)"),
)


def case_rows(before: list[dict], after: list[dict]) -> list[str]:
    """Table rows: how often the model did what each case needed beyond the lookup and the reply (a
    refund owed, a shipping update, the desk), before and after GRPO, and how often it acted where the
    case needed no such action (:func:`csr_marl.grpo.cases.action_counts`)."""
    from csr_marl.grpo.cases import action_counts

    counts = [action_counts(t for e in episodes for t in e["tickets"]) for episodes in (before, after)]

    def cells(pick) -> str:
        return " | ".join("not recorded" if c is None else pick(c) for c in counts)

    def share(part: int, whole: int) -> str:
        return f"{part / whole:.3f} ({part} of {whole})" if whole else "none"

    return [
        f"| cases that needed an action beyond the lookup (refund, update, desk) | {cells(lambda c: str(c['needing']))} |",
        f"| of those, the action done right | {cells(lambda c: share(c['done'], c['needing']))} |",
        f"| actions taken where the case did not need them | {cells(lambda c: share(c['unneeded'], c['actions']))} |",
    ]


#: The tasks the targets name: order_status, and a task whose work depends on what the lookup shows.
TARGET_TASKS: tuple[tuple[str, ...], ...] = (("tasks/order_status",), ("tasks/refund", "tasks/payment_failure"))
#: The policies of the adversarial suite that skip reading: a canned reply after the heuristic's steps and
#: the customer's own labels at triage (the two play alike on a resolver task; on a tie, the first).
SKIP_POLICIES = ("boilerplate", "declared_labels")
HELD_OUT = {"templates": "templates and wordings never trained on", "seeds": "seeds of the training templates"}


def held_out_kind(run: dict) -> str:
    """How a run's held-out evaluation differs from its training (runs recorded before ``--held-out``
    existed held out seeds only)."""
    return run["settings"].get("held_out", "seeds")


def target_line(task: str, run: dict | None, table: dict[str, list[float]] | None = None) -> str:
    """The page's target line for ``task``: the GRPO-trained model against its warm start and against
    the task's policy that skips reading, paired on the same held-out seeds, on the current score.
    ``table``: the suite's scores on the run's seeds (:func:`suite`; played here when not given)."""
    from csr_marl.text.scoring import SCORING_VERSION

    head = f"- Target: GRPO-trained vs warm-started model on {task}, held-out"
    if run is None:
        return f"{head}, paired: not run on the current score (scoring v{SCORING_VERSION}) **missed**"
    kind = held_out_kind(run)
    head += f" ({HELD_OUT[kind]}), paired: "
    recorded = scoring_version(run)
    if recorded != SCORING_VERSION:
        return f"{head}scored with scoring v{recorded}, not the current v{SCORING_VERSION}: rerun **missed**"
    rival, gain, lead = paired_figures(run, table)
    met = gain[1] > 0 and lead[1] > 0 and kind == "templates"
    why = "" if kind == "templates" or not (gain[1] > 0 and lead[1] > 0) else " (held out seeds only)"
    return (f"{head}after - before {_signed(gain)} over {len(run['after']['episodes'])} seeds; after - `{rival}` "
            f"{_signed(lead)}{why} **{'met' if met else 'missed'}**")


def paired_figures(run: dict, table: dict[str, list[float]] | None = None) -> tuple[str, tuple, tuple]:
    """The rival that skips reading (the better of :data:`SKIP_POLICIES` on the run's held-out seeds), and
    the paired differences after - before and after - rival (mean, 95% t-interval)."""
    from csr_marl.text.adversarial import paired

    before = [e["score"] for e in run["before"]["episodes"]]
    after = [e["score"] for e in run["after"]["episodes"]]
    if table is None:
        table = suite(run["task"], [e["seed"] for e in run["after"]["episodes"]], test_split(run))
    rival = max(SKIP_POLICIES, key=lambda policy: sum(table[policy]))
    return rival, paired(after, before), paired(after, table[rival])


def reached(run: dict, table: dict[str, list[float]]) -> str:
    """One sentence of the page's summary for a run on the current score: its held-out means before and
    after, the paired differences, the GRPO steps it bought and what the cases that needed an action got."""
    from csr_marl.grpo.cases import action_counts

    rival, gain, lead = paired_figures(run, table)
    mean = {side: ci([e["score"] for e in run[side]["episodes"]])[0] for side in ("before", "after")}
    counts = [action_counts(t for e in run[side]["episodes"] for t in e["tickets"]) for side in ("before", "after")]
    cases = ""
    if all(counts):
        first, last = counts
        cases = (f"; of the {first['needing']} customers whose case needed an action beyond the lookup and the "
                 f"reply, it was done for {first['done']} before and {last['done']} after, and actions the case did "
                 f"not need went from {first['unneeded']} to {last['unneeded']}")
    return (f"`{run['task']}` ({len(run['after']['episodes'])} held-out seeds, {HELD_OUT[held_out_kind(run)]}; "
            f"{run['steps_done']} GRPO steps in {run['train_cpu_s'] / 60:.0f} CPU-minutes with the warm start): "
            f"{mean['before']:.3f} to {mean['after']:.3f}, after - before {_signed(gain)}, after - `{rival}` "
            f"{_signed(lead)}{cases}.")


def _signed(stat: tuple[float, float, float]) -> str:
    return f"{stat[0]:+.3f} [{stat[1]:+.3f}, {stat[2]:+.3f}]"


FLAGS = (
    "warm_start", "demo_seeds", "warm_lr", "eval_seeds", "eval_tokens", "steps", "generations", "lr", "max_calls",
    "max_completion", "threads", "budget_minutes", "wall_minutes", "micro_batch", "temperature", "beta", "train_layers",
    "first_arguments", "follow_ups", "prompts", "tool_format", "held_out",
)
# Settings left off the command where they hold their default (runs recorded before the flag existed).
QUIET = {"prompts": 1, "tool_format": "schemas"}


def command(task: str, settings: dict) -> str:
    """The command line that made a task's run, from its recorded settings."""
    flags = [f"--tasks {task}"]
    settings = {"held_out": "seeds", **settings}  # recorded before --held-out existed: seeds only
    flags += [f"--{name.replace('_', '-')} {_value(settings[name])}" for name in FLAGS
              if settings.get(name) is not None and settings[name] != QUIET.get(name)]
    lines = [f"python benchmarks/grpo_train.py --model {settings['model']} --write-real"]
    for flag in flags:  # continuation lines within the page's 90 characters
        if len(lines[-1]) + len(flag) + 3 > 86:
            lines.append("   ")
        lines[-1] += f" {flag}"
    return " \\\n".join(lines)


def _value(setting: object) -> str:
    """A setting as the command line writes it (a list: its items, space-separated)."""
    return " ".join(map(str, setting)) if isinstance(setting, list) else str(setting)


def run_id(run: dict) -> str:
    """What names one recorded run: its task, the scoring version and the CPU seconds it trained for (a
    measured figure no rerun repeats), so a reading written for one run never attaches to a rerun."""
    return f"{run['task']} v{scoring_version(run)} {run['train_cpu_s']}"


# What each kept run shows, from its own figures (the tables above each) and TRL's step logs, keyed by
# :func:`run_id`.
READING: dict[str, str] = {
    "tasks/order_status v4 3229.4": (
        "Missed. The warm start (20 steps of 2 on the train split's 96 examples, less than one pass) looked the "
        "order up and then wrote a reply with no call, which ends the episode with the customer unanswered: "
        "0.255, the lookup's credit alone. GRPO's 9 steps (6 with rollouts that scored differently; training "
        "reward 0.197 over the first 2 steps, 0.239 over the last 2) left every held-out episode as it was. The "
        "budget, about 50 CPU-minutes for the warm start and GRPO together (two tasks side by side on this "
        "2-core machine, one thread each), bought those 9 steps; a warm start that makes at least one pass over "
        "its demonstrations, and more steps, are what this run did not have."
    ),
    "tasks/refund v4 3074.4": (
        "Missed. The warm start refunded right after the order lookup, without checking the payment, in 48 of "
        "50 held-out episodes: 25 refunds the case did not owe, -0.399. Six GRPO steps took the refund away: "
        "every held-out episode now checks the order, then the payment, then looks one of them up again, and "
        "that third call ends it (`--max-calls 3`) before any reply, 0.100 on all 50. That is +0.499 paired "
        "over the warm start, on wordings it never trained on, and 0.374 below `boilerplate`: none of the 25 "
        "refunds owed is made and no customer is answered. GRPO learned what costs (a refund not owed takes the "
        "episode below 0) faster than what pays (the refund owed, the answer), and looking without answering is "
        "no exploit: it sits below every policy of the suite that answers. Next: a warm start of at least one "
        "pass, a call cap that leaves room for the reply after two lookups (`--max-calls 4`), and more steps "
        "than this run's 6."
    ),
    "tasks/ticket_classify v2 5144.0": (
        "Under scoring v2 the gain over the warm start met the then target by its letter, and the gain is not the "
        "one this run was built for. Its demonstrations "
        "write the call's priority before its category (`--first-arguments priority`; until now the category came "
        "first). The idea: GRPO weighs each token by its rollout's advantage, so a priority written after a category "
        "the group disagrees on is pushed up or down with the category's credit, and the priority had fallen in "
        "every earlier run; written first, a group that agrees on it cancels out on it. Read check by check, the "
        "held-out episodes say otherwise. This warm start wrote a call in all 200 episodes, but 81 of those calls "
        "were refused, so those tickets went unclassified and scored 0. The same warm start, rebuilt (loss 1.3554 "
        "to 0.0372 again), shows why on the first 12 held-out seeds: in 5 of them the category was a word from the "
        "ticket, not one of the four labels (`tracking`, `invoice`, `camera` twice, `wont pair`). After 47 GRPO "
        "steps (15 with rollouts that scored differently) every call was accepted. That repair is most of the gain. "
        "On the calls that were accepted, category accuracy moved from 0.765 to 0.805, and priority credit fell "
        "from 0.714 to 0.642, with 36 priorities two or more levels off against 9 of 119 before. So writing the "
        "priority first did not keep it. The honest yardstick is the category-first warm start, scored on the same "
        "200 seeds in the frozen-trunk probe below: 0.440 [0.380, 0.500]. Against it this model's 0.497 is ahead by "
        "0.058 paired, 95% CI [-0.024, 0.139], which is not a gain. Both sit below the customer's own labels "
        "(`declared_labels`, above). The gain is work, not an exploit: it comes from accepted, correctly labelled "
        "calls, and the adversarial suite's label-free policies (`spam`, `constant_labels`, `escalate_first`) "
        "score below it. Earlier CPU runs, all category-first and none meeting the target, have records in "
        "`results/grpo_real/probes/`. (1) Full fine-tuning at temperature 1.0 (`tasks_ticket_classify_t1.0.json`, "
        "60 held-out seeds, 44 steps): category 0.583 to 0.783, priority credit 0.800 to 0.658, score 0.467 "
        "[0.353, 0.580] to 0.508 [0.396, 0.621]. (2) Temperature 1.2 with a KL penalty to the warm start "
        "(`--beta 0.04`, `tasks_ticket_classify_t1.2_beta0.04.json`) reached the very same 60 held-out episodes; "
        "a GRPO step at learning rate 0 plays all 60 as before, so that is not an artefact of the evaluation. "
        "(3) A frozen trunk (`--train-layers 8`, 28.3M parameters, temperature 1.2, 200 held-out seeds, "
        "`tasks_ticket_classify_t1.2_frozen8.json`) got worse: 0.333 [0.275, 0.390] against 0.440 [0.380, 0.500], "
        "priority credit 0.770 to 0.643. In every run GRPO gave up priority, whatever the argument order, the "
        "temperature, the anchor or the layers trained."
    ),
    "tasks/payment_failure v2 5189.3": (
        "Missed. With brief follow-ups (`--follow-ups brief`) the rollouts reached the reply: 109.5 tokens and two "
        "calls on average, none cut at the cap, where the first order_status run's (cap 256, full follow-ups, "
        "`probes/tasks_order_status_cap256.json`) ended after their first lookup. But "
        "the budget bought 10 GRPO steps. A step of 8 rollouts cost about 7 CPU-minutes (190-270 s wall on 2 "
        "threads) against 1.5 on ticket_classify: each of its generation turns re-reads a prompt of about 1,090 "
        "tokens, 745 of them the ten tools' schemas, and the backward pass runs over sequences of 1,300-1,500 "
        "tokens. 7 of the 10 groups scored alike. Held-out, the trained model makes the warm start's calls in 99 "
        "of 100 episodes (look the payment up, then answer) and never refunds, where the careful agent refunds 42 "
        "of these 100 customers (the checkout failed but the charge was captured). Its paired gain, +0.042 "
        "(95% CI [0.003, 0.081]), is the judge's grade of its replies, 0.172 to 0.210; the steps done and the "
        "tickets resolved (0.470) did not move. The intervals overlap, so the target is missed, and both models "
        "sit below `boilerplate` (0.574: the lookup and a canned reply). What gain there is, is not an exploit: "
        "no refund, owed or not, and no refused call. Before brief follow-ups, GPU probes on an H200 at a cap of "
        "256 showed the old failure on three resolver tasks (`probes/gpu_cap256_*.json`, 24 steps of 8, 40 "
        "held-out seeds each): rollouts of 25-34 tokens, one call, and no held-out gain (payment_failure after "
        "warm starts of 8 and 20 steps 0.261 to 0.181 and 0.408 to 0.405, refund 0.172 to 0.169, order_status "
        "0.251 to 0.100). A second CPU run (`probes/tasks_payment_failure_signatures_warm10.json`) tried to leave "
        "GRPO something to learn and to buy more steps: the tools listed as signature lines (`--tool-format "
        "signatures`, a first prompt of 736 tokens), a warm start of 10 steps (loss 1.2211 -> 0.6199), 2 customers "
        "a step with 4 rollouts each, lr 2e-05, otherwise as above. Teacher-forced on 40 training decisions after "
        "the lookup (seeds 200-239), a warm start of 10 steps sampled a refund with probability 0.09-0.35 whatever "
        "the payment showed, and one of 20 steps 0.07-0.12: neither had learned when a refund is owed (a duplicate "
        "capture, or a failed checkout whose charge was captured), so the groups' rollouts did differ on it. The "
        "budget bought 16 steps (5.2 CPU-min each, 83.0 CPU-min of GRPO, 89.1 with the warm start), 15 of them "
        "with rollouts that scored differently, and the training reward did not rise (0.186 over the first 4 steps, "
        "0.197 over the last 4). Held-out, 100 seeds: 0.361 [0.307, 0.414] -> 0.277 [0.248, 0.305], worse (paired "
        "-0.084 [-0.123, -0.045]). Neither model refunds where the case owes one (42 customers: 0.161 -> 0.150); "
        "the loss is in the replies: the judge's grade fell from 0.119 to 0.046 and the customers who only needed "
        "an answer scored 0.554 -> 0.383. The short warm start also ended 31 of 100 episodes after the lookup "
        "with text, not a call (32 after GRPO). A 135M model with 16 groups of rollouts did not find the "
        "payment-status rule from the episode score alone."
    ),
}


def _made_by(task: str, settings: dict, note: str) -> list[str]:
    """The command block that made a run, then the head of its before/after table."""
    return ["", f"<!-- not-run: {note} -->", "```bash", command(task, settings), "```", "",
            "| held-out, mean [95% CI] | warm-started | GRPO-trained |", "|---|---:|---:|"]


def task_section(run: dict) -> tuple[list[str], str, dict[str, list[float]]]:
    """The page's section for one task, its target line, and the suite's scores on its held-out seeds."""
    task, s = run["task"], run["settings"]
    before = [e["score"] for e in run["before"]["episodes"]]
    after = [e["score"] for e in run["after"]["episodes"]]
    b, a = ci(before), ci(after)
    seeds = [e["seed"] for e in run["before"]["episodes"]]
    split = test_split(run)
    lines = [
        f"## {task}",
        "",
        f"Warm start: {run['warm_start']['steps']} supervised steps (batch 2, lr {s['warm_lr']}) on "
        f"{_demos(run['warm_start'])} of the careful agent on training seeds 100-{99 + s['demo_seeds']}, "
        f"loss {run['warm_start']['loss_first']} -> {run['warm_start']['loss_last']}. GRPO: "
        f"{run['steps_done']} steps of {s['generations'] * s.get('prompts', 1)} rollouts ({_customers(s)}, training "
        f"seeds 0..{_micro(s)}), "
        f"lr {s['lr']}, at most {s['max_calls']} calls and {s['max_completion']} tokens a rollout, full "
        f"fine-tuning (no LoRA), {s['threads'] or 'default'} torch thread(s){_tools(s)}. Held-out: seeds "
        f"{seeds[0]}-{seeds[-1]}, greedy, at most {s['eval_tokens']} tokens a reply; {_held_out(run)}. Made by",
        *_made_by(task, s, "an hour of CPU"),
        f"| episode score | {_fmt(b)} | {_fmt(a)} |",
        f"| episodes scoring > 0 | {sum(v > 0 for v in before)}/{len(before)} | {sum(v > 0 for v in after)}/{len(after)} |",
    ]
    wb, wa = work(run["before"]["episodes"], task), work(run["after"]["episodes"], task)
    for key, label in WORK_ROWS:
        if math.isnan(wb[key]) and math.isnan(wa[key]):
            continue
        lines.append(f"| {label} | {wb[key]:.3f} | {wa[key]:.3f} |")
    lines += case_rows(run["before"]["episodes"], run["after"]["episodes"])
    curve = run["reward"]
    k = max(1, len(curve) // 4)
    lines += [
        "",
        f"Cost: warm start {run['warm_start']['cpu_s'] / 60:.1f} CPU-min, GRPO {run['grpo_cpu_s'] / 60:.1f} CPU-min "
        f"({run['train_cpu_s'] / 60:.1f} CPU-min together, the budget {s['budget_minutes']}); held-out evaluation "
        f"{run['before']['cpu_s'] / 60:.1f} + {run['after']['cpu_s'] / 60:.1f} CPU-min; the whole run "
        f"{run['wall_s'] / 60:.1f} min wall, peak RSS {run['peak_rss_mb'] / 1024:.1f} GB.",
        f"GRPO's training reward (mean of each step's rollouts): first {k} steps "
        f"{sum(curve[:k]) / k:.3f}, last {k} steps {sum(curve[-k:]) / k:.3f}; "
        f"steps whose rollouts differed: {sum(v > 0 for v in run['reward_std'])} of {len(curve)}.",
    ]
    if run.get("completion_tokens"):  # recorded by the current script
        tokens, clipped = run["completion_tokens"], run["clipped"]
        lines.append(f"Rollout length: {sum(tokens) / len(tokens):.1f} tokens on average (the cap "
                     f"{s['max_completion']}); rollouts cut at the cap: {sum(clipped) / len(clipped):.0%}.")
    scores = suite(task, seeds, split)
    table = {policy: ci(values) for policy, values in scores.items()}
    from csr_marl.text.scoring import SCORING_VERSION

    recorded = scoring_version(run)
    when = ("" if recorded == SCORING_VERSION else
            f" (scored now, under scoring v{SCORING_VERSION}; the model's figures above were scored under "
            f"v{recorded} when the run was recorded, so the two compare only once the model is retrained)")
    lines += ["", f"The same held-out seeds played by the scripted ladder and the adversarial suite{when}:", "",
              "| policy | score |", "|---|---:|"]
    lines += [f"| {policy} | {_fmt(stat)} |" for policy, stat in sorted(table.items(), key=lambda kv: -kv[1][0])]
    beaten = [p for p, stat in table.items() if a[0] > stat[0]]
    lines += ["", f"The GRPO-trained model's mean is above {len(beaten)} of these {len(table)} policies' means"
              + (f" (its v{recorded} mean against their v{SCORING_VERSION} means)." if when else ".")]
    if run_id(run) in READING:
        lines += ["", READING[run_id(run)]]
    return lines + [""], target_line(task, run, scores), scores


def test_split(run: dict) -> str:
    """The side of the ticket bank's split a run's held-out evaluation played (before ``--held-out``: all)."""
    return run["held_out"]["test_split"] if "held_out" in run else "all"


def scoring_version(run: dict) -> int:
    """The scoring version a run's episodes were scored under (runs recorded before the key existed: v2)."""
    return run.get("scoring_version") or 2


def _held_out(run: dict) -> str:
    """What the held-out seeds hold that the training never showed."""
    kind = run.get("held_out")
    if kind is None or kind["held_out"] == "seeds":
        return "the same ticket templates and wordings as the training (held out: seeds only)"
    whole = ", ".join(f"`{t}`" for t in kind["templates"])
    return ("tickets from the bank's test split, never trained on (the warm start and GRPO played its train "
            "split): " + (f"the template{'s' * (len(kind['templates']) > 1)} {whole} held out whole and " if whole else "")
            + f"held-out wordings of the other {len(kind['wordings'])}")


def _load(path: Path) -> dict:
    """A kept run, with where it is kept (``kept_as``, relative to the results folder)."""
    return {**json.loads(path.read_text()), "kept_as": path.relative_to(RESULTS).as_posix()}


WARM_START_KEYS = ("examples", "closings", "steps", "loss_first", "loss_last")


def beside(gpu_run: dict, cpu_runs: list[dict]) -> dict | None:
    """The CPU run a GPU run was made beside: the same task from the same warm start (the page's run or a
    probe), else the page's run of the task (the first of ``cpu_runs``)."""
    same_task = [run for run in cpu_runs if run["task"] == gpu_run["task"]]
    for run in same_task:
        if all(run["warm_start"].get(k) == gpu_run["warm_start"].get(k) for k in WARM_START_KEYS):
            return run
    return same_task[0] if same_task else None


def gpu_section(run: dict, cpu_run: dict | None) -> list[str]:
    """A larger configuration on a lent GPU (a bonus: the targets are the CPU runs'), beside the CPU run
    of the same task: the same warm start and held-out seeds, bigger groups and more steps."""
    task, s = run["task"], run["settings"]
    before = [e["score"] for e in run["before"]["episodes"]]
    after = [e["score"] for e in run["after"]["episodes"]]
    b, a = ci(before), ci(after)
    wb, wa = work(run["before"]["episodes"], task), work(run["after"]["episodes"], task)
    curve, spread, entropy = run["reward"], run["reward_std"], run.get("entropy", [])
    cuts = [round(len(curve) * q / 4) for q in range(5)]
    parts = [(lo, hi) for lo, hi in zip(cuts, cuts[1:]) if hi > lo]
    temperature = s.get("temperature", 1.0)
    same_start = cpu_run is not None and all(cpu_run["warm_start"].get(k) == run["warm_start"].get(k)
                                             for k in WARM_START_KEYS)
    cpu_seeds = len(cpu_run["after"]["episodes"]) if cpu_run else 0
    seeds = (f"the same {len(after)} held-out seeds" if cpu_seeds == len(after)
             else f"the first {len(after)} of its {cpu_seeds} held-out seeds" if cpu_seeds > len(after)
             else f"{len(after)} held-out seeds")
    lines = [
        f"## On a GPU (bonus): {task}, groups of {s['generations']}"
        + ("" if temperature == 1.0 else f", sampling temperature {temperature:g}"),
        "",
        f"{run['device']['gpu']} ({run['machine']['cores']} CPU cores), bf16 autocast over float32 weights. "
        + (f"The same warm start as the CPU run `{cpu_run['kept_as']}`" if same_start else "A warm start of its own")
        + f" ({run['warm_start']['steps']} steps on {_demos(run['warm_start'])}, loss {run['warm_start']['loss_first']} -> "
        f"{run['warm_start']['loss_last']}) and {seeds}; GRPO in groups of "
        f"{s['generations']} at sampling temperature {temperature:g} for {s['wall_minutes']} wall-clock minutes "
        f"(`--wall-minutes`): {run['steps_done']} steps, lr {s['lr']}"
        + (f", KL weight {s['beta']:g} to the warm start" if s.get("beta") else "") + ". The whole run took "
        f"{run['wall_s'] / 60:.1f} min. Made by",
        *_made_by(task, s, "needs a GPU"),
        f"| episode score | {_fmt(b)} | {_fmt(a)} |",
    ]
    lines += [f"| {label} | {wb[key]:.3f} | {wa[key]:.3f} |" for key, label in WORK_ROWS
              if not (math.isnan(wb[key]) and math.isnan(wa[key]))]
    lines += ["", "| GRPO steps | mean training reward | steps whose rollouts differed | mean token entropy |",
              "|---|---:|---:|---:|"]
    for lo, hi in parts:
        ent = f"{sum(entropy[lo:hi]) / (hi - lo):.4f}" if entropy else "n/a"
        lines.append(f"| {lo + 1}-{hi} | {sum(curve[lo:hi]) / (hi - lo):.3f} | "
                     f"{sum(v > 0 for v in spread[lo:hi])} of {hi - lo} | {ent} |")
    if cpu_run is not None and cpu_seeds == len(after):
        same = sum(x == y for x, y in zip(run["after"]["episodes"], cpu_run["after"]["episodes"]))
        lines += ["", f"Held-out episodes identical, call for call and check for check, to that CPU run's GRPO-trained "
                      f"model's: {same} of {len(after)}."]
    lines += ["", GPU_READING.get(gpu_name(task, s), ""), ""]
    return lines


# What the GPU run shows, from its figures above.
GPU_READING = {
    "tasks_ticket_classify": (
        "More steps and bigger groups did not help, and the table says why: the warm start leaves the model "
        "almost deterministic (its loss ends at 0.043), so all 16 rollouts of a group mostly make the same call "
        "and score alike, and GRPO's advantage is zero. Token entropy falls from 0.024 over the first quarter "
        "of the steps to 0.003-0.004 over the last two, where one group in about 40 differs. The GRPO-trained model lands on exactly the held-out decisions "
        "of the CPU run (44 steps of 8), so the first few dozen steps with a signal settle what GRPO learns "
        "here, and the CPU budget was not the limit. Turning the sampling temperature up is not enough on its "
        "own: a CPU probe at 1.5 (`--temperature 1.5`, the same warm start, stopped after 5 steps) broke the "
        "calls -- 25-50% of rollouts held one, none scored above 0, token entropy 3.2-4.7. A probe at 1.2 (10 "
        "steps, no held-out scoring) kept them: 75-100% of rollouts held a call, token entropy 0.15-0.80, and "
        "7 of 10 groups scored unevenly, against about 4 in 10 at 1.0. Next: a full run at 1.2 (or a shorter or "
        "label-smoothed warm start, or an entropy bonus), scored on the held-out seeds, before more compute."
    ),
    "tasks_ticket_classify_t1.2": (
        "At temperature 1.2 the rollouts explored: token entropy stayed at 0.05-0.5 instead of falling to 0.003, "
        "and 22 of 69 groups scored unevenly (2-5 in 17 over the last three quarters), where at 1.0 one in about "
        "40 did over the last half. Yet the held-out "
        "decisions are once more those of the CPU run at 1.0, all 60 episodes identical, with category accuracy "
        "up from 0.583 to 0.783 and priority credit down from 0.800 to 0.658. Three runs -- CPU at 1.0, H100 at 1.0 "
        "for 157 steps, H200 at 1.2 for 69 steps -- land on the same greedy decisions: more signal does not move "
        "them, so the limit is what the reward teaches, not how much of it GRPO sees. The episode score is the "
        "category check times the priority credit, so a rollout with the category wrong scores 0 whatever its "
        "priority, and the priority is only ever taught through rollouts whose category is right; nothing holds "
        "it where the warm start left it. A KL penalty to the warm start did not hold it either: the CPU run at 1.2 "
        "with `--beta 0.04` (the ticket_classify section) reached the same 60 episodes. Four runs, one answer: "
        "what to try next is how the priority gets taught -- only rollouts whose category is right carry it -- "
        "e.g. a warm start that leaves the priority less certain, or LoRA, not more steps (a frozen trunk, the "
        "ticket_classify section's CPU run (3), did not keep it either)."
    ),
    "tasks_order_status_t1.2": (
        "On order_status, GRPO at temperature 1.2 made the model worse, as the first CPU run at 1.0 (cap 256, "
        "`probes/tasks_order_status_cap256.json`) did. Every warm-started episode looked the order up and "
        "answered, and the tool refused every answer (none was recorded), as it refused those of the CPU run's "
        "warm start above, which wrote `respond_user` without its message; after 49 steps 10 of the 20 "
        "episodes look the order up three times and never answer, 7 answer after a second lookup and 3 look it "
        "up again after answering. The "
        "signal was there early (18 of the first 24 groups scored unevenly, 3 of the last 25), yet held-out the "
        "new habits score less: three lookups and no answer 0.100, a second lookup then the answer 0.150, "
        "against 0.255 for the warm start's lookup and answer. Why GRPO moved there (sampled answers at 1.2 that "
        "score below no answer at all, say) this run does not settle; its rollouts were short (27 tokens on "
        "average, the cap 256), so they rarely reached an answer with a message. The v2 CPU run with brief "
        "follow-ups and a cap of 576 (`probes/tasks_order_status_v2_seeds.json`) is where GRPO taught the model "
        "to write one."
    ),
}


def render() -> Path:
    from csr_marl.text.scoring import SCORING_VERSION

    runs = [_load(p) for p in sorted(RUNS.glob("*.json"))]
    sections, lines, current = [], {}, []
    for run in runs:
        body, lines[run["task"]], scores = task_section(run)
        sections += body
        if scoring_version(run) == SCORING_VERSION:
            current.append(reached(run, scores))
    targets = [chosen_target(slot, runs, lines) for slot in TARGET_TASKS]
    kept = runs + [_load(p) for p in sorted((RUNS / "probes").glob("*.json"))]
    for path in sorted((RUNS / "gpu").glob("*.json")):
        gpu_run = json.loads(path.read_text())
        sections += gpu_section(gpu_run, beside(gpu_run, kept))
    machine = runs[0]["machine"] if runs else {}
    text = "\n".join([
        "# GRPO on a real model: SmolLM2-135M-Instruct on a CPU",
        "",
        "Regenerate one task with `python benchmarks/grpo_train.py --model smollm2-135m --write-real --tasks TASK` "
        "and the settings its section gives (`--held-out` included); `--render-real` rewrites this page from `results/grpo_real/` "
        "(the ladder and the adversarial suite are replayed, seconds). The model: SmolLM2-135M-Instruct, "
        "134,515,008 parameters in float32, fetched with `csr-marl models fetch smollm2-135m` "
        "([the local model](../../llm/local-model.md)), its own tool-calling format. "
        f"Machine: {machine.get('cpu', '?')}, {machine.get('cores', '?')} cores, no GPU (the GPU run at the end "
        "is a bonus, no target's).",
        "",
        "Each task: a supervised warm start on the careful scripted agent's calls (training seeds), the "
        "held-out evaluation, GRPO through `environment_factory` on training seeds within a CPU budget "
        "(warm start and GRPO together), the held-out evaluation again. The reward is the episode score "
        "(below 0 after damage, at most 1), which the adversarial suite's policies cannot win without the work.",
        "",
        "## Targets",
        "",
        *targets,
        "",
        *target_rule(),
        "",
        f"**What was reached on the current score (scoring v{SCORING_VERSION}).** " + (
            " ".join(current) + " What each model did is read in its section below." if current else "No run yet."),
        "",
        "**Kept from scoring v2** (held-out seeds of the training templates; these runs count for no target). "
        "On `tasks/ticket_classify` GRPO moved the held-out score from 0.325 to 0.497 on 200 seeds, by repairing "
        "calls the warm start wrote with a word from the ticket in place of a category; against an earlier "
        "category-first warm start on the same seeds it is not ahead, and GRPO gave up priority in every run on "
        "that task. On `tasks/payment_failure` it gained +0.042 paired, from better-graded replies, with "
        "intervals that overlap (10 steps); a second try with signature lines and two customers a step made the "
        "replies worse (0.361 to 0.277), and neither learned when a refund is owed. The earlier order_status run "
        "(0.259 to 0.684 on 100 seeds: the warm start wrote `respond_user` with no message, and GRPO taught it "
        "to write one, but the customers owed a refund or a shipping update scored 0.150 before and after) is "
        "kept as `probes/tasks_order_status_v2_seeds.json`.",
        "",
        "**Found along the way:** TRL counts tool results inside `--max-completion` and ends a rollout, "
        "silently, where a result would pass it. Each result repeated the whole decision (some 200-290 tokens "
        "on a resolver task), so at the earlier cap of 256 every resolver rollout, on the CPU and on the GPU, "
        "ended after its first call and never reached a reply. `--follow-ups brief` shows only what changed on "
        "the ticket, and the script warns when the cap would cut the careful agent's own episodes. **Cost "
        "limits the resolver tasks:** a GRPO step of 8 rollouts costs about 7 CPU-minutes on payment_failure "
        "with the tools' JSON schemas (745 of the prompt's 1,087 tokens) and 4-5 with signature lines "
        "(`--tool-format signatures`, 736), against 1.5 on ticket_classify. A larger run on a GPU (groups of "
        "16, 157 steps; last sections) reached the same held-out decisions as its CPU run on ticket_classify: "
        "the rollouts stop differing, not the compute. Full fine-tuning, no LoRA.",
        "",
        *sections,
    ])
    atomic_write(PAGE, text.rstrip() + "\n")
    print(f"wrote {PAGE}")
    return PAGE


def target_rule() -> list[str]:
    """How the target lines are judged, and what the ticket bank can hold out for each target task."""
    from csr_marl.grpo.backends import held_out_side
    from csr_marl.text.scoring import SCORING_VERSION

    sides = []
    for task in (task for slot in TARGET_TASKS for task in slot):
        side = held_out_side(task)
        whole = ", ".join(f"`{t}`" for t in side["templates"])
        sides.append(f"`{task}`: " + (f"{whole} held out whole and held-out wordings of its other "
                                       f"{len(side['wordings'])} templates" if whole else
                                       f"held-out wordings only (all {len(side['wordings'])} of its templates train)"))
    return [
        f"Each line compares, on the same held-out seeds and on the current score (scoring v{SCORING_VERSION}), the "
        "GRPO-trained model with its warm start and with the task's policy that skips reading (`boilerplate`: the "
        "heuristic's steps and a canned reply; `declared_labels` at triage), paired seed by seed (the mean "
        "difference and its 95% t-interval). It is met when both intervals lie above 0 on tickets the training "
        "never saw (`--held-out templates`: the warm start and GRPO play the ticket bank's train split, the "
        "evaluation its test split). What the bank holds out: " + "; ".join(sides) + ". A run scored under an "
        "older version counts for no target until it is rerun.",
    ]


def chosen_target(tasks: tuple[str, ...], runs: list[dict], lines: dict[str, str]) -> str:
    """The target line for one of :data:`TARGET_TASKS`: the first of ``tasks`` with a run on the current
    score, else the first with a kept run, else a line saying none was run."""
    from csr_marl.text.scoring import SCORING_VERSION

    kept = [run for task in tasks for run in runs if run["task"] == task]
    current = [run for run in kept if scoring_version(run) == SCORING_VERSION]
    if current or kept:
        return lines[(current or kept)[0]["task"]]
    return target_line(" or ".join(tasks), None)


def _demos(warm: dict) -> str:
    """The warm start's examples: the careful agent's calls, and (in current runs) the closing replies."""
    closings = warm.get("closings", 0)
    calls = f"{warm['examples'] - closings} calls"
    return calls + (f" and {closings} closing replies ('Done.' once the episode is over)" if closings else "")


def _customers(settings: dict) -> str:
    """Whom a step's rollouts play: one customer, or several, each a group of its own."""
    prompts = settings.get("prompts", 1)
    return "one customer a step" if prompts == 1 else f"{prompts} customers a step, {settings['generations']} rollouts each"


def _tools(settings: dict) -> str:
    """How the prompt listed the tools, where not as JSON schemas (the default)."""
    return ", the tools listed as one signature line each" if settings.get("tool_format") == "signatures" else ""


def _micro(settings: dict) -> str:
    micro = settings.get("micro_batch")
    return f"; gradients accumulated over backward passes of {micro} rollouts" if micro else ""
