"""A local OpenAI-compatible chat endpoint: ``POST /v1/chat/completions`` (with tools) on localhost.

    csr-marl models serve smollm2-135m --port 8011
    csr-marl agent tasks/refund --base-url http://127.0.0.1:8011/v1 --model smollm2-135m

Any OpenAI client can use it (``openai.OpenAI(base_url="http://127.0.0.1:8011/v1", api_key="x")``);
it needs nothing beyond the standard library and the model (:class:`csr_marl.llm.local.LocalChatModel`).
Requests are answered one at a time. ``GET /v1/models`` lists the model, ``GET /health`` says it is up.
A malformed request gets HTTP 400 with an OpenAI-style error body.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .local import LocalChatModel

MAX_BODY = 4 << 20  # bytes


class _BadRequest(ValueError):
    pass


def _request(body: dict[str, Any]) -> dict[str, Any]:
    """The chat arguments of a request body, checked (``_BadRequest`` with a reason)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) and "role" in m for m in messages):
        raise _BadRequest("'messages' must be a non-empty list of {role, content} objects")
    tools = body.get("tools") or None
    if tools is not None and not isinstance(tools, list):
        raise _BadRequest("'tools' must be a list")
    for key in ("max_tokens", "max_completion_tokens", "seed"):
        if body.get(key) is not None and (not isinstance(body[key], int) or body[key] < (0 if key == "seed" else 1)):
            raise _BadRequest(f"'{key}' must be a positive integer")
    temperature = body.get("temperature")
    if temperature is not None and (not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2):
        raise _BadRequest("'temperature' must lie in [0, 2]")
    if body.get("n", 1) != 1:
        raise _BadRequest("only n=1 is served")
    return {
        "messages": [_plain_message(m) for m in messages], "tools": tools,
        "tool_choice": body.get("tool_choice", "auto"),
        "max_tokens": body.get("max_completion_tokens") or body.get("max_tokens"),
        "temperature": temperature, "seed": body.get("seed"),
    }


def _plain_message(message: dict[str, Any]) -> dict[str, Any]:
    """Content parts joined into text; tool-call arguments decoded from their JSON strings."""
    out = dict(message)
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    calls = out.get("tool_calls")
    if calls:
        decoded = []
        for call in calls:
            function = dict(call.get("function", {}))
            if isinstance(function.get("arguments"), str):
                try:
                    function["arguments"] = json.loads(function["arguments"] or "{}")
                except json.JSONDecodeError:
                    pass
            decoded.append({"type": "function", "function": function})
        out["tool_calls"] = decoded
    return out


def make_server(model: LocalChatModel, host: str = "127.0.0.1", port: int = 8011) -> ThreadingHTTPServer:
    """An HTTP server for ``model`` (not started: call ``serve_forever``; ``port=0`` picks a free one)."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "csr-marl-local/1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": "invalid_request_error", "code": status}})

        def do_GET(self) -> None:  # noqa: N802 - the base class's name
            path = self.path.rstrip("/")
            if path == "/health":
                self._send(200, {"status": "ok", "model": model.name})
            elif path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": model.name, "object": "model", "owned_by": "local"}]})
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:  # noqa: N802
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._error(404, f"no route {self.path}")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self._error(413, f"request body over {MAX_BODY} bytes")
                return
            try:
                body = json.loads(self.rfile.read(length) or b"null")
                if not isinstance(body, dict):
                    raise _BadRequest("the body must be a JSON object")
                if body.get("stream"):
                    raise _BadRequest("streaming is not served")
                request = _request(body)
            except (json.JSONDecodeError, UnicodeDecodeError):
                self._error(400, "the body is not JSON")
                return
            except _BadRequest as error:
                self._error(400, str(error))
                return
            try:
                reply = model.chat(**request)
            except Exception as error:  # noqa: BLE001 - e.g. a message the chat template cannot render
                self._error(500, f"the model could not answer: {type(error).__name__}: {error}"[:300])
                return
            self._send(200, reply)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def serve_in_thread(model: LocalChatModel, host: str = "127.0.0.1", port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Start a server on a background thread; ``(server, base_url)`` (call ``server.shutdown()`` to stop)."""
    server = make_server(model, host, port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://{host}:{server.server_address[1]}/v1"
