"""``csr-marl agent``: a chat model (any OpenAI-compatible endpoint) on the floor, scored like the baselines."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from ..text.endpoint import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, Endpoint, EndpointError
from ..text.judge import ChatJudge
from ..config.domain import ROLES
from ..text.players import LLM, parse_team
from ..text.tasks import task_roles
from ..text.report import passk_markdown, write_agent_report
from ..text.runner import AgentRunner
from .common import check_output_folder, console, escape, fail, friendly_errors, parse_sets, print_estimates, with_overrides
from .sweep import SETS, invocation


@friendly_errors
def agent_command(
    ctx: typer.Context,
    scenario: str = typer.Argument(..., help="Scenario name (e.g. tasks/resolve, standard_day) or a YAML path."),
    base_url: Optional[str] = typer.Option(
        None, "--base-url", envvar=ENV_BASE_URL, show_envvar=True,
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (vLLM), http://127.0.0.1:11434/v1 (Ollama).",
    ),
    model: Optional[str] = typer.Option(None, "--model", "-m", envvar=ENV_MODEL, show_envvar=True, help="Model name the endpoint serves."),
    api_key: Optional[str] = typer.Option(
        None, "--api-key", envvar=ENV_API_KEY, show_envvar=True, show_default=False,
        help="API key (local servers need none).",
    ),
    roles: Optional[str] = typer.Option(None, "--roles", help="Roles the model plays, comma list (e.g. resolver). \\[default: a named task's roles (tasks/refund: resolver), every role for another scenario, unless --agents is given]"),
    agents: Optional[str] = typer.Option(
        None, "--agents",
        help="Who plays each role: ROLE=PLAYER comma list; PLAYER is llm, human, a built-in policy "
        "(random, heuristic, ...) or checkpoint:PATH. Roles not named: heuristic.",
    ),
    episodes: int = typer.Option(5, "--episodes", "-n", help="Episodes (customer-days); episode e has baseline episode e's customers."),
    seed: int = typer.Option(0, "--seed", "-s", help="Base seed; episode e uses SeedSequence(seed, spawn_key=(e,))."),
    k: int = typer.Option(1, "--k", help="Tries per episode, on the same customers; pass^1..pass^k are reported."),
    out: Path = typer.Option(Path("runs/agent"), "--out", "-o", help="Folder for agent_baseline.*, agent_passk.*, agent_tickets.csv."),
    max_turns: Optional[int] = typer.Option(None, "--max-turns", help="Stop a try after this many model calls (its KPIs cover the minutes so far)."),
    temperature: Optional[float] = typer.Option(None, "--temperature", help="Sampling temperature \\[default: the server's]; above 0 for tries to differ."),
    grade_threshold: float = typer.Option(0.25, "--grade-threshold", help="Least reply grade (of 0.5) for a resolved ticket to count as a success."),
    episode_bar: float = typer.Option(1.0, "--episode-bar", help="Share of its tickets that must succeed for an episode to succeed."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds each model request may take as a whole (connecting, a reply that trickles in, retries)."),
    retries: int = typer.Option(2, "--retries", help="Retries of a request on transport errors and 429/5xx."),
    judge_model: Optional[str] = typer.Option(
        None, "--judge-model",
        help="Grade replies with this model on the same endpoint (csr_marl.text.judge) instead of the "
        "deterministic rubric, which stays its fallback on timeouts and unusable answers.",
    ),
    judge_weight: float = typer.Option(
        1.0, "--judge-weight", help="With --judge-model: grade = w * judge + (1 - w) * rubric."
    ),
    sets: Optional[list[str]] = SETS,
) -> None:
    """Play episodes with a chat model on some roles; print the [START]/[STEP]/[END] log, the table, pass^k.

    A ticket the model handled succeeds when it ended resolved with a reply graded >= --grade-threshold.

    pass^k = mean over tickets (and episodes) of C(c,k)/C(n,k), c successes in n = --k tries (tau-bench).
    """
    team = parse_team(agents, roles, default_roles=task_roles(scenario, default=ROLES))
    overrides = parse_sets(sets)
    check_output_folder(out, "--out")  # every input is checked before the first request
    endpoint = grader = None
    if LLM in team.values():
        endpoint = Endpoint.resolve(base_url, model, api_key, timeout=timeout, max_retries=retries)
    if not 0.0 <= judge_weight <= 1.0:
        fail(f"--judge-weight must lie in [0, 1], got {judge_weight}")
    if judge_model is not None:
        grader = ChatJudge(
            Endpoint.resolve(base_url, judge_model, api_key, timeout=timeout, max_retries=retries),
            judge_weight=judge_weight,
        )
    try:
        runner = AgentRunner(
            scenario, team, endpoint=endpoint, temperature=temperature, seed=seed, max_turns=max_turns,
            grade_threshold=grade_threshold, episode_bar=episode_bar, overrides=overrides,
            emit=lambda line: print(line, flush=True), grader=grader,
        )
        if endpoint is not None:
            endpoint.client  # noqa: B018 - the openai package is there (or one line naming the extra)
        report = runner.run(episodes=episodes, k=k)
    except EndpointError as error:
        fail(str(error))
    except (ImportError, EOFError) as error:
        fail(str(error))
    rows = report.rows()
    title = f"{scenario} · team {','.join(f'{r}={p}' for r, p in team.items())} · {episodes} episodes · mean ± 95% CI half-width"
    print_estimates(with_overrides(title, overrides), "scenario", rows, lambda row: row.scenario)
    print(f"pass^k ({episodes} episodes x {k} tries)\n\n{passk_markdown(report)}\n", flush=True)
    console.print(f"[dim]success: {escape(report.success_rule)}[/]", highlight=False, soft_wrap=True)
    if ctx.params.get("api_key"):
        ctx.params["api_key"] = "<hidden>"  # the reports record the command line, never the key
    paths = write_agent_report(report, out, command=invocation(ctx))
    console.print(f"[dim]wrote {escape(', '.join(str(p) for p in paths))}[/]", highlight=False, soft_wrap=True)
    sys.stdout.flush()
