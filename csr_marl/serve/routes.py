"""The routes that run simulations: ``/ws`` (a session per client), and the stateless ``/reset`` and ``/step``.

They speak the OpenEnv framework's protocol (its clients connect unchanged) and add what a public
server needs: one cap shared by WebSocket sessions and HTTP calls, and a share of it per client
(:class:`~.sessions.SessionBook`), the server's work taken in turns fairly between clients
(:class:`~.sessions.FairGate`), the work budget on every call, frames read within bounds (invalid
JSON, deep nesting, binary frames, text that is not Unicode are answered with an error, never an
exception), an idle timeout counted from the last ``reset`` or ``step``, and -- the point of running
the simulation beside a watch on the connection -- a client that leaves mid-``reset`` stops its work
and frees its place at once. A stateless ``/step`` has no day running (its environment is new): it is
answered at once, with no place, turn or thread. Error messages are the environment's one-line reasons, or "internal error".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import FastAPI, Request, WebSocket
from openenv.core.env_server.serialization import deserialize_action, serialize_observation
from openenv.core.env_server.types import WSErrorResponse, WSObservationResponse, WSStateResponse
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError
from starlette.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect

from ..text.tools import ToolCallError, read_json
from .environment import ContactCenterEnvironment
from .clients import client_key
from .guard import RESET_COST, ClientError, ServerLimits, short
from .models import ToolCallAction
from .sessions import FairGate, Lease, SessionBook
from .wellformed import has_surrogate_escape, unencodable, unencodable_json_text

log = logging.getLogger("csr_marl.serve")
_FRAME_DEPTH = 12  # the deepest JSON a frame may nest: a reset with overrides needs about five
_ERROR_PAUSE_SECONDS = 0.05  # an error reply waits this long: a client spamming junk gets 20 answers a second
REPLACED = ("/ws", "/reset", "/step")  # the framework's own versions of these are removed


class _Left(Exception):
    """The client closed the connection."""


def install(app: FastAPI, factory: Callable[[], ContactCenterEnvironment], limits: ServerLimits) -> SessionBook:
    """Replace the framework's simulation routes on ``app`` with guarded ones; returns the session book."""
    app.router.routes[:] = [route for route in app.router.routes if getattr(route, "path", None) not in REPLACED]
    book = SessionBook(limits.max_sessions, limits.max_sessions_per_client, limits.reclaim_idle_seconds)
    gate = FairGate()
    app.state.sessions, app.state.gate = book, gate

    @app.websocket("/ws")
    async def session_socket(websocket: WebSocket) -> None:
        await websocket.accept()
        reclaimed = asyncio.Event()
        address = websocket.client.host if websocket.client else "unknown"
        lease = book.open(client_key(address), reclaimed.set, exempt=not limits.limits_client(address))
        if isinstance(lease, str):
            await _send_error(websocket, lease, "CAPACITY_REACHED")
            await websocket.close(code=1013)
            return
        env = factory()
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="csr-marl-session")
        try:
            await _serve_session(websocket, env, worker, limits, Place(lease, reclaimed, gate))
        except _Left:
            pass
        finally:
            env.stop.set()  # a request still running stops at its next ticket
            book.close(lease)  # at once: the place does not wait for the worker thread
            worker.shutdown(wait=False)
            try:
                await websocket.close()
            except (RuntimeError, WebSocketDisconnect):
                pass

    @app.post("/reset")
    async def reset_route(request: Request) -> JSONResponse:
        return await _stateless(request, factory, book, gate, limits, "reset")

    @app.post("/step")
    async def step_route(request: Request) -> JSONResponse:
        return await _stateless(request, factory, book, gate, limits, "step")

    return book


