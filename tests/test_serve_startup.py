"""A server starts without the framework's browser playground unless it is asked for."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from extras import need

need("openenv")

PROBE = """
import json, sys
from csr_marl.serve import create_server_app
app = create_server_app(scenario="tasks/resolve", roles=("resolver",), max_sessions=2)
paths = sorted({getattr(route, "path", "") for route in app.routes})
print(json.dumps({"gradio": "gradio" in sys.modules, "web": any(p.startswith("/web") for p in paths),
                  "ws": "/ws" in paths}))
"""


def serve_routes(web: str | None) -> dict:
    env = {key: value for key, value in os.environ.items() if key != "ENABLE_WEB_INTERFACE"}
    if web is not None:
        env["ENABLE_WEB_INTERFACE"] = web
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_server_starts_without_the_playground_toolkit() -> None:
    assert serve_routes(None) == {"gradio": False, "web": False, "ws": True}


@pytest.mark.slow
def test_the_playground_is_served_when_asked_for() -> None:
    assert serve_routes("true") == {"gradio": True, "web": True, "ws": True}
