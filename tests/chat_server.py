"""A real OpenAI-compatible chat-completions server on 127.0.0.1, with scripted replies, for tests.

    def script(request: dict) -> Reply:           # the parsed JSON body of each request
        return tool_call("check_payment", {})
    with ChatServer(script) as server:
        client = openai.OpenAI(base_url=server.url, api_key="x")
        ...
        server.requests                            # every chat request's body, in order

It speaks the protocol as the OpenAI API and vLLM / Ollama / llama.cpp servers do: ``POST
/v1/chat/completions`` answers a ``chat.completion`` object whose assistant message carries
``tool_calls`` (``finish_reason: "tool_calls"``) or text content (``"stop"``), ``GET /v1/models``
lists the model, and errors come as ``{"error": {...}}`` with an HTTP status. A :class:`Reply` can
also wait (to test timeouts), fail with a status, or send a raw body (garbage).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """What the scripted model answers to one request."""

    tool: str | None = None
    arguments: str | dict[str, Any] | None = None
    content: str | None = None
    delay: float = 0.0
    status: int = 200
    raw: str | None = None


def tool_call(name: str, arguments: str | dict[str, Any] | None = None) -> Reply:
    """An assistant message with one tool call; ``arguments`` a dict or the exact JSON text to send."""
    return Reply(tool=name, arguments={} if arguments is None else arguments)


def text(content: str) -> Reply:
    """An assistant message with text and no tool call."""
    return Reply(content=content)


Script = Callable[[dict[str, Any]], Reply]


class ChatServer:
    """A threaded HTTP server on a free port of 127.0.0.1; use as a context manager.

    ``reject_required``: answer HTTP 400 to ``tool_choice="required"``, as servers without support do.
    ``trickle``: send each reply's body one byte every ``trickle`` seconds (a server that stalls).
    """

    def __init__(
        self, script: Script, *, model: str = "scripted-model", reject_required: bool = False, trickle: float = 0.0
    ) -> None:
        self.script = script
        self.trickle = trickle
        self.model = model
        self.reject_required = reject_required
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="chat-server", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "ChatServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # --- the protocol ---------------------------------------------------------------------------
    def answer(self, body: dict[str, Any]) -> tuple[int, str]:
        """(status, JSON text) for one chat request's body."""
        if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list) or not body["messages"]:
            return 400, _error("'model' and a non-empty 'messages' list are required", "invalid_request_error")
        with self._lock:
            self.requests.append(body)
            number = next(self._ids)
        if self.reject_required and body.get("tool_choice") == "required":
            return 400, _error("tool_choice 'required' is not supported by this server", "invalid_request_error")
        reply = self.script(body)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.raw is not None:
            return reply.status, reply.raw
        if reply.status != 200:
            return reply.status, _error(reply.content or "scripted failure", "server_error")
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        finish = "stop"
        if reply.tool is not None:
            arguments = reply.arguments if isinstance(reply.arguments, str) else json.dumps(reply.arguments)
            message["tool_calls"] = [
                {"id": f"call_{number}", "type": "function", "function": {"name": reply.tool, "arguments": arguments}}
            ]
            finish = "tool_calls"
        prompt = sum(len(str(m.get("content") or "")) for m in body["messages"]) // 4
        completion = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 12, "total_tokens": prompt + 12},
        }
        return 200, json.dumps(completion)

    def models(self) -> str:
        return json.dumps({"object": "list", "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "tests"}]})


def _error(message: str, kind: str) -> str:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}})


def _handler_for(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the openai client expects
        disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, _error(f"no route POST {self.path}", "not_found"))
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self._send(400, _error("the body is not JSON", "invalid_request_error"))
                return
            self._send(*server.answer(body if isinstance(body, dict) else {}))

        def do_GET(self) -> None:  # noqa: N802
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, server.models())
            else:
                self._send(404, _error(f"no route GET {self.path}", "not_found"))

        def _send(self, status: int, payload: str) -> None:
            data = payload.encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if server.trickle:
                    self.wfile.flush()
                    for byte in range(len(data)):
                        self.wfile.write(data[byte:byte + 1])
                        self.wfile.flush()
                        time.sleep(server.trickle)
                else:
                    self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def log_message(self, *args: Any) -> None:
            pass  # quiet

    return Handler
