# noqa: D212, D415
"""
# Contact center, language interface (csr_marl_text_v4)

| Import          | `from csr_marl.text.pettingzoo import text_env`; `text_env(scenario="standard_day", seed=None, **overrides)` |
|-----------------|---------------------------------------------------------------------------------------------------------|
| API             | PettingZoo AEC (wrapped in `OrderEnforcingWrapper`); the class is `TextContactCenterEnv`               |
| Agents          | the staff of the roles played: `triage_0..`, `resolver_0..`, `escalation_0..` (as the vector env)     |
| Observation     | `Text(1, 16384, charset)`: the pending decision as text (`csr_marl.text.TextSession`)                  |
| Action          | `Text(1, 8192, charset)`: one JSON tool call, `{"name": "<tool>", "arguments": {...}}`                 |
| Tools           | `info["tools"]`: the chat-completions tool list of the agent's pending turn (empty when none is due)   |
| Refused call    | costs `rewards.illegal_action`, the same decision is asked again; after `max_retries` refusals in a row the fallback is taken |
| Episode end     | truncation at the shift's end (termination when it ends early: `max_tickets`, every ticket closed)    |

The same SimPy core and the same day as :class:`csr_marl.text.TextSession`, presented as a PettingZoo
AEC environment, so any PettingZoo loop can drive a center whose staff read and write text -- a
language model behind each agent, or a person. The caller plays ``roles``; ``colleagues`` (a built-in
policy's name, or per role a name or a ``Decision -> action`` callable) answer every other role's
decisions between the caller's turns.

**Turns.** `agent_selection` is the staff member whose decision is due. `env.last()` gives its
observation: who it is, the clock, the ticket as the customer wrote it, what tools found, the
conversation so far (customers' replies to `ask_customer` included), and what to do. Agents with
nothing due observe one line saying so.

**Actions.** A string holding one JSON object: `"name"` the tool (one of `info["tools"]`) and
`"arguments"` an object with exactly the tool's parameters (a JSON-encoded string of it is accepted
too, as chat APIs send them; omit it for tools without parameters):

    {"name": "check_payment", "arguments": {}}
    {"name": "respond_user", "arguments": {"message": "Hi Maria, I've refunded the duplicate charge..."}}

Anything else -- text that is not JSON, a tool not offered now, wrong or missing arguments -- is
refused with one line saying why, never an exception: the refusal costs `rewards.illegal_action`
(component `illegal_action`) and stands at the top of the refused agent's next observation; the
same decision is asked again, and after `max_retries` refusals in a row it takes its fallback (as
the vector environments do), so random or broken policies still move the day on. Only a non-string
action for a live agent, or a non-None one for a done agent, raises (a programming error).

**Rewards.** Each step's reward goes to the acting agent: what it earned from its call until the
caller's next turn, under the scenario's reward mode (TextSession's reward); other agents get 0 for
that step. `last()` returns the reward accumulated since the agent's own last turn.

**Info.** Per agent: `role`, `decision_due`, `phase` (`triage` / `pick` / `work`, None when nothing
is due), `tools`, `sim_time`, `reward_components` (float64 vector over
`csr_marl.sim.rewards.COMPONENTS`, since the agent's last turn, as the vector env), and after a step
the session's events for that agent: `customer_reply` (the customer's answer to its `ask_customer`),
`reply_grade` (the rubric's grade of its `respond_user`), `events`.

**Spaces.** The character set is printable ASCII plus every character of the scenario's ticket bank
(texts, slot values, fact values), so every observation is in its space: characters outside it
(what an agent wrote, echoed back) are transliterated (NFKD) or replaced by `?`, and an observation
longer than `max_length` keeps its start and end around a one-line cut mark. Observations are `str`
(a subclass carrying the space's numpy `dtype`, as array observations do, so generic checkers
compare them like any other).

**Arguments.** `scenario` (name, YAML path or `Scenario`), `seed`, `roles` (default all three),
`colleagues` (default `"heuristic"`), `render_mode` (`"ansi"` returns the selected agent's
observation, `"human"` prints it), `max_retries` (default 2), any dotted scenario override as a
keyword (`horizon_minutes=60`, `**{"arrivals.rate_per_hour": 20}`).

**Version history.** v1: first release. v2: scoring v2 (`csr_marl.text.scoring.SCORING_VERSION`): a caller is credited only for its own work, refunds are checked against the amount on record (a refund not owed is collateral damage), the reply rubric grades reading (facts beside findings, false findings and echoes guarded), triage is scored against chance, the fallback after refused calls earns nothing; episode scores and step rewards of v1 are not comparable. v3: scoring v3: a lookup shows the record behind its finding (dates, record numbers, a firmware version: `TicketView.fact_details`, and the observation's text), a finding is credited only with one of those values, denying a finding is a false claim, naming another case's findings in either polarity is noise, guessed dates and record numbers and echoes of anything the customer said are guarded, the judge reads the reply as delimited data, and a refund not owed grades its ticket -1; scores of v2 are not comparable. v4: scoring v4: the episode score (`info["episode_score"]`) lies in [-1, 1]: damage (a refund not owed, to another order or above the amount on record; specialist work the ticket did not need) grades its ticket -1 and is no longer clipped at 0, so refunding every ticket scores below doing nothing; scores of v3 are not comparable.
"""

