"""Customers as people: what they answer when asked, how they feel, and how a reply is graded.

The center calls one :class:`CustomerModel` at the moments a customer notices something:

* taken from a queue after a wait, a tool step the ticket did not need, a hand-over between resolvers
  and the desk, a question asked again, the reply that closes the ticket -- each moves the customer's
  sentiment (``customers.sentiment``; the mapping is documented on
  :class:`csr_marl.config.scenario.Sentiment`);
* a hand-over or a reopened contact re-enters a queue with patience scaled by the mood, and an
  unresolved customer comes back with a probability scaled by it;
* ``ask_customer`` gets the customer's reply (:mod:`.dialogue`), deterministic from the hidden facts;
* ``respond_user`` is graded 0.0-0.5 by the rubric (:mod:`.responses`) or a pluggable grader, on the
  message the staff member wrote or, for agents that cannot write, on the documented reply.

With sentiment off (``enabled: false``) nothing is tracked and nothing feeds back: the queueing model is
exactly the one without customers' moods.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

from ..config.scenario import Sentiment
from .dialogue import customer_reply
from .responses import MAX_SCORE, grade_documented, grade_reply
from .tickets import Ticket


class Grade(Protocol):
    """What grading a reply gives: the rubric's ``ReplyGrade``, or another grader's (an LLM judge's)."""

    @property
    def score(self) -> float: ...  # in [0, MAX_SCORE]

    @property
    def parts(self) -> dict[str, float]: ...

    @property
    def notes(self) -> tuple[str, ...]: ...


Grader = Callable[[Ticket, str], Grade]


class CustomerModel:
    """Moods, replies and grades for one center (``sentiment`` None: moods are off)."""

    __slots__ = ("sentiment", "grader", "upset_below")

    def __init__(self, sentiment: Sentiment, grader: Grader | None = None) -> None:
        self.sentiment = sentiment if sentiment.enabled else None
        self.grader: Grader = grader or grade_reply
        self.upset_below = sentiment.upset_below

    # --- moods ----------------------------------------------------------------------------------
    def waited(self, ticket: Ticket, minutes: float) -> None:
        if self.sentiment is not None and minutes > 0:
            _move(ticket, -self.sentiment.wait_per_minute * minutes)

    def wasted_step(self, ticket: Ticket) -> None:
        if self.sentiment is not None:
            _move(ticket, -self.sentiment.wasted_step)

    def handed_over(self, ticket: Ticket) -> None:
        """An escalation or a return: the customer is passed on and queues again, less patient."""
        if self.sentiment is not None:
            _move(ticket, -self.sentiment.handover)
            self.rescale_patience(ticket)

    def rescale_patience(self, ticket: Ticket) -> None:
        """Remaining patience times ``exp(patience_elasticity * sentiment)`` (before a queue entry)."""
        if self.sentiment is not None and ticket.sentiment and ticket.patience_left != math.inf:
            ticket.patience_left *= math.exp(self.sentiment.patience_elasticity * ticket.sentiment)

    def reopen_probability(self, ticket: Ticket, base: float) -> float:
        if self.sentiment is None:
            return base
        return min(1.0, max(0.0, base * (1.0 - self.sentiment.reopen_elasticity * ticket.sentiment)))

    def mood_on_leaving(self, ticket: Ticket, waited: float = 0.0) -> tuple[float, bool] | None:
        """(sentiment, upset) as the customer leaves, after ``waited`` more minutes; None when off."""
        if self.sentiment is None:
            return None
        self.waited(ticket, waited)
        return ticket.sentiment, ticket.sentiment < self.upset_below

    # --- talking --------------------------------------------------------------------------------
    def answer(self, ticket: Ticket, question: str | None) -> tuple[str, bool]:
        """The customer's reply to ``question`` (None: the vector agents' question), and whether it
        was asked before; the topic joins ``ticket.questions`` and the exchange ``ticket.dialogue``."""
        reply = customer_reply(ticket, question)
        ticket.questions = (*ticket.questions, reply.topic)
        ticket.dialogue = (*ticket.dialogue, (question or f"(asked about {reply.topic})", reply.text))
        if reply.repeated and self.sentiment is not None:
            _move(ticket, -self.sentiment.repeated_question)
        return reply.text, reply.repeated

    def grade(self, ticket: Ticket, message: str | None, resolved: bool) -> Grade:
        """Grade the reply that closes the ticket and let the customer react to it (and to the outcome)."""
        grade = grade_documented(ticket, resolved) if message is None else self.grader(ticket, message)
        ticket.grade = grade
        if self.sentiment is not None:
            mood = self.sentiment.reply_weight * (grade.score / MAX_SCORE - 0.5)
            _move(ticket, mood if resolved else mood - self.sentiment.unresolved)
        return grade


def _move(ticket: Ticket, delta: float) -> None:
    value = ticket.sentiment + delta
    ticket.sentiment = -1.0 if value < -1.0 else 1.0 if value > 1.0 else value


__all__ = ["CustomerModel", "Grade", "Grader"]
