"""The porting page's example agent: correct for the bank, and as good as the careful scripted agent."""

from __future__ import annotations

import re
from pathlib import Path

from csr_marl.text.scripted import play
from csr_marl.text.tasks import task_session

PAGE = Path(__file__).resolve().parents[1] / "docs" / "llm" / "porting.md"


def example_agent():
    """``my_agent`` as the page defines it (its first Python block, without the episode it plays)."""
    block = re.search(r"```python\n(.*?)```", PAGE.read_text(), re.S).group(1)
    namespace: dict = {}
    exec(block[: block.index("session = task_session")], namespace)
    return namespace["my_agent"]


def test_the_porting_example_scores_at_the_careful_agents_level() -> None:
    my_agent = example_agent()
    session = task_session("tasks/refund")
    example, careful = [], []
    for seed in range(20):
        turn = session.reset(seed=seed)
        while turn is not None:
            step = session.step(*my_agent(turn.ticket))
            turn = step.turn
        example.append(step.score)
        careful.append(play(session, "careful", seed).score)
    assert sum(example) / 20 >= sum(careful) / 20 - 0.02, (example, careful)


def test_the_seeds_logistics_category_is_shipping() -> None:
    session = task_session("tasks/ticket_classify")
    session.reset(seed=0)
    step = session.step("classify", {"category": "logistics", "priority": "low", "route": "resolver"})
    assert step.error is None
    assert "classified it shipping" in session.conversation[0][0]