from __future__ import annotations

import dataclasses
import string
import unicodedata
from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium.spaces import Text
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from ..config.domain import ROLES
from ..config.loading import load_ticket_bank
from ..config.tickets import TicketBank
from ..envs.common import ScenarioLike
from ..envs.driver import agent_names
from .session import Colleagues, NoTurnError, TextSession, TextStep, Turn
from .tools import ToolCallError, quote, read_json

OBSERVATION_MAX_LENGTH = 16_384
ACTION_MAX_LENGTH = 8_192
ACTION_FORMAT = 'an action is one JSON object: {"name": "<tool>", "arguments": {...}}'
REFUSED = "Your last call was refused: "
METADATA: dict[str, Any] = {
    "name": "csr_marl_text_v4",
    "render_modes": ["ansi", "human"],
    "is_parallelizable": False,
    "render_fps": 1,
}


class TextObservation(str):
    """An observation: a ``str`` that also carries the space's numpy ``dtype`` (as arrays do)."""

    __slots__ = ()
    dtype = np.dtype(str)


def text_charset(bank: TicketBank) -> frozenset[str]:
    """Every character an observation may hold: printable ASCII and every character of ``bank``."""
    chars = set(string.printable)
    for template in bank.templates:
        for variant in template.variants:
            chars.update(variant.subject, variant.body)
    for values in (*bank.slots.values(), *bank.fact_values.values()):
        for value in values:
            chars.update(value)
    return frozenset(chars)


def parse_action(action: str) -> tuple[str, str | dict[str, Any] | None]:
    """``(name, arguments)`` of a JSON tool call, or :class:`ToolCallError` saying what is wrong."""
    try:
        call = read_json(action, "the action", ACTION_MAX_LENGTH, verb="is")
    except ToolCallError as refusal:
        raise ToolCallError(f"{refusal}; {ACTION_FORMAT}") from None
    if not isinstance(call, dict):
        raise ToolCallError(f"the action is a JSON {type(call).__name__}, not an object; {ACTION_FORMAT}")
    unknown = sorted(quote(key) for key in call if key not in ("name", "arguments"))
    if unknown:
        raise ToolCallError(f"the action has unexpected key(s) {', '.join(unknown)}; {ACTION_FORMAT}")
    name = call.get("name")
    if not isinstance(name, str):
        raise ToolCallError(f'the action needs "name", the tool to call, as a string; {ACTION_FORMAT}')
    arguments = call.get("arguments")
    if arguments is not None and not isinstance(arguments, (dict, str)):
        raise ToolCallError(f'{name}: "arguments" must be a JSON object, got {type(arguments).__name__}')
    return name, arguments


