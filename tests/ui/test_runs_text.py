"""The Runs tab's parts: the throughput line (live or final) and which charts show."""

from __future__ import annotations

from ui.tables import throughput_text
from ui.tabs.runs import loss_plot


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


def test_the_loss_chart_shows_only_where_a_loss_exists() -> None:
    sweep = {"layer_accuracy": [[0, 0.6], [1, 0.7]], "train_loss": []}
    assert loss_plot(sweep)["visible"] == "hidden"
    assert loss_plot({**sweep, "train_loss": [[1, 0.69]]})["visible"] is True
    assert loss_plot({"train_loss": []})["visible"] is True  # a run that has not stepped yet
