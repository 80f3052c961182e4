"""Neuron's logit-matching criteria on synthetic positions: what passes, what fails and why, what cannot be checked
with the log-probabilities a container returns."""

from __future__ import annotations

import math

import pytest

from smneuron.evaluation import logits


def _reference(values: list[float]) -> dict:
    """One reference position from logits over a small vocabulary (token id = index), best first."""
    norm = math.log(sum(math.exp(v) for v in values))
    order = sorted(range(len(values)), key=lambda t: -values[t])
    return {
        "ids": order,
        "logits": [values[t] for t in order],
        "logprobs": [values[t] - norm for t in order],
    }


def _served(values: list[float], top: int) -> dict[int, float]:
    """What a container returns for the same position: the top log-probabilities, by token id."""
    norm = math.log(sum(math.exp(v) for v in values))
    order = sorted(range(len(values)), key=lambda t: -values[t])[:top]
    return {t: values[t] - norm for t in order}


LOGITS = [12.0, 11.0, 9.5, 9.0, 8.0, 7.0, 3.0, 2.0, 1.0, 0.5, 0.1, -1.0]


def test_the_same_distribution_passes_with_what_could_not_be_checked_said():
    m = logits.compare([[_reference(LOGITS)] * 3], [[_served(LOGITS, 10)] * 3], returned=10)
    assert m.share == 1.0 and m.bhattacharyya == pytest.approx(1.0) and m.first_failure is None
    assert m.checked == ["top-5"] and m.unchecked == ["top-50", "top-1000", "all"]


def test_a_top5_logit_beyond_rtol_fails_with_the_token_and_rank():
    worse = list(LOGITS)
    worse[3] += 0.2  # rank 4: 9.0 -> 9.2, beyond 1e-5 + 0.011 * 9.0
    m = logits.compare([[_reference(LOGITS)]], [[_served(worse, 10)]], returned=10)
    first = m.first_failure
    assert m.share == 0.0 and first is not None and (first.prompt, first.index) == (0, 0)
    assert "top-5: token 3 (rank 4)" in first.failed and "rtol 0.011" in first.failed
    # within tolerance: 0.05 on 9.0 is 0.0056 relative
    close = list(LOGITS)
    close[3] += 0.05
    assert logits.compare([[_reference(LOGITS)]], [[_served(close, 10)]], returned=10).share == 1.0


def test_a_greedy_divergence_is_tolerated_only_at_a_near_tie():
    tie = [10.0, 10.0005, 5.0, 4.0, 3.0, 2.0]  # the reference prefers token 1 by 0.0005 (< 0.001)
    swapped = [10.001, 10.0, 5.0, 4.0, 3.0, 2.0]
    m = logits.compare([[_reference(tie)]], [[_served(swapped, 6)]], returned=6)
    assert m.positions[0].candidate_token == 0 and m.positions[0].reference_token == 1
    assert "greedy divergence" not in m.positions[0].failed
    far = [10.0, 11.0, 5.0, 4.0, 3.0, 2.0]
    m = logits.compare([[_reference(far)]], [[_served(LOGITS[:6], 6)]], returned=6)
    assert "greedy divergence" in m.positions[0].failed and "differ by 1" in m.positions[0].failed


def test_other_weights_lower_the_bhattacharyya_coefficient():
    other = [v * 0.5 for v in reversed(LOGITS)]
    m = logits.compare([[_reference(LOGITS)]], [[_served(other, 12)]], returned=12)
    assert m.bhattacharyya < 0.5 and m.share == 0.0


def test_the_teacher_request_and_token_id_answers_parse_and_a_string_keyed_one_is_not_guessed():
    request = logits.teacher_request([1, 2, 3], 20)
    assert request["echo"] and request["logprobs"] == 20 and request["return_tokens_as_token_ids"]
    answer = {"choices": [{"logprobs": {"top_logprobs": [None, {"token_id:5": -0.1}, {"token_id:7": -0.2}]}}]}
    assert logits.candidate_positions(answer, 1, 2) == [{5: -0.1}, {7: -0.2}]
    strings = {"choices": [{"logprobs": {"top_logprobs": [None, {"the": -0.1}, {"a": -0.2}]}}]}
    assert logits.candidate_positions(strings, 1, 2) is None
    assert logits.candidate_positions({"choices": [{"logprobs": {"top_logprobs": None}}]}, 1, 2) is None
