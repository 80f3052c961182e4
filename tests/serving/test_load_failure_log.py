"""The load failure read from TorchServe's console log names the exception, also while the newest retry's traceback is
still being written (a FailureReason without the exception's own line was seen once under load)."""

from __future__ import annotations

from smneuron.serving.torchserve import load_failure


def _attempt(*, whole: bool = True, death: bool = True) -> list[str]:
    frames = [
        "Failed to load model model, exception",
        "Traceback (most recent call last):",
        '  File "/opt/ml/model/code/inference.py", line 3, in model_fn',
        "    raise RuntimeError(...)",
        "RuntimeError: weights file model.pth is corrupt",
    ]
    lines = [f"2026-11-27T10:00:00,000 [INFO ] W-9000-model-stdout MODEL_LOG - {f}" for f in frames]
    if not whole:
        lines = lines[:3]  # the retry's traceback, cut where the reader found it
    elif death:
        lines.append(
            "2026-11-27T10:00:00,001 [INFO ] W-9000-model-stdout MODEL_LOG - Backend worker process died."
        )
    return lines


def test_the_newest_whole_traceback_is_read_and_a_half_written_one_is_not():
    console = "\n".join(["starting"] + _attempt() + _attempt() + _attempt(whole=False))
    said = load_failure(console)
    assert said is not None and said.endswith("RuntimeError: weights file model.pth is corrupt")
    assert (
        load_failure("\n".join(_attempt())) is None
    )  # one failed load: TorchServe retries, not yet a failure


def test_a_traceback_followed_by_the_next_attempt_is_whole_without_a_death_line():
    """The worker's death line not read yet (or not logged as MODEL_LOG): the earlier attempt's traceback ends where the
    next attempt begins; it ran on into the half-written one, and the FailureReason lost the exception (a full run,
    test_load_failures)."""
    console = "\n".join(["starting"] + _attempt(death=False) + _attempt(whole=False))
    said = load_failure(console)
    assert said is not None and said.endswith("RuntimeError: weights file model.pth is corrupt"), said
