"""The command-line reference as Markdown, generated from the commands themselves.

The docs site builds its CLI page from this (so the page cannot drift from ``--help``);
``python -m csr_marl.cli.reference`` prints it.
"""

from __future__ import annotations

import inspect
from typing import Any

import typer

from . import app

PROGRAM = "csr-marl"


def markdown_reference(heading_level: int = 2) -> str:
    """Every command of ``csr-marl``: its help, usage line and a table of its arguments and options."""
    root = typer.main.get_command(app)
    root_ctx = root.make_context(PROGRAM, [], resilient_parsing=True)
    hashes = "#" * heading_level
    parts = [_command_section(root, root_ctx, f"{hashes} `{PROGRAM}`")]
    for name in root.list_commands(root_ctx):
        command = root.get_command(root_ctx, name)
        ctx = command.make_context(name, [], parent=root_ctx, resilient_parsing=True)
        parts.append(_command_section(command, ctx, f"{hashes} `{PROGRAM} {name}`"))
    return "\n\n".join(parts) + "\n"


def _command_section(command: Any, ctx: Any, heading: str) -> str:
    lines = [heading, "", _text(inspect.cleandoc(command.help or "")), "", "```text", command.get_usage(ctx).strip(), "```", ""]
    rows = [_param_row(param, ctx) for param in command.get_params(ctx) if not getattr(param, "hidden", False)]
    if rows:
        lines += ["| argument / option | value | default | description |", "|---|---|---|---|"]
        lines += [f"| {' | '.join(_cell(c) for c in row)} |" for row in rows]
    return "\n".join(lines).rstrip()


def _param_row(param: Any, ctx: Any) -> tuple[str, str, str, str]:
    if param.param_type_name == "argument":
        name = str(param.metavar or param.name).upper()
        value = ""
    else:
        name = ", ".join([*param.opts, *param.secondary_opts])
        value = "" if param.is_flag else str(param.metavar or "")
    default = param.get_default(ctx, call=False) if not param.required else None
    if param.required:
        shown = "required"
    elif default in (None, (), []) or (getattr(param, "is_flag", False) and default is False and not param.secondary_opts):
        shown = ""
    elif getattr(param, "is_flag", False) and param.secondary_opts:
        shown = param.opts[0] if default else param.secondary_opts[0]
    else:
        shown = str(default)
    envvar = f" Environment variable: `{param.envvar}`." if getattr(param, "envvar", None) else ""
    return f"`{name}`", f"`{value}`" if value else "", f"`{shown}`" if shown else "", _text(param.help or "") + envvar


def _text(help_text: str) -> str:
    """Help text as Markdown: rich's escaped ``\\[`` back to ``[``."""
    return help_text.replace("\\[", "[")


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


if __name__ == "__main__":  # pragma: no cover
    print(markdown_reference())