class TextContactCenterEnv(AECEnv):
    """PettingZoo AEC environment over :class:`csr_marl.text.TextSession` (see the module docstring)."""

    metadata = METADATA

    def __init__(
        self,
        scenario: ScenarioLike = "standard_day",
        seed: int | None = None,
        *,
        roles: tuple[str, ...] = ROLES,
        colleagues: Colleagues = "heuristic",
        render_mode: str | None = None,
        max_retries: int = 2,
        overrides: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in METADATA["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not supported; choose one of {METADATA['render_modes']} or None")
        self.render_mode = render_mode
        self.session = TextSession(
            scenario, seed, roles=tuple(roles), colleagues=colleagues, overrides=overrides, max_retries=max_retries
        )
        self.scenario = self.session.scenario
        played = set(self.session.roles)
        self.possible_agents = [a for a in agent_names(self.scenario) if a.rsplit("_", 1)[0] in played]
        if not self.possible_agents:
            raise ValueError(f"roles {list(roles)}: scenario {self.scenario.name!r} staffs none of them")
        self.agents = self.possible_agents.copy()
        self.charset = text_charset(load_ticket_bank(self.scenario.tickets.bank))
        # One space object per agent (each seeds and samples on its own).
        self.observation_spaces = {a: Text(OBSERVATION_MAX_LENGTH, charset=self.charset) for a in self.possible_agents}
        self.action_spaces = {a: Text(ACTION_MAX_LENGTH, charset=self.charset) for a in self.possible_agents}
        self._started = False

    # --- PettingZoo API -------------------------------------------------------------------------
    def observation_space(self, agent: str) -> Text:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Text:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        try:
            turn: Turn | None = self.session.reset(seed)
        except NoTurnError:
            turn = None  # PettingZoo allows an episode nobody acts in: every agent ends at once
        self._started = True
        self.agents = self.possible_agents.copy()
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._skip_agent_selection = None
        self._notes: dict[str, str] = {}  # agent -> why its last call was refused, until it acts again
        self._extras: dict[str, dict[str, Any]] = {}  # agent -> what the session reported for its call
        self._turn = turn
        if turn is None:
            self._end()
        else:
            self.agent_selection = turn.agent
        self._update_infos()

    def step(self, action: str | None) -> None:
        if not self._started:
            raise RuntimeError("call reset() before step()")
        if not self.agents:
            raise RuntimeError("the episode has ended: call reset()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            self._update_infos()
            return
        if not isinstance(action, str):
            raise ValueError(f"{agent}: an action is a JSON tool call as a string, got {type(action).__name__}")
        self._cumulative_rewards[agent] = 0.0
        self._notes.pop(agent, None)
        result = self._call(action)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self.rewards[agent] = float(result.reward)
        self._extras = _extras_by_agent(agent, result.info)
        turn = result.turn
        if result.error is not None and (turn is None or turn.agent != agent):
            # The refusal (and the fallback) belongs to the refused agent, not the next one.
            self._notes[agent] = turn.error if turn is not None and turn.error else result.error
            if turn is not None and turn.error and turn.text.startswith(REFUSED + turn.error):
                text = turn.text[len(REFUSED + turn.error):].lstrip("\n")
                turn = dataclasses.replace(turn, text=text, error=None)
        self._turn = turn
        if result.done or turn is None:
            self._end()
        else:
            self.agent_selection = turn.agent
        self._accumulate_rewards()
        self._update_infos()
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> TextObservation:
        if not self._started:
            raise RuntimeError("call reset() before observe()")
        turn = self._turn
        role = agent.rsplit("_", 1)[0]
        if turn is not None and turn.agent == agent:
            text = turn.text
        elif turn is None:
            text = f"You are {agent} ({role}). The shift is over: there is nothing more to decide."
        else:
            text = f"You are {agent} ({role}). Nothing waits for your decision now; {turn.agent} is deciding."
        note = self._notes.get(agent)
        if note is not None:
            text = f"{REFUSED}{note}\n\n{text}"
        return TextObservation(self._fit(text))

    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'human'")
            return None
        text = str(self.observe(self.agent_selection)) if self.agents else "The episode has ended."
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass

    # --- internals ------------------------------------------------------------------------------
    def _call(self, action: str) -> TextStep:
        """The session's answer to ``action``; a call that is not a JSON tool call is refused by the
        session as an unknown tool would be (same penalty, retries, fallback), in our words."""
        try:
            name, arguments = parse_action(action)
        except ToolCallError as refusal:
            result = self.session.step("", None)  # "" is never a tool: the session refuses it
            return _reworded(result, str(refusal))
        return self.session.step(name, arguments)

    def _end(self) -> None:
        """The day is over: every agent is done at once (terminated if it ended before the horizon)."""
        done = self.terminations if self.session.ended_early else self.truncations
        for agent in self.agents:
            done[agent] = True
        self.agent_selection = self.agents[0]

    def _update_infos(self) -> None:
        """One info dict per live agent, built once per step (``last()`` and ``infos`` agree)."""
        session = self.session
        now = session.now
        turn = self._turn
        infos = {}
        for agent in self.agents:
            due = turn is not None and turn.agent == agent and not self.truncations[agent] and not self.terminations[agent]
            infos[agent] = {
                "role": agent.rsplit("_", 1)[0],
                "decision_due": due,
                "phase": turn.phase if due and turn is not None else None,
                "tools": turn.tools if due and turn is not None else [],
                "sim_time": float(now),
                "reward_components": session.reward_components(agent),
                "episode_score": session.score,
                **self._extras.get(agent, {}),
            }
        self.infos = infos

    def _fit(self, text: str) -> str:
        """``text`` inside the observation space: known characters only, at most ``max_length``."""
        charset = self.charset
        if not charset.issuperset(text):
            text = "".join(
                c if c in charset else "?"
                for c in unicodedata.normalize("NFKD", text)
                if c in charset or not unicodedata.combining(c)
            )
        if len(text) > OBSERVATION_MAX_LENGTH:
            cut = len(text) - OBSERVATION_MAX_LENGTH + 64
            mark = f"\n[... {cut} characters cut ...]\n"
            keep = OBSERVATION_MAX_LENGTH - len(mark)
            text = text[: keep // 2] + mark + text[len(text) - (keep - keep // 2):]
        return text


def _reworded(result: TextStep, why: str) -> TextStep:
    """``result`` of a refused call, with the session's reason replaced by ``why`` (the tools offered
    and any fallback note kept)."""
    said = result.error
    if said is None:
        return result
    offered = said[said.index("; use one of:"):] if "; use one of:" in said else ""
    mine = why + offered
    turn = result.turn
    if turn is not None and turn.error is not None:
        turn = dataclasses.replace(turn, text=turn.text.replace(said, mine, 1), error=turn.error.replace(said, mine, 1))
    return dataclasses.replace(result, turn=turn, error=mine)


def _extras_by_agent(acting: str, info: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The session's step info, per agent: each event goes to the agent it concerns (the caller may
    play several), the latest of each kind under its name."""
    events = info.get("events")
    if not events:
        return {acting: dict(info)} if info else {}
    extras: dict[str, dict[str, Any]] = {acting: {}}
    for key, value in info.items():  # anything else the session reports is the acting agent's
        if key not in ("events", "customer_reply", "reply_grade"):
            extras[acting][key] = value
    for event in events:
        mine = extras.setdefault(event["agent"], {})
        mine.setdefault("events", []).append(event)
        mine[event["kind"]] = event.get("reply", event) if event["kind"] == "customer_reply" else event
    return extras


def text_env(
    scenario: ScenarioLike = "standard_day",
    seed: int | None = None,
    roles: tuple[str, ...] = ROLES,
    colleagues: Colleagues = "heuristic",
    render_mode: str | None = None,
    max_retries: int = 2,
    **overrides: Any,
) -> wrappers.OrderEnforcingWrapper:
    """The language-interface AEC environment, wrapped in PettingZoo's ``OrderEnforcingWrapper``.

    ``overrides`` are dotted scenario paths (``horizon_minutes=60``). See the module docstring.
    """
    env = TextContactCenterEnv(
        scenario, seed, roles=roles, colleagues=colleagues, render_mode=render_mode,
        max_retries=max_retries, overrides=overrides or None,
    )
    return wrappers.OrderEnforcingWrapper(env)


__all__ = ["ACTION_FORMAT", "TextContactCenterEnv", "TextObservation", "parse_action", "text_charset", "text_env"]
