"""Observation, state and action layouts: every feature named, visible information only, cached text."""

from __future__ import annotations

import re
import struct
import zlib

import numpy as np
import pytest
from env_helpers import SHORT, masked_random

import csr_marl
from csr_marl.envs.observations import TextHasher
from csr_marl.policies import HeuristicPolicy
from csr_marl.sim import Phase


def test_every_position_is_named_and_sizes_follow_the_env_card():
    env = csr_marl.raw_env("standard_day", uniform_spaces=False, flat_observations=False)
    sizes = {role: len(env.feature_names(role)) for role in ("triage", "resolver", "escalation")}
    assert sizes == {"triage": 113, "resolver": 178, "escalation": 178}  # D=32, F=30, K=5
    for agent in env.possible_agents:
        assert env.observation_space(agent)["observation"].shape == (len(env.feature_names(agent)),)
        names = env.action_names(agent)
        assert env.action_space(agent).n == len(names) and names[-1] == "noop"
    assert env.action_names("triage")[:2] == ("billing/low->resolver", "billing/low->escalation")
    assert env.action_names("escalation")[5:] == (
        "approve_refund", "engineering_fix", "fraud_review", "account_recovery", "legal_review",
        "respond_user", "return_to_resolver", "ask_customer", "noop",
    )
    assert len(env.state_names) == env.state_space.shape[0] == 67 + 32 + 30 + 26 * 5


def test_by_default_spaces_are_uniform_with_a_role_one_hot_and_the_no_op_last():
    env = csr_marl.raw_env("standard_day")
    assert {env.observation_space(a).shape for a in env.possible_agents} == {(181,)}
    first = env.possible_agents[0]
    assert all(env.observation_space(a) == env.observation_space(first) for a in env.possible_agents)
    assert {env.action_space(a).n for a in env.possible_agents} == {33}
    assert env.action_names("resolver")[14:16] == ("pad_0", "pad_1")
    env.reset(seed=0)
    for agent in ("triage_0", "resolver_0", "escalation_0"):
        observation = env.observe(agent)
        role = agent.split("_")[0]
        assert observation[:3].tolist() == [float(role == r) for r in ("triage", "resolver", "escalation")]


def test_text_features_are_stable_signed_hashes_with_numbers_folded():
    hasher = TextHasher(8)
    vector = np.array(hasher("Charged twice, order 4471"))
    expected = np.zeros(8)
    for word in ("charged", "twice", "order", "0"):
        h = zlib.crc32(word.encode())
        expected[h % 8] += 1.0 if h & 0x80000000 else -1.0
    np.testing.assert_allclose(vector, expected / np.linalg.norm(expected))
    assert hasher("order 4471") == hasher("ORDER 98")


def _reference_features(text: str, n: int) -> np.ndarray:
    """The text features from their definition: every word (numbers as ``0``), CRC-32 signed hashing."""
    counts = np.zeros(n)
    for word in re.findall(r"[a-z]+(?:'[a-z]+)?|[0-9]+", text.lower()):
        h = zlib.crc32(b"0" if word[0].isdigit() else word.encode())
        counts[h % n] += 1.0 if h & 0x80000000 else -1.0
    norm = np.linalg.norm(counts)
    return counts / norm if norm else counts


def test_text_features_summed_by_sentence_equal_the_whole_texts_and_pack_as_observations_hold_them():
    """The hasher sums a text's counts sentence by sentence from a cache: the features are still those of
    the whole text's words, for tickets of the shipped bank and for text with every separator."""
    env = csr_marl.raw_env("standard_day")
    env.reset(seed=3)
    factory = env.unwrapped.center.factory
    texts = [factory.new(0.0).text for _ in range(300)] + [
        "", "...", "Hi!!! it's me?? Order 12.50.\nNew line\r\nand P.S. don't.won't!can't?",
        "Café naïve résumé: 3 items.", "A.B.C 1.2.3 a'b' 'quoted' end.", "UPPER CASE. lower case.",
    ]
    hasher, fresh = TextHasher(32), TextHasher(32)
    for text in texts + texts:  # the second pass reads the caches
        features = hasher(text)
        np.testing.assert_allclose(features, _reference_features(text, 32), rtol=0, atol=1e-15)
        assert hasher.packed(text) == struct.pack("32f", *features) == fresh.packed(text)


def test_character_grams_carry_an_unseen_word_to_the_words_it_resembles():
    words, grams = TextHasher(512), TextHasher(512, (2, 5))
    assert np.linalg.norm(grams("refund for order 12")) == pytest.approx(1.0)
    assert grams("order 4471") == grams("ORDER 98")  # numbers still fold to one token

    def cosine(hasher, a, b):
        return float(np.dot(hasher(a), hasher(b)))

    # "refunded" was never seen with "refund": as words they share nothing, as grams most of their letters
    assert abs(cosine(words, "refunded", "refund")) < 0.2
    assert cosine(grams, "refunded", "refund") > 0.3  # half the vector is the words', half the grams'
    assert cosine(grams, "refunded", "refund") > cosine(grams, "refunded", "password") + 0.3


