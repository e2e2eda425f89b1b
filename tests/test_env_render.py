"""The ``ansi`` floor view: clock, queues with their tickets, staff and what they do, running KPIs."""

from __future__ import annotations

import pytest
from env_helpers import SHORT, masked_random

import csr_marl


def test_ansi_shows_the_clock_queues_staff_and_kpis():
    env = csr_marl.raw_env("standard_day", overrides=SHORT, render_mode="ansi")
    env.reset(seed=0)
    policy = masked_random(0)
    for _ in range(80):
        env.step(policy(env.infos[env.agent_selection]["action_mask"]))
    text = env.render()
    minute = int(env.center.now)
    assert f"{minute // 60}:{minute % 60:02d}" in text
    for queue in ("triage", "resolver", "escalation"):
        assert f"  {queue}" in text
    for staff in env.center.staff:
        line = next(line for line in text.splitlines() if line.strip().startswith(staff.name + " "))
        assert staff.activity in line or "off shift" in line
        if staff.ticket is not None:
            assert f"#{staff.ticket.id} {staff.ticket.assigned_priority}/{staff.ticket.tier}" in line
    assert f"{env.agent_selection}" in next(line for line in text.splitlines() if "decision due" in line)
    assert "offered" in text and "abandoned" in text and "service level" in text


def test_waiting_tickets_show_priority_tier_and_wait():
    env = csr_marl.raw_env("tasks/queue5", render_mode="ansi")
    env.reset(seed=0)
    policy = masked_random(0)
    while env.center.queues["resolver"].size < 3:
        env.step(policy(env.infos[env.agent_selection]["action_mask"]))
    resolver_line = next(line for line in env.render().splitlines() if line.strip().startswith("resolver "))
    ticket = env.center.queues["resolver"].head()
    assert f"#{ticket.id} {ticket.assigned_priority}/{ticket.tier}" in resolver_line and "m," in resolver_line


def test_human_mode_prints_and_no_mode_warns(capsys):
    env = csr_marl.raw_env("tasks/classify", render_mode="human")
    env.reset(seed=0)
    assert env.render() is None
    assert "csr_marl_v5" in capsys.readouterr().out
    quiet = csr_marl.raw_env("tasks/classify")
    quiet.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert quiet.render() is None
