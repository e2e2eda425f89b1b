"""The routes that run simulations: ``/ws`` (a session per client), and the stateless ``/reset`` and ``/step``.

They speak the OpenEnv framework's protocol (its clients connect unchanged) and add what a public
server needs: one cap shared by WebSocket sessions and HTTP calls (:class:`~.guard.SessionSlots`),
the work budget on every call, frames read within bounds (invalid JSON, deep nesting, binary frames
are answered with an error, never an exception), an idle timeout, and -- the point of running the
simulation beside a watch on the connection -- a client that leaves mid-``reset`` stops its work and
frees its slot at once. Error messages are the environment's one-line reasons, or "internal error".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import FastAPI, Request, WebSocket
from openenv.core.env_server.serialization import deserialize_action, serialize_observation
from openenv.core.env_server.types import WSErrorResponse, WSObservationResponse, WSStateResponse
from pydantic import ValidationError
from starlette.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect

from ..text.tools import ToolCallError, read_json
from .environment import ContactCenterEnvironment
from .guard import ClientError, ServerLimits, SessionSlots, short
from .models import ToolCallAction

log = logging.getLogger("csr_marl.serve")
_FRAME_DEPTH = 12  # the deepest JSON a frame may nest: a reset with overrides needs about five
_ERROR_PAUSE_SECONDS = 0.05  # an error reply waits this long: a client spamming junk gets 20 answers a second
REPLACED = ("/ws", "/reset", "/step")  # the framework's own versions of these are removed


class _Left(Exception):
    """The client closed the connection."""


def install(app: FastAPI, factory: Callable[[], ContactCenterEnvironment], limits: ServerLimits) -> SessionSlots:
    """Replace the framework's simulation routes on ``app`` with guarded ones; returns the shared cap."""
    app.router.routes[:] = [route for route in app.router.routes if getattr(route, "path", None) not in REPLACED]
    slots = SessionSlots(limits.max_sessions)
    app.state.slots = slots

    @app.websocket("/ws")
    async def session_socket(websocket: WebSocket) -> None:
        await websocket.accept()
        if not slots.take():
            await _send_error(websocket, f"the server is at capacity ({limits.max_sessions} sessions); try again later",
                              "CAPACITY_REACHED")
            await websocket.close(code=1013)
            return
        env = factory()
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="csr-marl-session")
        try:
            await _serve_session(websocket, env, worker, limits)
        except _Left:
            pass
        finally:
            env.stop.set()  # a request still running stops at its next ticket
            slots.release()  # at once: the slot does not wait for the worker thread
            worker.shutdown(wait=False)
            try:
                await websocket.close()
            except (RuntimeError, WebSocketDisconnect):
                pass

    @app.post("/reset")
    async def reset_route(request: Request) -> JSONResponse:
        return await _stateless(request, factory, slots, limits, "reset")

    @app.post("/step")
    async def step_route(request: Request) -> JSONResponse:
        return await _stateless(request, factory, slots, limits, "step")

    return slots


async def _serve_session(websocket: WebSocket, env: ContactCenterEnvironment, worker: ThreadPoolExecutor,
                         limits: ServerLimits) -> None:
    """Read frames and answer them until the client closes, leaves or idles past the limit."""
    loop = asyncio.get_running_loop()
    waiting: asyncio.Task[dict[str, Any]] | None = None  # a frame read while a call was running
    while True:
        if waiting is None:
            waiting = asyncio.ensure_future(websocket.receive())
        try:
            frame = await asyncio.wait_for(asyncio.shield(waiting), timeout=limits.idle_seconds)
        except asyncio.TimeoutError:
            waiting.cancel()
            await _send_error(websocket, f"idle for {limits.idle_seconds:g} s: session closed", "SESSION_ERROR")
            return
        waiting = None
        message = _message(frame)
        if isinstance(message, str):
            await _send_error(websocket, message, "INVALID_JSON")
            continue
        kind = message.get("type")
        if kind == "close":
            return
        if kind == "state":
            await websocket.send_text(WSStateResponse(data=env.state.model_dump()).model_dump_json())
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
        running = loop.run_in_executor(worker, call)
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
        await websocket.send_text(WSObservationResponse(data=serialize_observation(observation)).model_dump_json())


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
    return message


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
    return lambda: env.step(action)


async def _stateless(request: Request, factory: Callable[[], ContactCenterEnvironment], slots: SessionSlots,
                     limits: ServerLimits, kind: str) -> JSONResponse:
    """A throwaway environment for one HTTP call, under the same cap and budget as a session."""
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
    if not slots.take():
        return _refusal(f"the server is at capacity ({limits.max_sessions} sessions); try again later", 503)
    try:
        running = asyncio.get_running_loop().run_in_executor(None, call)
        while not running.done():
            await asyncio.wait({running}, timeout=0.25)
            if not running.done() and await request.is_disconnected():
                env.stop.set()
                return _refusal("client left", 499)
        observation = running.result()
    except ClientError as exc:
        return _refusal(str(exc), 422)
    except Exception:  # noqa: BLE001 -- logged here; the client gets no internals
        log.exception("%s failed", kind)
        return _refusal(f"{kind}: internal error (logged on the server)", 500)
    finally:
        slots.release()
        env.close()
    return JSONResponse(serialize_observation(observation))


def _refusal(detail: str, status: int) -> JSONResponse:
    """An HTTP error: its one-line reason, at most 500 characters."""
    return JSONResponse({"detail": short(detail)}, status_code=status)


async def _send_error(websocket: WebSocket, message: str, code: str) -> None:
    await asyncio.sleep(_ERROR_PAUSE_SECONDS)  # costs the server nothing, and paces a client that sends junk
    await websocket.send_text(WSErrorResponse(data={"message": short(message), "code": code}).model_dump_json())