def test_character_grams_widen_the_observation_only_where_asked():
    plain = csr_marl.raw_env("tasks/classify")
    rich = csr_marl.raw_env("tasks/classify", overrides={"observation.text_features": 2048, "observation.text_chars": [2, 5]})
    assert rich.observation_space("triage_0").shape[0] - plain.observation_space("triage_0").shape[0] == 2048 - 32
    with pytest.raises(ValueError, match="text_chars"):
        csr_marl.load_scenario("tasks/classify", overrides={"observation.text_chars": [5, 2]})


def test_text_features_are_computed_once_per_ticket():
    # Read through what the encoder keeps (the compiled build's encoder takes no stand-in hasher): a
    # ticket's features are one object for its whole life, built at its first observation.
    env = csr_marl.raw_env("standard_day", overrides=SHORT)
    env.reset(seed=0)
    policy = masked_random(0)
    features: dict[int, tuple[object, np.ndarray]] = {}  # id(ticket) -> (ticket, its first features)
    observed = 0
    while env.pending_decision is not None:
        agent = env.agent_selection
        ticket = env.pending_decision.staff.ticket
        if ticket is not None and id(ticket) not in features:
            assert not isinstance(ticket.cache, np.ndarray)  # nothing computed before it is observed
        env.observe(agent)
        env.observe(agent)
        if ticket is not None:
            assert isinstance(ticket.cache, np.ndarray)
            first = features.setdefault(id(ticket), (ticket, ticket.cache))[1]
            assert ticket.cache is first
            observed += 1
        env.step(policy(env.infos[agent]["action_mask"]))
    assert observed > len(features) > 10  # most tickets were observed more than once


def test_observations_show_only_what_staff_can_see():
    env = csr_marl.raw_env("standard_day", overrides=SHORT)
    env.reset(seed=0)
    agent = env.agent_selection
    ticket = env.pending_decision.staff.ticket
    before = env.observe(agent)
    ticket.true_category, ticket.true_priority = "general", "urgent"
    ticket.facts = {"payment_status": "fraud_suspected"}
    env._driver.encoder.invalidate()
    np.testing.assert_array_equal(before, env.observe(agent))


def test_revealed_facts_and_steps_done_appear_in_the_ticket_block():
    env = csr_marl.raw_env("tasks/resolve")
    env.reset(seed=0)
    policy = HeuristicPolicy(env.scenario)
    names = env.feature_names("resolver")
    seen = 0
    while env.pending_decision is not None:
        decision = env.pending_decision
        observation = dict(zip(names, env.observe(decision.agent)))
        if decision.phase is Phase.WORK:
            ticket = decision.ticket
            for fact, value in ticket.revealed.items():
                assert observation[f"fact_{fact}={value}"] == 1.0
                seen += 1
            assert {n.removeprefix("done_") for n, v in observation.items() if n.startswith("done_") and v} == set(ticket.done)
            assert sum(v for n, v in observation.items() if n.startswith("fact_")) == len(ticket.revealed)
        env.step(policy(decision))
    assert seen > 0


def test_pick_observations_show_the_decisions_slots():
    env = csr_marl.raw_env("standard_day", overrides={"staffing.resolver": 2, **SHORT})
    env.reset(seed=1)
    policy = masked_random(1)
    names = env.feature_names("resolver")
    picks = 0
    while env.pending_decision is not None:
        decision = env.pending_decision
        observation = env.observe(decision.agent)
        if decision.phase is Phase.PICK:
            picks += 1
            features = dict(zip(names, observation))
            assert sum(features[f"slot{i}_present"] for i in range(5)) == len(decision.slots)
            for i, ticket in enumerate(decision.slots):
                assert features[f"slot{i}_priority_{ticket.assigned_priority}"] == 1.0
                assert features[f"slot{i}_tier_{ticket.tier}"] == 1.0
            assert features["ticket_present"] == 0.0 and features["phase_pick"] == 1.0
        env.step(policy(env.infos[decision.agent]["action_mask"]))
    assert picks >= 10


def test_state_is_a_global_vector_with_the_pending_tickets_truth():
    env = csr_marl.raw_env("standard_day", overrides=SHORT)
    env.reset(seed=2)
    policy = masked_random(2)
    while True:
        state = env.state()
        assert env.state_space.contains(state)
        features = dict(zip(env.state_names, state))
        decision = env.pending_decision
        if decision is None:
            assert features["pending_phase_none"] == 1.0
            break
        assert features[f"pending_role_{decision.role}"] == 1.0
        ticket = decision.staff.ticket
        if ticket is not None:
            assert features[f"pending_true_priority_{ticket.true_priority}"] == 1.0
            assert features["pending_needs_escalation"] == float(ticket.requirement.needs_escalation)
        env.step(policy(env.infos[env.agent_selection]["action_mask"]))


@pytest.mark.parametrize("scenario", ["validation/mmc", "tasks/classify"])
def test_small_banks_and_roles_without_slots(scenario):
    env = csr_marl.raw_env(scenario, overrides=SHORT)
    env.reset(seed=0)
    agent = env.agent_selection
    assert env.observation_space(agent).contains(env.observe(agent))
