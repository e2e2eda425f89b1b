"""GRPO on the contact center with TRL: one file, top to bottom, CleanRL style.

Trains a chat model with TRL's ``GRPOTrainer`` through csr_marl's ``environment_factory`` on one-ticket
tasks, in process or against a running ``csr-marl serve`` (``--server``), and logs the mean episode
score of each step's rollouts (the learning curve). Also prints the scripted-agent ladder per task.

    python benchmarks/grpo_train.py --ladder                          # the ladder table, seconds
    python benchmarks/grpo_train.py --tasks tasks/order_status --steps 5          # a smoke run, tiny model
    python benchmarks/grpo_train.py --server http://127.0.0.1:8000 --steps 5      # against csr-marl serve
    python benchmarks/grpo_train.py --memory                          # a server's memory per session
    python benchmarks/grpo_train.py --write                           # regenerate results/grpo.{json,png}

Held-out evaluation (``--eval-seeds``, seeds 10000..): by default on ticket templates and wordings the
warm start and GRPO never saw (``--held-out templates``: they play the bank's ``tickets.split: train``,
the evaluation its ``test``); ``--held-out seeds`` plays the whole bank throughout.

Model: by default a tiny Llama and a BPE tokenizer built here from the tasks' text (no download; see
csr_marl.grpo.tiny), warm-started on scripted first calls so the group's rollouts differ. It shows the
loop works; it does not learn customer service. ``--model`` loads a local pretrained instruct model
instead: ``smollm2-135m`` (fetched once, ``csr-marl models fetch``) or a transformers folder; in float32
with ``use_cpu`` on a machine without a GPU (see docs/llm/grpo.md).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from csr_marl.llm.chat_format import TOOL_FORMATS

RESULTS = Path(__file__).resolve().parent / "results"
ONE_TICKET = ("tasks/payment_failure", "tasks/one_ticket")


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(ONE_TICKET), help="one-ticket tasks to train on, one run each")
    parser.add_argument("--server", default=None, help="a csr-marl serve URL (default: in process)")
    parser.add_argument("--model", default=None, help="a fetched model (smollm2-135m) or a transformers folder (default: the tiny model)")
    parser.add_argument("--steps", type=int, default=20, help="GRPO steps per task")
    parser.add_argument("--generations", type=int, default=4, help="rollouts per prompt (the GRPO group)")
    parser.add_argument("--prompts", type=int, default=1, help="prompts (seeds) per step")
    parser.add_argument("--micro-batch", type=int, default=None,
                        help="rollouts per backward pass (gradients accumulated over a step; default: all of them)")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--temperature", type=float, default=1.0,
                        help="sampling temperature of GRPO's rollouts (above 1: a group's rollouts differ more)")
    parser.add_argument("--beta", type=float, default=0.0,
                        help="with --model: weight of the KL penalty to the warm-started model (TRL's beta; 0: none). "
                             "It holds what no group's rewards speak for, e.g. a label the rollouts agree on")
    parser.add_argument("--train-layers", type=int, default=0,
                        help="with --model: GRPO updates only the last N transformer blocks and the final norm, "
                             "the embeddings and the blocks below frozen (the warm start still trains them all; 0: all)")
    parser.add_argument("--max-calls", type=int, default=4, help="tool calls per rollout before it is cut")
    parser.add_argument("--max-completion", type=int, default=160, help="tokens per rollout, tool results included")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's; 1 on a busy shared CPU)")
    parser.add_argument("--warm-start", type=int, default=0,
                        help="with --model: supervised steps on the careful agent's demonstrations (training seeds) first")
    parser.add_argument("--warm-lr", type=float, default=5e-5, help="the warm start's learning rate")
    parser.add_argument("--first-arguments", nargs="+", default=None, metavar="NAME",
                        help="with --warm-start: the demonstrations' calls write these arguments first, in this order "
                             "(e.g. priority: what a group agrees on, written before what it disagrees on, takes no "
                             "credit from the other)")
    parser.add_argument("--follow-ups", choices=("full", "brief"), default="full",
                        help="what a tool's result shows of the next decision: the whole decision (full, the default) "
                             "or, on the same ticket, only what changed (brief: TRL counts tool results in "
                             "--max-completion, and a whole resolver decision is some 250 tokens)")
    parser.add_argument("--tool-format", choices=TOOL_FORMATS, default="schemas",
                        help="with a fetched model: how the prompt lists the tools: each one's JSON schema (the default) "
                             "or one short signature line each (a payment_failure prompt of 736 tokens instead of 1,087)")
    parser.add_argument("--held-out", choices=("templates", "seeds"), default="templates",
                        help="what the held-out evaluation never trained on: ticket templates and wordings (templates, "
                             "the default: warm start and GRPO on the bank's train split, evaluation on its test split) "
                             "or only seeds (seeds: the whole bank throughout)")
    parser.add_argument("--demo-seeds", type=int, default=8, help="training seeds (100..) of the warm start's demonstrations")
    parser.add_argument("--eval-seeds", type=int, default=0,
                        help="with --model: held-out seeds (10000..) scored greedily before and after GRPO")
    parser.add_argument("--eval-tokens", type=int, default=128, help="tokens per reply in the held-out evaluation")
    parser.add_argument("--budget-minutes", type=float, default=None,
                        help="CPU minutes for the warm start and GRPO together: GRPO stops at the first step past it")
    parser.add_argument("--wall-minutes", type=float, default=None,
                        help="wall-clock minutes for GRPO (a GPU's lease): it stops at the first step past them")
    parser.add_argument("--write-real", action="store_true",
                        help="with --model: keep each task's run in results/grpo_real/ and rewrite results/grpo_real.md")
    parser.add_argument("--render-real", action="store_true", help="rewrite results/grpo_real.md from results/grpo_real/")
    parser.add_argument("--ladder", action="store_true", help="print the scripted ladder per task and stop")
    parser.add_argument("--ladder-seeds", type=int, default=20)
    parser.add_argument("--memory", action="store_true", help="measure a server's memory per session and stop")
    parser.add_argument("--write", action="store_true", help="write results/grpo.json and results/grpo.png")
    return parser.parse_args()


def ladder(seeds: int) -> dict[str, dict[str, float]]:
    """Mean episode score of each scripted agent on each GRPO task (seeds 0..seeds-1)."""
    from csr_marl.text.scripted import AGENTS, play
    from csr_marl.text.tasks import GRPO_TASKS, task_session

    table = {}
    for task in GRPO_TASKS:
        session = task_session(task, seed=0)
        table[task] = {a: sum(play(session, a, s).score for s in range(seeds)) / seeds for a in AGENTS}
        print(f"{task:26s} " + "  ".join(f"{a} {v:.3f}" for a, v in table[task].items()), flush=True)
    return table


def session_memory(counts: tuple[int, ...] = (1, 16, 64), task: str = "tasks/one_ticket") -> dict:
    """Resident memory of a ``csr-marl serve`` process holding 0, 1, 16 and 64 open sessions of ``task``
    (each reset and one call in), and the memory per session it implies."""
    import socket
    import subprocess
    import sys
    import urllib.request

    from csr_marl.grpo import environment_factory

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "csr_marl", "serve", "--port", str(port), "--max-sessions",
                               str(max(counts) + 1), "--log-level", "warning"])
    url = f"http://127.0.0.1:{port}"

    def rss_mb() -> float:
        for line in Path(f"/proc/{server.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/health", timeout=2).close()
                break
            except OSError:
                time.sleep(0.2)
        measured = {"idle_mb": round(rss_mb(), 1)}
        envs = []
        for count in counts:
            while len(envs) < count:
                env = environment_factory(task, base_url=url)()
                env.reset(seed=len(envs))
                env.check_order_status()
                envs.append(env)
            time.sleep(0.5)
            measured[f"{count}_sessions_mb"] = round(rss_mb(), 1)
        top = max(counts)
        measured["per_session_mb"] = round((measured[f"{top}_sessions_mb"] - measured["1_sessions_mb"]) / (top - 1), 2)
        print(json.dumps(measured), flush=True)
        return measured
    finally:
        server.terminate()
        server.wait(timeout=10)


def model_and_tokenizer(args: argparse.Namespace, task: str):
    """The tiny local model (warm-started on the task's scripted first calls), or ``--model``: a
    fetched model's name (``smollm2-135m``) or a transformers folder, loaded in float32. A model
    fetched by ``csr-marl models fetch`` gets SmolLM2's tool-calling template and parser
    (``csr_marl.llm.chat_format``), the one the local endpoint uses."""
    if args.model:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from csr_marl.llm.chat_format import attach_parser
        from csr_marl.llm.models import MARKER, MODELS, fetch

        folder = Path(fetch(args.model)) if args.model in MODELS else Path(args.model)
        tokenizer = AutoTokenizer.from_pretrained(folder, padding_side="left")
        if (folder / MARKER).is_file():
            attach_parser(tokenizer, args.tool_format)
        # float32 weights on either device (on a GPU, GRPOConfig's bf16 autocast does the arithmetic); the
        # warm start and the held-out episodes run before the trainer places the model, so it moves here.
        device = "cuda" if torch.cuda.is_available() else "cpu"
        return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).to(device), tokenizer
    from csr_marl.grpo import tiny

    tokenizer = tiny.build_tokenizer(tiny.corpus([task], range(40)), vocab_size=2048)
    model = tiny.build_model(tokenizer, hidden=64, seed=args.seed)
    tiny.warm_start(model, tokenizer, tiny.first_calls(task, range(100, 112)), steps=120, lr=5e-3)
    return model, tokenizer


def cpu_seconds() -> float:
    """CPU time of this process, every thread counted (user + system)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def budget_callback(started: float, minutes: float, clock=None):
    """A TrainerCallback that stops training after the first step that ends past ``minutes`` of CPU
    time since ``started`` (:func:`cpu_seconds`), or of ``clock`` (e.g. ``time.time``) when given."""
    from transformers import TrainerCallback

    now = clock or cpu_seconds

    class Budget(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if now() - started >= 60 * minutes:
                control.should_training_stop = True
            return control

    return Budget()


def trainable_blocks(model, layers: int):
    """The model's decoder blocks, once ``--train-layers`` is known to fit them (checked before the warm start)."""
    blocks = model.model.layers
    if layers > len(blocks):
        raise SystemExit(f"--train-layers {layers}: the model has {len(blocks)} blocks")
    return blocks


def freeze_below(model, layers: int) -> int:
    """Leave only the last ``layers`` decoder blocks and the final norm trainable (the tied embeddings,
    hence the output head, and the blocks below stay as the warm start left them); the count trained."""
    blocks = trainable_blocks(model, layers)
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    for module in [*blocks[len(blocks) - layers:], model.model.norm]:
        for parameter in module.parameters():
            parameter.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


SPLITS = {"templates": ("train", "test"), "seeds": ("all", "all")}  # --held-out: (training split, held-out split)


def splits(args: argparse.Namespace) -> tuple[str, str]:
    """The ticket bank's split the warm start and GRPO play, and the one the held-out evaluation plays."""
    return SPLITS[args.held_out]


def held_out_kind(task: str, held_out: str) -> dict:
    """What the held-out evaluation of ``task`` holds that training never showed (printed and kept)."""
    from csr_marl.grpo.backends import held_out_side

    train, test = SPLITS[held_out]
    if held_out == "seeds":
        return {"held_out": "seeds", "train_split": train, "test_split": test, "templates": [], "wordings": []}
    return {"held_out": "templates", "train_split": train, "test_split": test, **held_out_side(task)}


def held_out(model, tokenizer, task: str, args: argparse.Namespace) -> dict:
    """Greedy episodes on the held-out seeds (10000..), on the held-out split, with what each score is
    made of, and their cost."""
    from csr_marl.grpo import demos

    began, wall = cpu_seconds(), time.time()
    episodes = demos.episodes(model, tokenizer, task, range(10_000, 10_000 + args.eval_seeds),
                              max_calls=args.max_calls, max_new_tokens=args.eval_tokens,
                              follow_ups=args.follow_ups, split=splits(args)[1])
    return {"episodes": episodes, "cpu_s": round(cpu_seconds() - began, 1), "wall_s": round(time.time() - wall, 1)}


def describe_held_out(kind: dict) -> str:
    """One line: what the held-out evaluation holds that training never showed."""
    if kind["held_out"] == "seeds":
        return "seeds only (the whole bank in training and evaluation: the same templates and wordings)"
    whole = ", ".join(kind["templates"]) or "none"
    return (f"ticket templates and wordings (train on tickets.split train, evaluate on test): templates held out "
            f"whole: {whole}; held-out wordings of {len(kind['wordings'])} more")


def train(args: argparse.Namespace, task: str) -> dict:
    import resource

    import torch
    from trl import GRPOConfig, GRPOTrainer

    from csr_marl.grpo import demos, environment_factory, task_dataset, tiny

    started = time.time()
    train_split, _ = splits(args)
    kind = held_out_kind(task, args.held_out)
    print(f"{task}: held out {describe_held_out(kind)}", flush=True)
    model, tokenizer = model_and_tokenizer(args, task)
    parameters = sum(p.numel() for p in model.parameters())
    if args.train_layers:
        trainable_blocks(model, args.train_layers)  # refused now, not after the warm start and the evaluation
    measured: dict = {}
    budget_from = cpu_seconds()
    if args.model and args.warm_start:
        examples = demos.demonstrations(task, range(100, 100 + args.demo_seeds), max_calls=args.max_calls,
                                        first=args.first_arguments or (), follow_ups=args.follow_ups,
                                        split=train_split)
        losses = tiny.warm_start(model, tokenizer, examples, steps=args.warm_start, lr=args.warm_lr, batch_size=2)
        measured["warm_start"] = {"examples": len(examples), "closings": sum(isinstance(c, str) for *_, c in examples),
                                  "steps": args.warm_start, "cpu_s": round(cpu_seconds() - budget_from, 1),
                                  "loss_first": round(losses[0], 4), "loss_last": round(losses[-1], 4)}
        needed = sorted(demos.completion_tokens(examples, tokenizer))
        if needed:
            measured["careful_completion"] = {"median": needed[len(needed) // 2], "max": needed[-1]}
            cut = sum(n > args.max_completion for n in needed)
            if cut:
                print(f"warning: --max-completion {args.max_completion} cuts {cut} of the careful agent's {len(needed)} "
                      f"demonstrated episodes (median {needed[len(needed) // 2]} tokens, tool results included): "
                      "TRL ends a rollout where a tool result would pass the cap, before the reply", flush=True)
    evaluation_cpu = 0.0
    if args.model and args.eval_seeds:
        measured["before"] = held_out(model, tokenizer, task, args)
        evaluation_cpu += measured["before"]["cpu_s"]
    if args.train_layers:
        measured["trained_parameters"] = freeze_below(model, args.train_layers)
    gpu = torch.cuda.is_available()
    rollouts = args.generations * args.prompts
    micro = args.micro_batch or rollouts
    config = GRPOConfig(
        output_dir=f"runs/grpo/{task.replace('/', '_')}", num_generations=args.generations,
        # one optimizer step per group of rollouts, in backward passes of --micro-batch (peak memory)
        per_device_train_batch_size=micro, gradient_accumulation_steps=rollouts // micro, max_steps=args.steps,
        max_completion_length=args.max_completion, max_tool_calling_iterations=args.max_calls,
        # On a CPU: float32 and use_cpu (GRPOConfig's bf16 default needs a GPU: "Your setup doesn't support bf16/gpu").
        learning_rate=args.lr, use_cpu=not gpu, bf16=gpu and torch.cuda.is_bf16_supported(), report_to="none",
        logging_steps=1, save_strategy="no",
        seed=args.seed, temperature=args.temperature, beta=args.beta,
    )
    callbacks = [budget_callback(budget_from + evaluation_cpu, args.budget_minutes)] if args.budget_minutes else []
    if args.wall_minutes is not None:
        callbacks.append(budget_callback(time.time(), args.wall_minutes, clock=time.time))
    grpo_began = cpu_seconds()
    trainer = GRPOTrainer(
        model=model, processing_class=tokenizer, args=config,
        # training seeds 0.. on the training split; a group (num_generations rollouts) plays one seed's customer
        train_dataset=task_dataset(task, range(args.steps * args.prompts), split=train_split),
        environment_factory=environment_factory(task, base_url=args.server, max_calls=args.max_calls,
                                                follow_ups=args.follow_ups, split=train_split),
        callbacks=callbacks,
    )
    if trainer.ref_model is not None:
        # TRL builds the reference from the model's folder, i.e. before the warm start: anchor to the warm start.
        trainer.ref_model.load_state_dict(model.state_dict())
    trainer.train()
    measured["grpo_cpu_s"] = round(cpu_seconds() - grpo_began, 1)
    if args.model and args.eval_seeds:
        measured["after"] = held_out(model, tokenizer, task, args)
    logs = [entry for entry in trainer.state.log_history if "reward" in entry]
    run = {
        "task": task, "held_out": kind, "parameters": parameters, "steps": args.steps, "steps_done": trainer.state.global_step,
        "generations": args.generations, "server": bool(args.server), "wall_s": round(time.time() - started, 1),
        "train_cpu_s": round(cpu_seconds() - budget_from - evaluation_cpu - measured.get("after", {}).get("cpu_s", 0.0), 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "reward": [round(entry["reward"], 4) for entry in logs],
        "reward_std": [round(entry["reward_std"], 4) for entry in logs],
        "completion_tokens": [round(entry.get("completions/mean_length", float("nan")), 1) for entry in logs],
        "clipped": [round(entry.get("completions/clipped_ratio", float("nan")), 3) for entry in logs],
        "tool_calls": [round(entry["tools/call_frequency"], 3) for entry in logs],
        "entropy": [round(entry.get("entropy", float("nan")), 4) for entry in logs], **measured,
    }
    if gpu:
        run["device"] = {"gpu": torch.cuda.get_device_name(0), "note": "bf16 autocast over float32 weights"}
    print(json.dumps({k: v for k, v in run.items() if k not in ("before", "after")}), flush=True)
    return run


def plot(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    for run in runs:
        axis.plot(range(1, len(run["reward"]) + 1), run["reward"], marker="o", label=run["task"])
    axis.set_xlabel("GRPO step")
    axis.set_ylabel("mean episode score of the step's rollouts")
    axis.set_ylim(-0.02, 1.0)
    axis.set_title(f"GRPO, tiny local model ({runs[0]['parameters']:,} parameters), CPU")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    args = parse()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    if args.memory:
        session_memory()
        return
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.render_real:
        import grpo_real

        grpo_real.render()
        return
    if args.micro_batch is not None and (args.micro_batch < 1 or (args.generations * args.prompts) % args.micro_batch):
        raise SystemExit(f"--micro-batch must divide the rollouts per step ({args.generations * args.prompts}), "
                         f"got {args.micro_batch}")
    for flag in ("budget_minutes", "wall_minutes"):
        if getattr(args, flag) is not None and not getattr(args, flag) > 0:
            raise SystemExit(f"--{flag.replace('_', '-')} must be positive, got {getattr(args, flag)}")
    if not args.beta >= 0:
        raise SystemExit(f"--beta must be 0 or more, got {args.beta}")
    if args.train_layers < 0:
        raise SystemExit(f"--train-layers must be 0 or more, got {args.train_layers}")
    if args.train_layers and not args.model:
        raise SystemExit("--train-layers needs --model (the tiny model is trained whole)")
    if args.beta and not args.model:
        raise SystemExit("--beta needs --model (the tiny model has no folder for TRL to build its reference from)")
    if args.first_arguments and not (args.model and args.warm_start):
        raise SystemExit("--first-arguments needs --model and --warm-start (it orders the demonstrations' calls)")
    if not args.temperature > 0:
        raise SystemExit(f"--temperature must be positive, got {args.temperature}")
    if args.write_real and not (args.model and args.eval_seeds and args.warm_start):
        raise SystemExit("--write-real needs --model, --warm-start and --eval-seeds (the page compares before and after)")
    table = ladder(args.ladder_seeds)
    if args.ladder:
        return
    runs = []
    for task in args.tasks:
        runs.append(train(args, task))
        if args.write_real:
            import grpo_real

            grpo_real.keep(runs[-1], vars(args))
    if args.write:
        RESULTS.mkdir(exist_ok=True)
        payload = {
            "ladder": table, "ladder_seeds": args.ladder_seeds, "runs": runs, "memory": session_memory(),
            "settings": vars(args),
        }
        (RESULTS / "grpo.json").write_text(json.dumps(payload, indent=2) + "\n")
        plot(runs, RESULTS / "grpo.png")
        print(f"wrote {RESULTS / 'grpo.json'} and {RESULTS / 'grpo.png'}")


if __name__ == "__main__":
    main()
