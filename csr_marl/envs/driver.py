"""The core as both APIs see it: one ContactCenter episode, its pending decision, seeds, actions.

The driver never simulates anything itself: it asks the core for the next decision, answers it, and
books the core's reward entries into the reward account. The AEC and parallel environments are thin
layers over it that differ only in how they present turns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from ..config.domain import ROLES
from ..config.loading import load_ticket_bank
from ..config.scenario import Scenario
from ..sim.center import ContactCenter
from ..sim.customers import Grader
from ..sim.decisions import Decision, IllegalActionError
from ..sim.staff import Staff
from ..sim.tickets import Refund
from .illegal_warning import (  # noqa: F401  (IllegalActionWarning: importable from here, as before)
    ILLEGAL_WARN_WINDOW,
    IllegalActionWarning,
    illegal_beyond_rate,
    warn_illegal,
)
from .layout import Layout
from .observations import ObservationEncoder
from .rewards import RewardAccount

# What the illegal-action judgement reads, held by this module: compiled, a Final is a C static, which a
# closing interpreter does not clear (a name looked up in the module's dict may read None by then, and
# an environment stepped by a garbage-collected vector env at exit would raise instead of judging).
_WINDOW: Final = ILLEGAL_WARN_WINDOW
_BEYOND_RATE: Final = illegal_beyond_rate
_WARN: Final = warn_illegal

def agent_names(scenario: Scenario) -> list[str]:
    """One agent per staff slot at peak staffing, in role order (the core's staff names)."""
    return [f"{role}_{i}" for role in ROLES for i in range(scenario.staffing.peak(role))]


class CenterDriver:
    """One episode of the core as the environments present it.

    ``strict``: an illegal action raises :class:`IllegalActionError` and changes nothing; otherwise it
    costs ``rewards.illegal_action`` and the decision takes a uniformly random legal action, drawn
    from the core's ``illegal_fallback`` stream (a fallback that carries no information, so acting
    illegally is never better than acting at random). Illegal actions are counted per agent.
    ``interval``: the decision epoch in minutes, for :meth:`act_epoch` (the parallel API); None
    (event-driven): each parallel step runs the core to the next minute at which a decision is due
    and every decision due at that minute is taken in the step. ``learners``: the agents whose
    illegal actions are judged at every episode's end (None: every agent; a Gymnasium task names
    its learner, whose colleagues are built-in policies), at each of their illegal actions, as it is
    taken (see :meth:`_judge`).
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        uniform_spaces: bool = True,
        flat_observations: bool = True,
        strict: bool = False,
        interval: float | None = None,
        seed: int | None = None,
        grader: Grader | None = None,
        learners: tuple[str, ...] | None = None,
    ) -> None:
        self.scenario = scenario
        self.grader = grader  # grades respond_user's messages instead of the rubric (e.g. a judge)
        self.flat = flat_observations
        self.strict = strict
        self.interval = interval
        self.layout = Layout(scenario, load_ticket_bank(scenario.tickets.bank), uniform_spaces)
        self.agents = agent_names(scenario)
        self.role_of = {agent: agent.rsplit("_", 1)[0] for agent in self.agents}
        self.encoder = ObservationEncoder(self.layout, scenario)
        self.account = RewardAccount(scenario.rewards)
        self.illegal_penalty = scenario.rewards.illegal_action
        self.center: ContactCenter | None = None
        self.decision: Decision | None = None  # the AEC turn's decision (the first due in epochs)
        self.due: dict[str, Decision] = {}  # every decision waiting, by agent, in the order they fell due
        self.staff: dict[str, Staff] = {}
        self.last_decided: dict[str, float] = {}
        self.version = 0  # counts moves of the core, for caches
        self.epochs = 0  # parallel steps taken this episode
        self.stopped = False  # truncated before the horizon by the environment (max_cycles)
        self._boundary = 0.0  # the current decision epoch's end
        self._first_seed = seed
        self._seeds: np.random.Generator | None = None
        self.episode_seed: int | None = None
        # The masks and AEC infos built since the core last moved, by agent. Emptied at every move, so
        # that what a step replaced is freed while it is still in the CPU's caches, not when its agent
        # next acts (with 200 agents, some hundred steps later, from memory).
        self._masks: dict[str, np.ndarray] = {}
        self._infos: dict[str, dict[str, Any]] = {}
        # per agent: its role's waiting samples not yet handed out (ObservationEncoder.waiting_rows)
        self._waiting_rows = {agent: self.encoder.waiting_rows(role) for agent, role in self.role_of.items()}
        self.decisions = dict.fromkeys(self.agents, 0)  # decisions answered this episode, per agent
        self.illegal = dict.fromkeys(self.agents, 0)  # of which illegal (answered by the fallback)
        self._decided_total = self._illegal_total = 0  # their sums, kept as they change
        self._kpis: dict[str, float] = {}  # the episode's illegal-action KPIs (the core's extra KPIs)
        self.learners = tuple(self.agents) if learners is None else tuple(learners)
        self.in_episode = False  # an episode started and not ended yet
        # per learner: (decisions, illegal) since its count was last cleared, over episodes (_judge)
        self._unjudged = {agent: [0, 0] for agent in self.learners}
        self.warned: set[str] = set()  # the agent warned about (an environment warns once)

    # --- episodes -------------------------------------------------------------------------------
    def start(self, seed: int | None = None, *, epochs: bool = False) -> None:
        """A new episode. ``seed`` seeds the core's streams exactly as ``simulate(seed=...)`` does;
        without one, the episode's seed is drawn from the last seed given (or the constructor's).
        With ``epochs`` (the parallel API) the core runs to the first step with a decision in it."""
        if self.in_episode:  # a reset in mid-episode ends that episode
            self.end_episode()
        if seed is None:
            seed = self._next_seed()
        else:
            self._seeds = np.random.default_rng(seed)
        self.episode_seed = seed
        if self.center is not None:
            self.center.close()  # ended or not: its processes go, so it is freed once nobody holds it
        self.center = ContactCenter(self.scenario, seed, track_rewards=True, grader=self.grader)
        self.staff = {staff.name: staff for staff in self.center.staff}
        self.account.reset()
        self.last_decided = {}
        self.decisions = dict.fromkeys(self.agents, 0)
        self.illegal = dict.fromkeys(self.agents, 0)
        self._decided_total = self._illegal_total = 0
        self._kpis = self.center.kpis.extra
        self._kpis.update(illegal_actions=0, illegal_action_share=0.0)
        self.epochs = 0
        self.stopped = False
        self.in_episode = True
        self._boundary = 0.0
        # Rewards accrued before the first decision stay in the ledger and reach the first step
        # (PettingZoo starts every episode with zero rewards).
        if epochs:
            self._next_epoch()
        else:
            self._set_decision(self.center.next_decision())

    def _next_seed(self) -> int:
        if self._seeds is None:
            if self._first_seed is not None:
                self._seeds = np.random.default_rng(self._first_seed)
                return self._first_seed
            self._seeds = np.random.default_rng()
        return int(self._seeds.integers(2**63))

    @property
    def ended(self) -> bool:
        return self.center is not None and self.center.done

    @property
    def ended_early(self) -> bool:
        """The episode ended before the horizon (``max_tickets`` reached, every ticket closed)."""
        center = self.center
        return (
            center is not None and center.end_time is not None and center.end_time < center.horizon
            and not self.stopped
        )

    def _set_due(self, *decisions: Decision | None) -> None:
        self.due = {d.agent: d for d in decisions if d is not None}
        self.decision = next(iter(self.due.values()), None)
        self._moved()

    def _moved(self) -> None:
        """The core moved: what agents see must be built again."""
        self.encoder.invalidate()
        if self._masks:
            self._masks.clear()
        if self._infos:
            self._infos.clear()
        self.version += 1

    def _set_decision(self, decision: Decision | None) -> None:
        """:meth:`_set_due` for one decision or none (AEC turns)."""
        self.due = {decision.staff.name: decision} if decision is not None else {}
        self.decision = decision
        self._moved()

    def _next_epoch(self) -> None:
        """Run the core to the next parallel step: epoch by epoch until one ends with a decision due
        (``interval`` given), or else to the next minute a decision is due, collecting every
        decision that falls due at that same minute (or to the episode's end)."""
        center = self.center
        assert center is not None
        if self.interval is None:
            first = center.next_decision()
            if first is not None:
                env, now = center.env, center.env._now
                events = env._queue  # env.peek() without the interpreted call
                while events and events[0][0] <= now:  # the rest of this minute's events (ties, in order)
                    env.step()
            self._set_due(*center.due)
            return
        due: list[Decision] = []
        while not due and not center.done:
            self._boundary += self.interval
            due = center.run_until(self._boundary)
        self._set_due(*due)

    # --- acting ---------------------------------------------------------------------------------
    def act(self, action: Any, text: str | None = None, refund: Refund | None = None) -> str | None:
        """The agent whose decision is due takes its turn: answer, then run the core to the next one.
        Returns the agent whose decision is due next (None: the episode has ended).

        The step's rewards start from zero, and so does the acting agent's reward since its last turn.
        ``text`` is what a work tool says (``respond_user``'s message, ``ask_customer``'s question),
        ``refund`` a refund's amount and order (None: what is owed).
        """
        decision, center = self.decision, self.center
        assert decision is not None and center is not None
        index = int(action)
        index, illegal = (index, False) if decision.allows(index) else self._checked(decision, index)
        self.account.turn(decision.staff.name)
        self._answer(decision, index, illegal, text, refund)
        following = center.next_decision()
        self._set_decision(following)
        self.account.add(center.rewards.drain())
        if following is None:
            self.end_episode()
            return None
        return following.staff.name

    def act_epoch(self, actions: Mapping[str, int]) -> None:
        """One parallel step: every due decision is answered (in the order they fell due, which
        settles two picks of one ticket), waiting agents' actions are checked, and the core runs to
        the next decision epoch with a decision in it. Nothing changes if an action is refused."""
        center = self.center
        assert center is not None
        answers = [(d, self._checked(d, actions[agent])) for agent, d in self.due.items()]
        if self.strict:  # otherwise waiting agents' actions are ignored unread
            for agent, action in actions.items():
                if agent not in self.due:
                    self._waiting(agent, action)
        self.account.begin_step()
        for decision, answer in answers:
            self._answer(decision, *answer)
        self.epochs += 1
        self._next_epoch()
        self.account.add(center.rewards.drain())
        if self.ended:
            self.end_episode()

    def stop(self) -> None:
        """Truncate the episode now (``max_cycles``): the core's KPIs cover the minutes so far."""
        assert self.center is not None
        self.center.stop()
        self.stopped = True
        self._set_due()
        self.account.add(self.center.rewards.drain())
        self.end_episode()

    def _checked(self, decision: Decision, index: int) -> tuple[int, bool]:
        """(the action to take, whether the agent's was illegal): ``index`` if legal, else the
        decision's fallback -- or, in strict mode, a raise before anything changes."""
        if decision.allows(index):  # only ever core actions (0 <= index < core_actions)
            return index, False
        if self.strict:
            layout = self.layout.roles_layout[decision.role]
            raise IllegalActionError(_why_illegal(decision, layout.core_actions, layout.noop, index))
        return self.fallback(decision), True

    def fallback(self, decision: Decision) -> int:
        """The action an illegal one is replaced by: uniformly random among the legal actions, from
        the core's ``illegal_fallback`` stream (no other stream's draws change)."""
        assert self.center is not None
        legal = decision.legal
        return legal[int(self.center.streams["illegal_fallback"].integers(len(legal)))]

    def _answer(
        self, decision: Decision, index: int, illegal: bool, text: str | None = None, refund: Refund | None = None
    ) -> None:
        """Answer a decision with a checked action; an illegal one's penalty goes to its agent."""
        center = self.center
        assert center is not None
        agent = decision.staff.name
        self.decisions[agent] = self.decisions[agent] + 1
        self._decided_total += 1
        if illegal:
            center.rewards.add("illegal_action", self.illegal_penalty, agent)
            self.illegal[agent] = self.illegal[agent] + 1
            self._illegal_total += 1
        if self._illegal_total:  # running totals: nothing in a step grows with the agents
            self._kpis["illegal_actions"] = self._illegal_total
            self._kpis["illegal_action_share"] = self._illegal_total / self._decided_total
        self.last_decided[agent] = center.env._now
        center.decide(index, decision, text=None if illegal else text, refund=None if illegal else refund)
        pending = self._unjudged.get(agent)
        if pending is not None:  # a learner: judged as it acts, so a policy is warned while it trains
            self._judge(agent, pending, illegal)

    def _judge(self, agent: str, pending: list[int], illegal: bool) -> None:
        """Count a learner's decision; at an illegal one, warn if its decisions since its count was last
        cleared are illegal beyond chance (:func:`~csr_marl.envs.illegal_warning.illegal_beyond_rate`:
        a binomial test against a policy illegal on 5 % of its decisions). The count carries over
        episodes, so short episodes add up, and is cleared every ``ILLEGAL_WARN_WINDOW`` decisions.
        An environment warns once, for the first agent found, at the step of the illegal action that
        settles it: while the policy trains, whether or not its episodes end."""
        decided = pending[0] + 1
        illegals = pending[1] + 1 if illegal else pending[1]
        if decided >= _WINDOW:
            pending[0] = pending[1] = 0
        else:
            pending[0] = decided
            pending[1] = illegals
        if illegal and not self.warned and _BEYOND_RATE(illegals, decided):
            self.warned.add(agent)
            self._unjudged = {}  # warned: nothing left to judge in this environment
            _WARN(f"{agent} {illegals / decided:.0%} ({illegals} of {decided} decisions)")

    def end_episode(self) -> None:
        """The episode ended (by itself, by :meth:`stop`, by a new :meth:`start` or by the environment's
        ``close()``). Illegal actions are judged as they are taken (:meth:`_judge`), so nothing is left
        to judge here; ending an episode twice does nothing."""
        self.in_episode = False

    def _waiting(self, agent: str, action: int) -> None:
        """An agent with nothing to decide: its action is ignored (only the no-op is unmasked);
        in strict mode anything but the no-op raises."""
        noop = self.layout.roles_layout[self.role_of[agent]].noop
        if self.strict and int(action) != noop:
            raise IllegalActionError(
                f"{agent} has nothing to decide now: only the no-op ({noop}) is legal, got {int(action)}"
            )

    # --- what agents see ------------------------------------------------------------------------
    def mask(self, agent: str, noop: bool) -> np.ndarray:
        """The agent's action mask: its decision's legal actions, else nothing (AEC) or the no-op."""
        decision = self.due.get(agent)
        if decision is None:
            return self.encoder.idle_mask(self.role_of[agent], noop)
        mask = self._masks.get(agent)
        if mask is None:
            mask = self._masks[agent] = self.encoder.mask(self.layout.roles_layout[decision.role], decision)
        return mask

    def observation(self, agent: str, mask: np.ndarray | None) -> dict[str, np.ndarray] | np.ndarray:
        """The agent's observation: the vector, with its mask unless observations are flat (then
        ``mask`` may be None)."""
        assert self.center is not None
        vector = self.encoder.observe(self.center, self.staff[agent], self.due.get(agent))
        if self.flat:
            return vector
        assert mask is not None
        return {"observation": vector, "action_mask": mask}

    def chosen_actions(self, actions: Mapping[str, Any]) -> dict[str, int]:
        """A parallel step's actions as ints, checked: every agent whose decision is due has one, every
        agent named exists and every action is an integer (a ValueError naming what is wrong).

        Returned: the actions that count, those of the agents whose decision is due (in strict mode
        every agent's, since a waiting agent's must be the no-op). Waiting agents' actions are
        ignored otherwise, so they are checked but not kept (a dozen a step in ``standard_day``)."""
        due = self.due
        missing = [agent for agent in due if agent not in actions]
        if missing:
            raise ValueError(f"no action for {', '.join(missing)}, whose decision is due (actions: {sorted(actions)})")
        chosen: dict[str, int] = {}
        known, keep_all = self.role_of, self.strict
        for agent, action in actions.items():
            if agent not in known:
                raise ValueError(f"unknown agent {agent!r}")
            if type(action) is not int:
                action = as_action(agent, action)
            if keep_all or agent in due:
                chosen[agent] = action
        return chosen

    def parallel_step(
        self,
        actions: Mapping[str, Any],
        agents: list[str],
        running: dict[str, bool],
        max_cycles: int | None,
        observe_waiting: bool,
        history: list[Any],
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
        """The parallel env's step for its live ``agents``: the actions checked and answered (and
        appended to ``history``, which a copy replays), the core run to the next step (or stopped
        after ``max_cycles`` steps), then what PettingZoo's ``step`` returns. ``running``: every
        agent of the episode, none done, copied for the flags while nobody has left."""
        chosen = self.chosen_actions(actions)
        self.act_epoch(chosen)
        history.append(chosen)
        if max_cycles is not None and self.epochs >= max_cycles and not self.ended:
            self.stop()
        observations, infos = self.parallel_view(agents, observe_waiting)
        rewards = self.account.last_step_all(agents)
        if self.ended:
            early = self.ended_early
            terminations, truncations = dict.fromkeys(agents, early), dict.fromkeys(agents, not early)
        elif len(running) == len(agents):  # the agents of reset() (nobody leaves before the end)
            terminations, truncations = running.copy(), running.copy()
        else:
            terminations, truncations = dict.fromkeys(agents, False), dict.fromkeys(agents, False)
        return observations, rewards, terminations, truncations, infos

    def parallel_view(
        self, agents: list[str], observe_waiting: bool = True
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Every live agent's observation and info after a parallel step, in one pass.

        Agents whose decision is due (and every agent at the episode's end, whose trajectories close
        there) get their observation computed. The others get their role's constant waiting
        observation (:meth:`ObservationEncoder.waiting_observation`) and the no-op mask, a no-op sample
        (``decision_due`` False); or nothing at all without ``observe_waiting`` (``RLlibEnv``, which
        hands RLlib the deciding agents only). Reward components are the step's (per agent: a fresh
        copy, plus what it earned alone)."""
        center = self.center
        assert center is not None
        due, full, flat, role_of = self.due, self.ended, self.flat, self.role_of
        now = center.env._now
        last_decided, illegal = self.last_decided, self.illegal
        encoder, waiting_rows = self.encoder, self._waiting_rows
        account = self.account
        team, step_own = account.step_points(), account.step_own
        team_copy = team.copy  # looked up once: a copy for every agent
        observations: dict[str, Any] = {}
        infos: dict[str, dict[str, Any]] = {}
        sim_time: object = now  # boxed once, not once per agent
        for agent in agents:
            deciding = agent in due
            if full or deciding:
                mask = self.mask(agent, True)
                observations[agent] = self.observation(agent, mask)
            elif observe_waiting:
                rows = waiting_rows[agent]  # its role's (shared): one lookup for the role and its rows
                if not rows:
                    rows.extend(encoder.waiting_block(role_of[agent]))
                vector, mask = rows.pop()
                observations[agent] = vector if flat else {"observation": vector, "action_mask": mask}
            else:
                continue
            alone = step_own and agent in step_own  # earned alone this step (individual, mixed modes)
            infos[agent] = _info(
                mask, deciding, sim_time, now - last_decided.get(agent, 0.0),
                account.last_step_components(agent) if alone else team_copy(), illegal[agent],
            )
        return observations, infos

    def info(self, agent: str, mask: np.ndarray, components: np.ndarray) -> dict[str, Any]:
        assert self.center is not None
        now = self.center.env._now
        return _info(
            mask, agent in self.due, now, now - self.last_decided.get(agent, 0.0), components, self.illegal[agent]
        )

    def turn_info(self, agent: str) -> dict[str, Any]:
        """The AEC env's ``infos[agent]``: its mask (no no-op), what it earned since its turn by
        component, built once per move of the core (``info == env.infos[agent]`` must hold within a
        step, and a second read returns the same dict)."""
        info = self._infos.get(agent)
        if info is None:
            info = self._infos[agent] = self.info(
                agent, self.mask(agent, False), self.account.since_turn_components(agent)
            )
        return info

    def state(self) -> np.ndarray:
        assert self.center is not None
        return self.encoder.state(self.center, self.decision)


def as_action(agent: str, action: Any) -> int:
    """An action as an int: Python and numpy integers (a one-element integer array too); else a
    ValueError naming the agent and the value. Nothing is truncated: 5.7 or "5" is refused."""
    if type(action) is int:  # the usual case, first (bool, an int subclass, falls through)
        return action
    if isinstance(action, np.ndarray) and action.size == 1 and np.issubdtype(action.dtype, np.integer):
        return int(action.reshape(()))
    if isinstance(action, (int, np.integer)) and not isinstance(action, bool):
        return int(action)
    if action is None:
        raise ValueError(f"{agent} has a decision to take: None is only for agents that are done")
    raise ValueError(f"{agent}: an action is an integer index, got {action!r} ({type(action).__name__})")


def _info(
    mask: np.ndarray, due: bool, now: object, since: float, components: np.ndarray, illegal: int
) -> dict[str, Any]:
    """An agent's info dict (the env card's Info section). ``now``: the simulated minute, a float (typed
    ``object`` so that a caller filling a dozen infos boxes it once)."""
    return {
        "action_mask": mask,
        "decision_due": due,
        "sim_time": now,
        "time_since_last_decision": since,
        "reward_components": components,
        "illegal_actions": illegal,
    }


def _why_illegal(decision: Decision, core_actions: int, noop: int, index: int) -> str:
    if 0 <= index < core_actions:
        what = f"{decision.describe(index)!r}, not legal now"
    elif index == noop:
        what = "the no-op, which only agents with nothing to decide take (parallel API)"
    elif 0 <= index < noop:
        what = "padding (uniform_spaces)"
    else:
        what = f"outside the action space (0..{noop})"
    return f"{decision.agent} ({decision.phase.value}): action {index} is {what}; legal actions: {decision.legal}"
