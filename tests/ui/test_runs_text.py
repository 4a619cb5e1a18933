"""The Runs tab's throughput line: built from the run's figures, live or final."""

from __future__ import annotations

from ui.tables import throughput_text


def test_finished_run_shows_tokens_padding_and_mfu() -> None:
    metrics = {"tokens_per_second": 1234.4, "padding_share": 0.3, "mfu": 0.42, "peak_tflops": 0.06}
    text = throughput_text({**metrics, "precision": "bf16"}, {})
    assert text.startswith("Throughput: 1,234 tokens/s")
    assert "30% of the batch tokens were padding" in text
    assert "42% of this device's measured peak (0.06 TFLOP/s, bf16)" in text


def test_running_job_shows_the_last_steps_rate_and_a_probe_shows_nothing() -> None:
    assert throughput_text({}, {"tokens_per_second": [[1, 900.0], [2, 1500.0]]}) == (
        "Throughput: 1,500 tokens/s (last step)"
    )
    assert throughput_text({}, {"tokens_per_second": []}) == ""
