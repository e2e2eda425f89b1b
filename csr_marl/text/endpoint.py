"""An OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp server, OpenAI itself) and its client.

    endpoint = Endpoint.resolve("http://127.0.0.1:8000/v1", "Qwen/Qwen2.5-7B-Instruct")
    reply = endpoint.complete(messages=[...], tools=[...], tool_choice="required")

Settings not given come from the usual environment variables: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``
and ``CSR_MARL_MODEL`` (the model name). Local servers ignore the key, so none is needed. The ``openai``
package (the ``llm`` extra) is imported on first use. Transport failures become one
:class:`EndpointError` line after the client's own retries; callers decide whether that ends a run
(the agent runner) or falls back (the judge).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import urlparse

ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
ENV_MODEL = "CSR_MARL_MODEL"
LOCAL_KEY = "not-needed"  # what local servers are sent when no key is set (the client insists on one)
INSTALL_HINT = "pip install 'csr-marl[llm]'"


class EndpointError(RuntimeError):
    """The endpoint could not be used: one line that says which and why. ``status``: the HTTP status."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def require_openai() -> Any:
    """The ``openai`` package, or an :class:`ImportError` naming the extra to install."""
    try:
        import openai
    except ImportError:
        raise ImportError(f"the chat endpoint needs the openai package: {INSTALL_HINT}") from None
    return openai


@dataclass(frozen=True)
class Endpoint:
    """Where and how to ask: base URL, model, key, per-request timeout and retries on transport errors."""

    base_url: str
    model: str
    api_key: str = LOCAL_KEY
    timeout: float = 60.0
    max_retries: int = 2

    @classmethod
    def resolve(
        cls,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> "Endpoint":
        """Arguments first, then the environment; raises ``ValueError`` (one line) when unusable."""
        url = (base_url or os.environ.get(ENV_BASE_URL) or "").strip()
        name = (model or os.environ.get(ENV_MODEL) or "").strip()
        key = api_key or os.environ.get(ENV_API_KEY) or LOCAL_KEY
        if not url:
            raise ValueError(f"no chat endpoint: give --base-url URL or set {ENV_BASE_URL} (e.g. http://127.0.0.1:8000/v1)")
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"base URL {url!r}: expected http(s)://HOST[:PORT]/v1")
        if not name:
            raise ValueError(f"no model: give --model NAME or set {ENV_MODEL}")
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        return cls(url.rstrip("/"), name, key, float(timeout), int(max_retries))

    @cached_property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client for this endpoint (built on first use)."""
        openai = require_openai()
        import httpx

        return openai.OpenAI(
            base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=self.max_retries,
            http_client=httpx.Client(transport=self._deadline, timeout=self.timeout),
        )

    @cached_property
    def _deadline(self) -> Any:
        return _deadline_transport()

    def complete(self, **request: Any) -> Any:
        """One chat completion (``model`` filled in); transport and HTTP failures as :class:`EndpointError`.

        ``timeout`` bounds the whole call -- connecting, a reply that trickles in byte by byte, the
        client's retries -- not just each read.
        """
        openai = require_openai()
        client = self.client
        self._deadline.start(self.timeout)
        try:
            return client.chat.completions.create(model=self.model, **request)
        except openai.APITimeoutError:
            raise EndpointError(f"the chat endpoint at {self.base_url} did not answer within {self.timeout:g} s") from None
        except openai.APIConnectionError as error:
            raise EndpointError(f"cannot reach the chat endpoint at {self.base_url} ({_cause(error)})") from None
        except openai.APIStatusError as error:
            raise EndpointError(
                f"the chat endpoint at {self.base_url} answered HTTP {error.status_code}: {_short(_status_text(error))}",
                status=error.status_code,
            ) from None
        except openai.APIError as error:  # e.g. a body that is not a chat completion
            raise EndpointError(f"the chat endpoint at {self.base_url} sent an unusable reply: {_short(str(error))}") from None


def _deadline_transport() -> Any:
    """An httpx transport that ends a request at a deadline, however slowly its reply arrives."""
    import httpx

    class DeadlineStream(httpx.SyncByteStream):
        def __init__(self, inner: Any, deadline: float, request: Any) -> None:
            self.inner, self.deadline, self.request = inner, deadline, request

        def __iter__(self) -> Any:
            for chunk in self.inner:
                if time.monotonic() > self.deadline:
                    raise httpx.ReadTimeout("the reply took longer than the timeout", request=self.request)
                yield chunk

        def close(self) -> None:
            self.inner.close()

    class DeadlineTransport(httpx.BaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.HTTPTransport()
            self.local = threading.local()

        def start(self, seconds: float) -> None:
            self.local.deadline = time.monotonic() + seconds

        def handle_request(self, request: Any) -> Any:
            deadline = getattr(self.local, "deadline", None)
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise httpx.ConnectTimeout("no time left for the request", request=request)
                request.extensions["timeout"] = dict.fromkeys(("connect", "read", "write", "pool"), left)
            response = self.inner.handle_request(request)
            if deadline is None:
                return response
            return httpx.Response(
                response.status_code, headers=response.headers, extensions=response.extensions,
                stream=DeadlineStream(response.stream, deadline, request), request=request,
            )

        def close(self) -> None:
            self.inner.close()

    return DeadlineTransport()


def _cause(error: BaseException) -> str:
    """The innermost reason of a connection failure (``Connection refused``), not the client's wrapper."""
    while error.__cause__ is not None or error.__context__ is not None:
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return _short(str(error) or type(error).__name__)


def _status_text(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(error, "message", error))


def _short(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
