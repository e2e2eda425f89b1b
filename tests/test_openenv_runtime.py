"""The framework's runtime validation (``openenv validate --level runtime``) against a local server.

``openenv validate`` builds the Dockerfile and starts a container; without a Docker daemon (CI, this
test) its runner takes a validation provider, and this one starts ``csr-marl serve`` as a local
process instead of building an image. The runtime plan (``configs/openenv_runtime.json``, named in
``openenv.yaml``) is played on one WebSocket session and the framework's own graders check the
reward, observation and state contracts. A local process cannot enforce the manifest's network
policy or resource limits: the provider does not claim those capabilities, so their checks SKIP.
"""

from __future__ import annotations

import hashlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from checkout import copy_project
from extras import need

ROOT = Path(__file__).resolve().parents[1]
need("openenv")
# openenv.validation (which imports gradio: seconds) is imported where it is used, by the one test,
# marked slow: the fast suite's processes do not pay for it when they collect this file.


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalServer:
    """A ``csr-marl serve`` process: reachable and stoppable (no sandbox, no exec)."""

    def __init__(self, log: Path) -> None:
        port = _free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        self._log = log
        with log.open("w") as out:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "csr_marl", "serve", "--port", str(port), "--max-sessions", "64",
                 "--log-level", "warning"],
                stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
            )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.base_url + "/health", timeout=2).close()
                return
            except (urllib.error.URLError, ConnectionError):
                if self._process.poll() is not None or time.monotonic() > deadline:
                    from openenv.validation.providers import StartupError

                    self.stop()
                    raise StartupError("the local server did not become healthy") from None
                time.sleep(0.2)

    def inspect(self) -> dict[str, Any]:
        return {"running": self._process.poll() is None, "pid": self._process.pid}

    def logs(self, max_bytes: int = 65536) -> str:
        return self._log.read_text()[-max_bytes:]

    def exec(self, argv: list[str], timeout_s: float) -> Any:
        from openenv.validation.providers import ExecResult

        return ExecResult(exit_code=127, stdout="", stderr="exec is not offered by the local provider", duration_s=0.0)

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            self._process.wait(timeout=10)


class LocalProcessProvider:
    """The framework's provider protocol over a local process (the runner's Docker step replaced)."""

    name = "local-process"
    # The manifest declares no-network (the server needs none); a local process does not enforce it,
    # and without the network_policy capability the network checks SKIP.
    supported_network_modes = frozenset({"public", "no-network"})

    def __init__(self, log: Path) -> None:
        from openenv.validation.types import ProviderCapability

        self.capabilities = frozenset({ProviderCapability.IMAGE_BUILD})  # "build" = the working tree as is
        self.log = log
        self.started: list[LocalServer] = []

    def build(self, root: Path, execution: Any) -> str:
        return "sha256:" + hashlib.sha256(str(root).encode()).hexdigest()

    def start(self, spec: Any) -> LocalServer:
        server = LocalServer(self.log)
        self.started.append(server)
        return server


def source_snapshot(into: Path) -> Path:
    """The project's files, copied (``checkout.copy_project``); without git, the checkout itself.

    The runner digests the whole tree before and after and rejects a run whose source changed. Other
    tests running beside this one write into the checkout (``runs/``, hypothesis's database), which are
    not the project's source, so the runner validates this copy."""
    return copy_project(into) or ROOT


@pytest.mark.slow
def test_runtime_validation_passes_against_a_local_server(tmp_path: Path) -> None:
    from openenv.validation.runner import run_validation
    from openenv.validation.types import Level

    provider = LocalProcessProvider(tmp_path / "server.log")
    report = run_validation(source_snapshot(tmp_path / "source"), max_level=Level.RUNTIME, provider=provider)
    status = {result.check_id: result.status.value for result in report.results}
    evidence = {result.check_id: result.evidence for result in report.results}
    # why the start failed first: pytest shortens a long message, and the status dict is long
    assert status.get("runtime.startup") == "pass", (evidence.get("runtime.startup"), provider.log.read_text())
    # the reward, observation and state contracts were graded on the played plan, not skipped
    for check in ("runtime.observation_schema", "runtime.reward_well_formed", "runtime.state_contract"):
        assert status.get(check) == "pass", (check, status, evidence)
    assert "fail" not in status.values(), evidence
    assert all(not server.inspect()["running"] for server in provider.started)