class Place:
    """A session's place on the server: its lease, the signal that it was reclaimed, the shared gate."""

    def __init__(self, lease: Lease, reclaimed: asyncio.Event, gate: FairGate) -> None:
        self.lease, self.reclaimed, self.gate = lease, reclaimed, gate

    def start(self, worker: ThreadPoolExecutor, call: Callable[[], Any], weight: float) -> asyncio.Task[Any]:
        """Run ``call`` in ``worker`` when the gate gives this client its turn (a task to await)."""
        loop = asyncio.get_running_loop()
        self.lease.worked()
        self.lease.busy = True

        async def turn() -> Any:
            try:
                return await self.gate.run(self.lease.client, lambda: loop.run_in_executor(worker, call), weight)
            finally:
                self.lease.busy = False
                self.lease.worked()

        return asyncio.ensure_future(turn())


async def _serve_session(websocket: WebSocket, env: ContactCenterEnvironment, worker: ThreadPoolExecutor,
                         limits: ServerLimits, place: Place) -> None:
    """Read frames and answer them until the client closes, leaves, idles past the limit or is reclaimed."""
    waiting: asyncio.Task[dict[str, Any]] | None = None  # a frame read while a call was running
    reclaimed = asyncio.ensure_future(place.reclaimed.wait())
    try:
        while True:
            if waiting is None:
                waiting = asyncio.ensure_future(websocket.receive())
            left = limits.idle_seconds - (time.monotonic() - place.lease.worked_at)
            await asyncio.wait({waiting, reclaimed}, timeout=max(0.0, left), return_when=asyncio.FIRST_COMPLETED)
            if not waiting.done():
                waiting.cancel()
                why = (f"closed to make room: no reset or step for {limits.reclaim_idle_seconds:g} s or more while the server was full"
                       if reclaimed.done() else f"no reset or step for {limits.idle_seconds:g} s: session closed")
                await _send_error(websocket, why, "SESSION_ERROR")
                return
            frame, waiting = waiting.result(), None
            message = _message(frame)
            if isinstance(message, str):
                await _send_error(websocket, message, "INVALID_JSON")
                continue
            kind = message.get("type")
            if kind == "close":
                return
            if kind == "state":
                await _send(websocket, WSStateResponse(data=env.state.model_dump()))
                continue
            if kind not in ("reset", "step"):
                await _send_error(websocket, f"unknown message type {short(repr(kind), 60)}; use reset, step, state or close",
                                  "UNKNOWN_TYPE")
                continue
            data = message.get("data", {})
            try:
                call = _call(env, kind, data)
            except ClientError as exc:
                await _send_error(websocket, str(exc), "VALIDATION_ERROR")
                continue
            running = place.start(worker, call, RESET_COST if kind == "reset" else 1)
            waiting = asyncio.ensure_future(websocket.receive())  # watch the connection while it runs
            await asyncio.wait({running, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if waiting.done() and waiting.result()["type"] == "websocket.disconnect":
                env.stop.set()
                running.add_done_callback(_settled)  # it ends at its next ticket; nobody waits for it
                raise _Left
            try:
                observation = await running
            except ClientError as exc:
                await _send_error(websocket, str(exc), "EXECUTION_ERROR")
                continue
            except Exception:  # noqa: BLE001 -- logged here; the client gets no internals
                log.exception("%s failed", kind)
                await _send_error(websocket, f"{kind}: internal error (logged on the server)", "EXECUTION_ERROR")
                continue
            await _send(websocket, WSObservationResponse(data=serialize_observation(observation)))
    finally:
        reclaimed.cancel()


def _settled(future: asyncio.Future[Any]) -> None:
    """Collect the outcome of a call whose client left (its budget error is expected, not news)."""
    if not future.cancelled():
        future.exception()


def _message(frame: dict[str, Any]) -> dict[str, Any] | str:
    """A frame's JSON object, or the one-line reason it is not one (raises :class:`_Left` on disconnect)."""
    if frame["type"] == "websocket.disconnect":
        raise _Left
    text = frame.get("text")
    if text is None:
        return "binary frames are not read: send JSON text"
    try:
        message = read_json(text, "the message", limit=len(text), verb="is", depth=_FRAME_DEPTH)
    except ToolCallError as exc:
        return str(exc)
    if not isinstance(message, dict):
        return "a message is a JSON object: {\"type\": \"reset\" | \"step\" | \"state\" | \"close\", \"data\": {...}}"
    flaw = unencodable(message) if has_surrogate_escape(text) else None  # UTF-8 text holds none but escaped ones
    return flaw or message


def _call(env: ContactCenterEnvironment, kind: str, data: Any) -> Callable[[], Any]:
    """The environment call a reset or step message asks for (checked here; run in the session's thread)."""
    if not isinstance(data, dict):
        raise ClientError(f"{kind}: data must be a JSON object")
    if kind == "reset":
        return lambda: env.reset(**data)
    try:
        action = deserialize_action(data, ToolCallAction)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ClientError(short(f"step: {where}: {first['msg']}; a step is {{\"tool\": NAME, \"arguments\": {{...}}}}")) from None
    flaw = unencodable_json_text(action.arguments, "data.arguments") if isinstance(action.arguments, str) else None
    if flaw:
        raise ClientError(f"step: {flaw}")
    return lambda: env.step(action)


async def _stateless(request: Request, factory: Callable[[], ContactCenterEnvironment], book: SessionBook,
                     gate: FairGate, limits: ServerLimits, kind: str) -> JSONResponse:
    """A throwaway environment for one HTTP call, under the same caps, turns and budget as a session."""
    body = (await request.body()).decode("utf-8", errors="replace")
    message = _message({"type": "websocket.receive", "text": body or "{}"})
    if isinstance(message, str):
        return _refusal(message, 422)
    data = message.get("action") if kind == "step" else message
    env = factory()
    try:
        call = _call(env, kind, data)
    except ClientError as exc:
        return _refusal(str(exc), 422)
    if kind == "step":  # a throwaway environment has no day running: the answer needs no place, turn or thread
        return _answer(kind, call())
    address = request.client.host if request.client else "unknown"
    lease = book.open(client_key(address), exempt=not limits.limits_client(address))
    if isinstance(lease, str):
        return _refusal(lease, 503)
    try:
        loop = asyncio.get_running_loop()
        weight = RESET_COST if kind == "reset" else 1
        running = asyncio.ensure_future(gate.run(lease.client, lambda: loop.run_in_executor(None, call), weight))
        while not running.done():
            await asyncio.wait({running}, timeout=0.25)
            if not running.done() and await request.is_disconnected():
                env.stop.set()
                running.add_done_callback(_settled)
                return _refusal("client left", 499)
        observation = running.result()
    except ClientError as exc:
        return _refusal(str(exc), 422)
    except Exception:  # noqa: BLE001 -- logged here; the client gets no internals
        log.exception("%s failed", kind)
        return _refusal(f"{kind}: internal error (logged on the server)", 500)
    finally:
        book.close(lease)
        env.close()
    return _answer(kind, observation)


def _answer(kind: str, observation: Any) -> JSONResponse:
    try:
        return JSONResponse(serialize_observation(observation))
    except (UnicodeEncodeError, ValueError):
        log.exception("%s: the reply could not be encoded", kind)
        return _refusal(f"{kind}: internal error (logged on the server)", 500)


def _refusal(detail: str, status: int) -> JSONResponse:
    """An HTTP error: its one-line reason, at most 500 characters."""
    return JSONResponse({"detail": short(detail)}, status_code=status)


async def _send_error(websocket: WebSocket, message: str, code: str) -> None:
    await asyncio.sleep(_ERROR_PAUSE_SECONDS)  # costs the server nothing, and paces a client that sends junk
    await _send(websocket, WSErrorResponse(data={"message": short(message), "code": code}))


async def _send(websocket: WebSocket, reply: Any) -> None:
    """A reply as JSON text; one that cannot be encoded (text that is not Unicode) becomes an error frame."""
    try:
        text = reply.model_dump_json()
    except PydanticSerializationError:
        log.exception("a reply could not be encoded")
        text = WSErrorResponse(data={"message": "internal error (logged on the server)", "code": "EXECUTION_ERROR"}).model_dump_json()
    await websocket.send_text(text)
