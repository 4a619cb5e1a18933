"""The UI's pure parts, without a server: generated forms, chart frames, tables, serving rules."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from backend.errors import ConfigError
from backend.settings import PROJECT_ROOT, Settings
from service.api import Workbench
from ui import charts, tables
from ui.callers import as_id
from ui.forms import MethodForms, build_method_forms, build_task_forms, coerce, control_for
from ui.server import (
    AUTH_ON_COMMAND_LINE,
    _launch,
    add_server_arguments,
    check_exposure,
    is_loopback,
    parse_auth,
    read_auth,
    sweep_stale_uploads,
)
from ui.tabs.data import disk_line, human_bytes
from ui.tabs.runs import search_text
from ui.uploads import discard_upload


@pytest.fixture(scope="module")
def methods(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    data = tmp_path_factory.mktemp("parts")
    settings = Settings(
        data_dir=data,
        models_cache=Settings.from_env().models_cache,
        db_url=f"sqlite:///{data / 'workbench.db'}",
    )
    return Workbench(settings).list_methods()


def test_every_field_gets_the_control_its_metadata_asks_for(methods: list[dict[str, Any]]) -> None:
    with gr.Blocks():
        for method in methods:
            for spec in method["fields"]:
                control = control_for(spec)
                assert control.label == spec["label"]
                if spec["choices"]:
                    assert isinstance(control, gr.Radio | gr.Dropdown)
                elif spec["type"] == "bool":
                    assert isinstance(control, gr.Checkbox)
                elif spec["value_words"]:  # the probe's layer: "auto", "last", then numbers
                    assert isinstance(control, gr.Dropdown)
                    shown = dict(control.choices)
                    assert all(shown[word] == value for word, value in spec["value_words"].items())
                    assert shown["3"] == 3 and len(shown) == spec["max"] - spec["min"] + 1
                elif spec["type"] in ("int", "float"):
                    assert isinstance(control, gr.Slider)
                    assert (control.minimum, control.maximum) == (spec["min"], spec["max"])
                else:
                    assert isinstance(control, gr.Textbox)


def test_forms_round_trip_each_methods_defaults(methods: list[dict[str, Any]]) -> None:
    with gr.Blocks():
        forms = build_method_forms(methods, "lora")
    values = [c.component.value for c in forms.controls]
    for method in methods:
        expected = {f["name"]: f["default"] for f in method["fields"]}
        assert forms.method_config(method["key"], values) == expected
    labels = {c.component.label for c in forms.controls}
    assert {"LoRA rank", "Prompt length", "Bottleneck size"} <= labels
    assert [g.visible for g in forms.groups.values()] == [
        True if m["key"] == "lora" else "hidden" for m in methods
    ]


def test_coerce_turns_slider_floats_into_the_fields_type() -> None:
    assert coerce("int", 16.0) == 16 and isinstance(coerce("int", 16.0), int)
    assert coerce("float", 1) == 1.0
    assert coerce("bool", 1) is True
    assert coerce("str", None) == ""


def test_layers_sort_embeddings_first_and_the_best_is_marked() -> None:
    layers = [
        {"layer": i, "accuracy": a, "macro_f1": a} for i, a in enumerate([0.6, 0.7, 0.9, 0.8] + [0.5] * 8)
    ]
    frame, names, best = charts.layer_accuracy(layers)
    assert names == sorted(names), "the plot orders its x labels as text"
    assert names[0].strip() == "0 embeddings" and names[-1] == "11"
    assert best is not None and best["layer"] == 2
    assert list(frame["marker"]).count(charts.BEST) == 1


def test_a_layer_sweep_plots_layers_not_epochs() -> None:
    series = {
        "eval_accuracy": [[1, 0.6], [2, 0.7], [3, 0.9]],
        "eval_macro_f1": [[1, 0.5], [2, 0.6], [3, 0.8]],
    }
    assert not charts.is_sweep(series)
    assert list(charts.epoch_curves(series)["epoch"]) == [1, 2, 3, 1, 2, 3]
    sweep = {"layer_accuracy": [[0, 0.6], [1, 0.7]], "layer_macro_f1": [[0, 0.5], [1, 0.6]]}
    assert charts.is_sweep(sweep)
    assert list(charts.epoch_curves(sweep)["layer"]) == [0, 1, 0, 1]  # 0 = embeddings
    assert charts.compare_eval({"table": [{"id": 4, "name": "probe"}], "series": {"4": sweep}}).empty


def test_series_frames_draw_one_line_per_name_or_a_single_line() -> None:
    lines = [("a", [[1, 0.5], [2, 0.25]]), ("b", None), ("c", [[1, 0.75]])]
    frame = charts.series_frame(lines, "step", "loss", "run")
    assert frame.values.tolist() == [[1, 0.5, "a"], [2, 0.25, "a"], [1, 0.75, "c"]]
    single = charts.series_frame(lines, "step", "loss")
    assert list(single.columns) == ["step", "loss"] and list(single["loss"]) == [0.5, 0.25, 0.75]
    empty = charts.series_frame([("a", [])], "epoch", "value", "metric")
    assert empty.empty and list(empty.columns) == ["epoch", "value", "metric"]
    assert list(charts.loss_curve({"train_loss": [[1, 0.7], [2, 0.6]]}).columns) == ["step", "loss"]


def test_plots_are_labelled_by_their_title_and_scores_run_from_0_to_1() -> None:
    with gr.Blocks():
        loss = charts.plot(gr.LinePlot, "step", "loss", "Training loss", color="run", y_lim=[0, None])
        f1 = charts.plot(gr.BarPlot, "bar", "f1", "Per-class F1", label="F1", score=True, x_label_angle=-30)
    assert (loss.x, loss.y, loss.color, loss.title, loss.label) == (
        "step",
        "loss",
        "run",
        *["Training loss"] * 2,
    )
    assert loss.y_lim == [0, None]
    assert isinstance(f1, gr.BarPlot)
    assert (f1.title, f1.label, f1.y_lim, f1.x_label_angle) == ("Per-class F1", "F1", [0, 1], -30)


COMPARE = {
    "table": [
        {
            "id": 3,
            "name": "lora r=8 · tiny",
            "method": "lora",
            "knobs": "r=8",
            "accuracy": 0.9,
            "macro_f1": 0.89,
            "trainable_params": 74498,
            "trainable_percent": 0.327,
            "train_seconds": 75,
            "peak_rss_mb": 800.4,
            "adapter_bytes": 300_000,
            "quant": "none",
            "status": "succeeded",
        },
        {
            "id": 4,
            "name": "probe · tiny",
            "method": "probe",
            "knobs": "layer=-1",
            "accuracy": 0.8,
            "macro_f1": 0.8,
            "trainable_params": 770,
            "trainable_percent": 0.003,
            "train_seconds": 3,
            "peak_rss_mb": 600.0,
            "adapter_bytes": 3224,
            "quant": "none",
            "status": "succeeded",
        },
    ],
    "series": {
        "3": {"train_loss": [[1, 0.7], [2, 0.5]], "eval_accuracy": [[1, 0.9]]},
        "4": {"train_loss": [], "eval_accuracy": [[1, 0.8]]},
    },
    "config_diff": [
        {"field": "method", "values": {"3": "lora", "4": "probe"}},
        {"field": "method_config.rank", "values": {"3": 8, "4": None}},
    ],
    "per_class_f1": {"3": {"neg": 0.9, "pos": 0.88}, "4": {"neg": 0.8, "pos": 0.8}},
    "confusion": {"3": {"labels": ["neg", "pos"], "matrix": [[9, 1], [1, 9]]}, "4": None},
}


def test_compare_frames_have_one_series_per_run() -> None:
    assert set(charts.compare_loss(COMPARE)["run"]) == {"#3 lora r=8 · tiny"}
    assert set(charts.compare_eval(COMPARE)["run"]) == {"#3 lora r=8 · tiny", "#4 probe · tiny"}
    from service.svg_charts import compare_scatter_svg

    table = [{**COMPARE["table"][0], "score_ci": [0.8, 0.9]}, COMPARE["table"][1]]
    scatter = compare_scatter_svg({**COMPARE, "table": table})
    assert scatter.count('class="wb-point') == 2 and scatter.count('class="wb-error-bar"') == 1
    f1, order = charts.per_class_f1(COMPARE)
    assert [charts.shown(x) for x in order] == ["neg · #3", "neg · #4", "pos · #3", "pos · #4"]
    assert len(set(f1["bar"])) == len(f1), "one bar per x value: shared x values would stack"
    assert sorted(f1["bar"]) == order  # the plot orders x as text


def test_per_class_f1_keeps_numeric_classes_in_number_order() -> None:
    """Class names "2" and "10" drawn as text came out "10", "2"; the runs' own order otherwise."""
    numeric = {**COMPARE, "per_class_f1": {"3": {"10": 0.5, "2": 0.7}, "4": {"2": 0.6, "10": 0.4}}}
    bars = sorted(charts.per_class_f1(numeric)[0]["bar"])
    assert [charts.shown(x) for x in bars] == ["2 · #3", "2 · #4", "10 · #3", "10 · #4"]
    named = {**COMPARE, "per_class_f1": {"3": {"sadness": 0.5, "joy": 0.7}}}
    bars = sorted(charts.per_class_f1(named)[0]["bar"])
    assert [charts.shown(x) for x in bars] == ["sadness · #3", "joy · #3"]


def test_compare_table_formats_for_people() -> None:
    row = tables.compare_table(COMPARE).iloc[0].to_dict()
    assert row["Trainable params"] == "74,498" and row["Trainable %"] == "0.33%"
    assert row["Train time"] == "1m 15s" and row["Adapter size"] == "293.0 KB"
    diff = tables.config_diff(COMPARE)
    assert list(diff.columns) == ["Setting", "#3 lora r=8 · tiny", "#4 probe · tiny"]
    assert diff.iloc[1].tolist() == ["method_config.rank", "8", "–"]
    html = tables.confusion_html(COMPARE)
    assert html.count("<table>") == 1 and "#3 lora r=8 · tiny" in html


def test_html_tables_escape_cells_and_mark_the_selected_row() -> None:
    frame = tables.runs_table(
        [
            {
                "id": 7,
                "name": "<b>x</b>",
                "method": "lora",
                "knobs": "r=8",
                "status": "queued",
                "progress": 0.0,
                "eta_seconds": None,
                "accuracy": None,
            }
        ]
    )
    page = tables.to_html(frame, caption="Jobs", keys=[7], selected=7)
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
    assert '<tr data-key="7" class="wb-selected" aria-selected="true">' in page
    assert "No jobs" in tables.to_html(frame.iloc[:0], empty="No jobs yet.")


def test_runs_table_shows_eta_only_while_running() -> None:
    jobs = [
        {
            "id": 1,
            "name": "a",
            "method": "lora",
            "knobs": "r=8",
            "status": "running",
            "progress": 0.456,
            "eta_seconds": 3700,
            "accuracy": None,
        },
        {
            "id": 2,
            "name": "b",
            "method": "probe",
            "knobs": "",
            "status": "succeeded",
            "progress": 1.0,
            "eta_seconds": 0,
            "accuracy": 0.91234,
        },
    ]
    frame = tables.runs_table(jobs)
    assert frame["Progress"].tolist() == ["46%", "100%"]
    assert frame["ETA"].tolist() == ["1h 01m", ""]
    assert frame["Score"].tolist() == ["–", "0.912"]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_hosts_need_no_password(host: str) -> None:
    assert is_loopback(host)
    check_exposure(host, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "my-server.example.org"])
def test_other_hosts_are_refused_without_auth(host: str) -> None:
    with pytest.raises(ConfigError, match="WORKBENCH_AUTH=user:password or pass --auth-file FILE"):
        check_exposure(host, None)
    check_exposure(host, ("ann", "secret"))


def test_auth_is_user_colon_password() -> None:
    assert parse_auth("ann:s3:cret") == ("ann", "s3:cret")
    assert parse_auth("") is None
    for bad in ("ann", ":secret", "ann:"):
        with pytest.raises(ConfigError, match="user:password"):
            parse_auth(bad)


def test_the_password_comes_from_a_file_or_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "auth"
    secret.write_text("ann:s3:cret\n")  # as `echo ann:s3:cret > auth` writes it
    secret.chmod(0o600)
    assert read_auth(None, str(secret), {}) == ("ann", "s3:cret")
    assert read_auth(None, str(secret), {"WORKBENCH_AUTH": "bob:x"}) == ("ann", "s3:cret")
    assert read_auth(None, None, {"WORKBENCH_AUTH": "bob:x"}) == ("bob", "x")
    assert read_auth(None, None, {}) is None
    assert capsys.readouterr().err == ""
    secret.chmod(0o644)
    read_auth(None, str(secret), {})
    assert "readable by other users; chmod 600" in capsys.readouterr().err


def test_a_password_on_the_command_line_works_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert read_auth("ann:secret", None, {}) == ("ann", "secret")
    assert capsys.readouterr().err.strip() == AUTH_ON_COMMAND_LINE
    assert "WORKBENCH_AUTH" in AUTH_ON_COMMAND_LINE and "--auth-file" in AUTH_ON_COMMAND_LINE


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "--auth-file .*: cannot read it"), ("ann\n", "first line of --auth-file .* user:password")],
)
def test_a_bad_auth_file_is_one_clear_error(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "auth"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        read_auth(None, str(path), {})
    with pytest.raises(ConfigError, match="not both"):
        read_auth("ann:x", str(path), {})


def test_the_server_refuses_a_public_host_without_auth(tmp_path: Path) -> None:
    env = {**os.environ, "WORKBENCH_DATA_DIR": str(tmp_path)}
    env.pop("WORKBENCH_AUTH", None)
    done = subprocess.run(
        [sys.executable, "-m", "ui.server", "--host", "0.0.0.0", "--port", "1"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "refusing to serve on 0.0.0.0 without a password" in done.stderr
    assert "Traceback" not in done.stderr


def test_compare_table_ends_with_the_majority_class_and_marks_runs_that_did_not_learn() -> None:
    compare = {
        **COMPARE,
        "table": [
            {**COMPARE["table"][0], "lr": 3e-3, "lr_auto": True},
            {**COMPARE["table"][1], "lr": 1e-2, "lr_auto": False, "learning_flag": "did not learn: ..."},
        ],
        "baselines": [{"jobs": [3, 4], "label_id": 1, "accuracy": 0.6, "macro_f1": 0.375}],
    }
    frame = tables.compare_table(compare)
    assert len(frame) == 3
    assert frame["Learning rate"].tolist()[:2] == ["3e-03 (auto)", "1e-02"]
    assert frame["Note"].tolist()[:2] == ["", "did not learn: ..."]
    reference = frame.iloc[-1].to_dict()
    assert reference["Run"] == "Majority class (reference)"
    assert (reference["Accuracy [95% CI]"], reference["Macro-F1"]) == ("0.600", "0.375")
    runs = tables.runs_table([{**COMPARE["table"][1], "status": "succeeded", "progress": 1.0,
                               "accuracy": 0.6, "learning_flag": "did not learn: ..."}])  # fmt: skip
    assert runs["Score"].tolist() == ["0.600 ⚠ did not learn"]


def test_lr_search_chart_marks_the_choice_in_numeric_order() -> None:
    search = {
        "chosen": 1e-2,
        "candidates": [
            {"lr": 1e-1, "eval_loss": float("inf"), "diverged": True, "steps": 3},
            {"lr": 3e-3, "eval_loss": 0.61, "diverged": False, "steps": 9},
            {"lr": 1e-2, "eval_loss": 0.42, "diverged": False, "steps": 9},
            {"lr": 3e-4, "eval_loss": 0.69, "diverged": False, "steps": 3},
        ],
    }
    frame = charts.lr_search(search)
    assert frame["lr"].tolist() == ["1. 0.0003", "2. 0.003", "3. 0.01", "4. 0.1"]
    assert frame["outcome"].tolist() == ["dropped", "dropped", "chosen", "diverged"]
    assert frame["held_out_loss"].tolist()[:3] == [0.69, 0.61, 0.42]
    assert charts.lr_search(None).empty
    # The search's tie rule: the default 3e-3 kept although 1e-2 scored lower, within the noise.
    search["chosen"] = 3e-3
    search["candidates"][1]["tie_with"] = [1e-2, 0.012, 0.011]
    assert charts.lr_search(search)["outcome"].tolist() == ["dropped", "chosen", charts.TIED, "diverged"]
    text = search_text({"lr_search": {**search, "seconds": 2.0, "train_rows": 850, "holdout_rows": 150,
                                      "round_steps": [9, 9]}})  # fmt: skip
    assert "0.01 scored a slightly lower loss, but by 0.012 ± 0.011 per row" in text
    search["candidates"][1].pop("tie_with")
    assert "scored a slightly lower loss" not in search_text({"lr_search": {**search, "seconds": 2.0,
        "train_rows": 850, "holdout_rows": 150, "round_steps": [9, 9]}})  # fmt: skip


def test_a_doubted_learning_rate_is_marked_on_the_run_page_and_in_compare() -> None:
    """Issue 36: the search's doubt (``lr_choice_warning``) shows beside the rate it is about."""
    doubt = "The learning rate 0.01 may not suit this run: it is the highest rate searched."
    search = {"chosen": 1e-2, "seconds": 2.0, "train_rows": 850, "holdout_rows": 150, "round_steps": [9],
              "candidates": [{"lr": 3e-3, "eval_loss": 0.6, "diverged": False},
                             {"lr": 1e-2, "eval_loss": 0.4, "diverged": False}]}  # fmt: skip
    assert doubt in search_text({"lr_search": search, "metrics": {"lr_choice_warning": doubt}})
    assert doubt not in search_text({"lr_search": search, "metrics": {"lr_choice_warning": None}})
    row = {**COMPARE["table"][0], "lr": 1e-2, "lr_auto": True}
    marked = tables.compare_table({"table": [{**row, "lr_choice_warning": doubt}]}).iloc[0]
    assert marked["Learning rate"] == "1e-02 (auto) ⚠" and doubt in marked["Note"]
    plain = tables.compare_table({"table": [{**row, "lr_choice_warning": None}]}).iloc[0]
    assert plain["Learning rate"] == "1e-02 (auto)" and doubt not in plain["Note"]


def test_task_settings_have_their_forms_shown_for_their_task_or_auto(
    methods: list[dict[str, Any]], tmp_path: Path
) -> None:
    """The Train tab's task settings are generated from the tasks' metadata, a group per task
    that has settings, shown while the Task choice is that task or auto; a handler's values end
    with them and come back as settings by task key."""
    from ui.tabs.train_common import COMMON_SETTINGS, split_values

    data = tmp_path / "data"
    bench = Workbench(Settings(data_dir=data, models_cache=Settings.from_env().models_cache,
                               db_url=f"sqlite:///{data / 'w.db'}"))  # fmt: skip
    tasks = bench.list_tasks()
    with gr.Blocks():
        forms = build_method_forms(methods, "lora")
        task_forms = build_task_forms(tasks, auto="auto")
    with_settings = [t["key"] for t in tasks if t["fields"]]
    assert list(task_forms.groups) == with_settings == ["token-classification", "multi-label"]
    assert [u["visible"] for u in task_forms.visibility("auto")] == [True, True]
    assert [u["visible"] for u in task_forms.visibility("token-classification")] == [True, "hidden"]
    assert [u["visible"] for u in task_forms.visibility("classification")] == ["hidden", "hidden"]
    scheme, threshold, separator, columns = task_forms.controls
    assert (scheme.name, scheme.component.label) == ("tag_scheme", "Tag scheme")
    assert (threshold.name, threshold.component.value, separator.component.value) == (
        "threshold",
        "auto",
        "auto",
    )
    task_values = ["plain", "0.4", ";", "joy,fear"]
    values = [None] * COMMON_SETTINGS + [c.component.value for c in forms.controls] + task_values
    controls, by_task = split_values(values, forms, task_forms)
    assert len(controls) == len(forms.controls) and columns.name == "label_columns"
    assert by_task == {
        "token-classification": {"tag_scheme": "plain"},
        "multi-label": {"threshold": "0.4", "label_separator": ";", "label_columns": "joy,fear"},
    }


def test_filled_settings_survive_the_method_change_firing_twice(
    methods: list[dict[str, Any]], tmp_path: Path
) -> None:
    """ "Use these settings" fills LoRA at 0.003 and 2 epochs; the method's change may fire more
    than once for LoRA, and each time must leave them, not reset LoRA's defaults (2e-3)."""
    from ui.endpoints import Endpoints
    from ui.tabs.train import _Handlers

    data = tmp_path / "data"
    bench = Workbench(
        Settings(
            data_dir=data, models_cache=Settings.from_env().models_cache, db_url=f"sqlite:///{data / 'w.db'}"
        )
    )
    with gr.Blocks():
        forms = build_method_forms(methods, "lora")
    handlers = _Handlers(Endpoints(bench), forms, MethodForms(methods=[]))
    lora = next(m["label"] for m in methods if m["key"] == "lora")
    keep: Any = {"method": "lora", "epochs": 2, "lr": 0.003}
    for _ in range(2):  # the state output, when not a skip, is what the next call gets
        *_, epochs, lr, keep_out = handlers.method_changed(lora, keep)
        assert (epochs, lr) == (2, 0.003)
        keep = keep if keep_out == gr.skip() else keep_out
    other = next(m["label"] for m in methods if m["key"] == "prompt")
    *_, epochs, lr, keep_out = handlers.method_changed(other, keep)  # another method: its defaults
    assert keep_out is None and lr == next(m["default_lr"] for m in methods if m["key"] == "prompt")


# ---------------------------------------------------------------- limits and cleanup


def test_disk_usage_is_one_line_with_the_parts() -> None:
    assert [human_bytes(n) for n in (0, 1023, 1536, 5 * 2**20, 3 * 2**30)] == [
        "0 B",
        "1023 B",
        "1.5 KB",
        "5.0 MB",
        "3.0 GB",
    ]
    usage = {"datasets": 2048, "artifacts": 3 * 2**20, "exports": 0, "cache": 10, "total": 4 * 2**20}
    assert disk_line(usage) == (
        "Disk used by the data folder: **4.0 MB** (datasets 2.0 KB · runs 3.0 MB · exports 0 B · cache 10 B)"
    )


def test_ids_from_api_callers_are_whole_numbers() -> None:
    assert [as_id(v, "dataset_id") for v in (3, "4", 5.0)] == [3, 4, 5]
    for bad in ("x", 2.5, None, True, float("nan"), "../1"):
        with pytest.raises(ConfigError, match="dataset_id must be a whole number"):
            as_id(bad, "dataset_id")


def test_only_uploads_inside_the_upload_folder_are_discarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uploads = tmp_path / "uploads"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads))
    uploaded = uploads / "0b98b716" / "train.csv"
    uploaded.parent.mkdir(parents=True)
    uploaded.write_text("text,label\n")
    outside = tmp_path / "mine.csv"
    outside.write_text("text,label\n")
    discard_upload(uploaded)
    discard_upload(outside)
    assert not uploaded.parent.exists() and uploads.is_dir() and outside.is_file()


def test_stale_uploads_are_swept_at_start_only_in_the_apps_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(data_dir=tmp_path / "data", models_cache=tmp_path, db_url="sqlite://")
    uploads = tmp_path / "data" / "cache" / "gradio"
    old, fresh = uploads / "aa" / "old.csv", uploads / "bb" / "fresh.csv"
    for path in (old, fresh):
        path.parent.mkdir(parents=True)
        path.write_text("text,label\n")
    two_days_ago = time.time() - 2 * 86400
    os.utime(old, (two_days_ago, two_days_ago))
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads))
    assert sweep_stale_uploads(settings) == 1
    assert not old.parent.exists() and fresh.is_file()
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "elsewhere"))  # not ours: left alone
    (tmp_path / "elsewhere").mkdir()
    os.utime(fresh, (two_days_ago, two_days_ago))
    assert sweep_stale_uploads(settings.with_(data_dir=tmp_path / "other")) == 0


def test_gradio_refuses_an_upload_over_the_limit_before_storing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``_launch`` hands the limit to Gradio, which answers 413 while the file streams in."""
    import httpx

    from tests.ui.conftest import free_port

    uploads = tmp_path / "data" / "cache" / "gradio"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads))
    settings = Settings(
        data_dir=tmp_path / "data", models_cache=tmp_path, db_url="sqlite://", max_upload_mb=1
    )
    with gr.Blocks() as demo:
        gr.Markdown("limits")
    port = free_port()
    _launch(demo, settings, "127.0.0.1", port, None)
    try:
        url = f"http://127.0.0.1:{port}/gradio_api/upload"
        big = httpx.post(url, files={"files": ("big.csv", b"x" * (2**20 + 1))}, timeout=30)
        assert big.status_code == 413 and "maximum allowed size of 1048576 bytes" in big.text
        small = httpx.post(url, files={"files": ("small.csv", b"text,label\n")}, timeout=30)
        assert small.status_code == 200
    finally:
        demo.close()
    assert [p.name for p in uploads.rglob("*") if p.is_file()] == ["small.csv"]


@pytest.mark.parametrize("flag", ["--max-upload-mb", "--max-rows"])
def test_limit_flags_take_whole_numbers_of_at_least_one(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_server_arguments(parser)
    assert getattr(parser.parse_args([flag, "7"]), flag[2:].replace("-", "_")) == 7
    with pytest.raises(SystemExit):
        parser.parse_args([flag, "0"])
    assert f"{flag} must be a whole number of at least 1" in capsys.readouterr().err


def test_the_runs_tick_sends_only_what_changed(tmp_path: Path, tiny_csv: Path) -> None:
    """Every value a tick sends makes each open page redraw; unchanged parts must be skipped."""

    def skipped(value: Any) -> bool:  # Gradio's "leave this output alone": {"__type__": "update"}
        return isinstance(value, dict) and value == gr.skip()

    from jobs.queue import request_cancel
    from ui.endpoints import Endpoints
    from ui.pacing import IDLE_SECONDS
    from ui.tabs.runs import REFRESH_SECONDS, _Handlers

    data = tmp_path / "data"
    bench = Workbench(
        Settings(
            data_dir=data, models_cache=Settings.from_env().models_cache, db_url=f"sqlite:///{data / 'w.db'}"
        )
    )
    handlers = _Handlers(Endpoints(bench))
    job_id = bench.submit({"data": str(tiny_csv), "method": "lora", "epochs": 1, "max_length": 16})
    # Each tick returns the outputs, then its state, then the timer's interval (or a skip).
    first = handlers.tick(None, None)
    assert not any(map(skipped, first[:-2]))  # a new page: everything
    assert first[-1] == REFRESH_SECONDS  # a job is queued: the tab polls fast
    again = handlers.tick(None, first[-2])
    assert all(map(skipped, again[:-2])) and skipped(again[-1])  # nothing moved: nothing sent
    request_cancel(bench.db, job_id)  # the table changes, the (empty) details do not
    moved = handlers.tick(None, again[-2])
    assert isinstance(moved[0], str) and "cancelled" in moved[0]
    assert all(map(skipped, moved[1:-2]))
    assert moved[-1] == IDLE_SECONDS  # nothing queued or running any more: it polls slowly
    shown = handlers.tick(job_id, moved[-2])  # a job picked: its details are sent
    assert "cancelled" in str(shown[1]) and not skipped(shown[3]) and skipped(shown[-1])
    assert all(map(skipped, handlers.tick(job_id, shown[-2])[3:9]))


def test_the_public_endpoints_return_their_records(tmp_path: Path, tiny_csv: Path) -> None:
    """What /datasets and /launch build on top of the Workbench's records (tests/jobs/test_records.py)."""
    from service.records import PublicDataset, RunSummary
    from tests.jobs.test_records import assert_record
    from ui.endpoints import Endpoints

    data = tmp_path / "data"
    bench = Workbench(
        Settings(
            data_dir=data, models_cache=Settings.from_env().models_cache, db_url=f"sqlite:///{data / 'w.db'}"
        )
    )
    bench.register_dataset(tiny_csv)
    endpoints = Endpoints(bench)
    (dataset,) = endpoints.datasets()
    assert_record(dataset, PublicDataset)
    assert_record(endpoints.launch(dataset["id"], "LoRA", epochs=1, max_length=16), RunSummary)


def test_the_token_histogram_keeps_its_bins_in_numeric_order() -> None:
    """Issue 50: the plot orders its x labels as text ("10–11" before "6–7"), and a list-valued
    sort drew no bar at all. Sorted as text, the labels come out in the bins' own order, and
    read as the bins' ranges."""
    bins = [(6, 8, 3), (8, 10, 1), (10, 12, 2), (12, 13, 5)]
    preview = {"token_histogram": [{"start": a, "end": b, "count": n} for a, b, n in bins]}
    frame = charts.token_histogram(preview)
    assert [charts.shown(t) for t in frame["tokens"]] == ["6–7", "8–9", "10–11", "12"]
    assert list(frame.sort_values("tokens")["rows"]) == [3, 1, 2, 5]  # text order = numeric order


def test_every_ordered_chart_sorts_as_text_in_the_order_given() -> None:
    """Score bins with negative edges, numeric class names and more bars than one rank digit
    holds: text order is the order given, and the labels read as they were."""
    cases = [
        ["-1–-0.5", "-0.5–0", "0–0.5", "0.5–1", "1–1.5"],
        [str(n) for n in range(1, 12)],
        [f"{n}–{n + 1}" for n in range(0, 200, 2)],  # 100 bins: several rank digits
    ]
    for labels in cases:
        ranked = charts.in_order(labels)
        assert sorted(ranked) == ranked, labels[:3]
        assert [charts.shown(r) for r in ranked] == labels
    assert sorted(cases[0]) != cases[0] and sorted(cases[1]) != cases[1]  # as plain text they would not


def test_the_label_chart_takes_the_tasks_titles_and_order() -> None:
    bars = [{"name": "PER", "count": 7}, {"name": "LOC", "count": 3}]
    title = "Entities per type (O: 90.0% of 100 words)"
    preview = {"label_chart": {"title": title, "x": "entity type", "y": "entities", "bars": bars}}
    update = charts.label_distribution(preview)
    assert update["label"] == "Entities per type (O: 90.0% of 100 words) · entities per entity type"
    # the plot's own titles are left alone (gradio 6.31 drew the previous bars when they changed)
    assert {"title", "x_title", "y_title"}.isdisjoint(update)
    frame = update["value"].sort_values("label")
    assert [charts.shown(x) for x in frame["label"]] == ["PER", "LOC"] and list(frame["rows"]) == [7, 3]


def test_the_sweeps_timer_refreshes_the_sweep_list_when_a_status_changes(
    tmp_path: Path, tiny_csv: Path
) -> None:
    """The dropdown's choices carry each sweep's status: the timer sends them again when one
    changes (and nothing while none does), keeping the chosen sweep."""
    from ui.endpoints import Endpoints
    from ui.pacing import IDLE_SECONDS
    from ui.tabs.sweeps import REFRESH_SECONDS, _Handlers

    data = tmp_path / "data"
    bench = Workbench(Settings(data_dir=data, models_cache=Settings.from_env().models_cache,
                               db_url=f"sqlite:///{data / 'wb.db'}"))  # fmt: skip
    sweep_id = bench.submit_sweep({"data": str(tiny_csv), "method": "lora"}, grid=["rank=1,2"])
    handlers = _Handlers(Endpoints(bench))
    # Each tick returns the outputs, then its state, then the timer's interval (or a skip).
    first = handlers.tick(sweep_id, "trainable_params", None)
    assert first[0]["choices"] == [(f"#{sweep_id} {bench.get_sweep(sweep_id)['name']} (running)", sweep_id)]
    assert "value" not in first[0]  # the person's choice stays
    assert first[-1] == REFRESH_SECONDS  # a sweep runs: the tab polls fast
    quiet = handlers.tick(sweep_id, "trainable_params", first[-2])
    assert quiet[:4] == (gr.skip(),) * 4 and quiet[-1] == gr.skip()
    bench.cancel_sweep(sweep_id)
    after = handlers.tick(sweep_id, "trainable_params", quiet[-2])
    assert after[0]["choices"][0][0].endswith("(cancelled)")
    assert after[-1] == IDLE_SECONDS  # none runs any more: it polls slowly


def test_the_navigation_shows_one_page_and_ticks_only_its_timer() -> None:
    """Opening a page hides every other one and stops every other page's timer (ui.nav)."""
    from ui.nav import HIDDEN, Navigation

    with gr.Blocks():
        nav = Navigation.row(["Data", "Runs", "Sweeps"])
        timers = {}
        for name in nav.pages:
            with nav.page(name):
                gr.Markdown(name)
                if name != "Data":
                    timers[name] = gr.Timer(2.0, active=False)
        nav.wire(timers)
    assert HIDDEN not in nav.pages["Data"].column.elem_classes  # the first page shows at load
    assert all(HIDDEN in nav.pages[name].column.elem_classes for name in ("Runs", "Sweeps"))
    updates = nav.open("Sweeps")
    assert len(updates) == len(nav.outputs) == 3 + 3 + 2
    columns, buttons, ticking = updates[:3], updates[3:6], updates[6:]
    assert [HIDDEN in column.elem_classes for column in columns] == [True, True, False]
    assert [button.variant for button in buttons] == ["secondary", "secondary", "primary"]
    assert [timer.active for timer in ticking] == [False, True]  # Runs stops, Sweeps ticks
    with pytest.raises(KeyError, match="no page named"):
        nav.open("Nowhere")


def test_a_training_job_sends_only_the_details_that_moved() -> None:
    """While a job trains its step moves every tick; the charts that did not change are skipped."""
    import pandas as pd

    from ui.tabs.runs import unchanged_skipped

    loss = pd.DataFrame({"step": [1, 2], "loss": [0.7, 0.6]})
    evals = pd.DataFrame({"epoch": [1], "value": [0.8]})
    first, prints, _ = unchanged_skipped(("step 2", gr.update(value=loss), gr.update(value=evals)), None)
    assert not any(value == gr.skip() for value in first)  # nothing sent before: everything
    longer = pd.DataFrame({"step": [1, 2, 3], "loss": [0.7, 0.6, 0.5]})
    same_evals = pd.DataFrame({"epoch": [1], "value": [0.8]})  # equal, not the same object
    sent, prints, _ = unchanged_skipped(
        ("step 3", gr.update(value=longer), gr.update(value=same_evals)), prints
    )
    assert sent[0] == "step 3" and sent[1]["value"] is longer and sent[2] == gr.skip()
    moved = pd.DataFrame({"epoch": [1], "value": [0.81]})
    sent, _, _ = unchanged_skipped(("step 3", gr.update(value=longer), gr.update(value=moved)), prints)
    assert sent[0] == gr.skip() and sent[1] == gr.skip() and sent[2]["value"] is moved


def test_compare_shows_intervals_and_verdicts_against_the_best() -> None:
    """Issue 37: "0.842 [0.811, 0.871]", and each run marked better / within noise / worse."""
    first, second = COMPARE["table"]
    compare = {
        **COMPARE,
        "table": [
            {**first, "accuracy": 0.842, "score_ci": [0.811, 0.871]},
            {**second, "accuracy": 0.8, "score_ci": None},  # a run from before intervals
        ],
        "significance": {
            "metric": "accuracy",
            "eval_rows": 500,
            "runs": [
                {"run": f"job {first['id']}", "score": 0.842, "score_ci": [0.811, 0.871]},
                {"run": f"job {second['id']}", "score": 0.8, "score_ci": [0.764, 0.834]},
            ],
            "best": f"job {first['id']}",
            "pairs": [
                {
                    "a": f"job {second['id']}",
                    "b": f"job {first['id']}",
                    "delta": -0.042,
                    "p_value": 0.03,
                    "p_adjusted": 0.03,
                    "test": "McNemar exact",
                    "verdict": "worse",
                }
            ],
        },
        "significance_note": None,
    }
    frame = tables.compare_table(compare)
    assert frame["Accuracy [95% CI]"].tolist()[:2] == ["0.842 [0.811, 0.871]", "0.800 [0.764, 0.834]"]
    assert frame["vs best"].tolist()[:2] == ["best", "worse (p = 0.030)"]
    caption = tables.significance_caption(compare)
    assert "500 evaluation examples" in caption and "McNemar" in caption and "Holm" not in caption
    assert caption.startswith("Accuracy with its 95% bootstrap interval")
    refused = {**COMPARE, "significance": None, "significance_note": "No verdicts: job 3 and job 4 were ..."}
    assert tables.compare_table(refused)["vs best"].tolist()[:2] == ["–", "–"]
    assert tables.significance_caption(refused).startswith("No verdicts: ")


def test_runs_that_differ_only_in_seed_show_as_one_pooled_row() -> None:
    pooled = [{"jobs": [3, 5, 6], "name": "lora r=8 · tiny", "n": 3, "seeds": [0, 1, 2],
               "accuracy": 0.798, "accuracy_sd": 0.013, "macro_f1": 0.79, "macro_f1_sd": None}]  # fmt: skip
    frame = tables.pooled_table({**COMPARE, "pooled_seeds": pooled})
    expected = ["lora r=8 · tiny (#3, #5, #6)", "0, 1, 2", "0.798 ± 0.013 (n=3)", "0.790 (n=3)"]
    assert frame.iloc[0].tolist() == expected
    assert tables.pooled_table(COMPARE).empty  # nothing to pool: no table
    # a score task's group beside it: its own metrics as columns, "–" where a task lacks one
    scores = {"jobs": [7, 8], "name": "lora", "n": 2, "seeds": [0, 1], "headline": ["spearman", "rmse"],
              "spearman": 0.88, "spearman_sd": 0.01, "rmse": 0.6, "rmse_sd": 0.02}  # fmt: skip
    labels = {**pooled[0], "headline": ["accuracy", "macro_f1"]}
    both = tables.pooled_table({**COMPARE, "pooled_seeds": [labels, scores]})
    assert list(both.columns) == ["Runs", "Seeds", "Accuracy", "Macro-F1", "Spearman", "RMSE"]
    assert both.iloc[1].tolist()[2:] == ["–", "–", "0.880 ± 0.010 (n=2)", "0.600 ± 0.020 (n=2)"]


def test_a_curve_that_moves_every_tick_is_held_back_but_never_lost() -> None:
    """The loss curve of a training job changes on every tick; it goes out every 10 s."""
    from ui.tabs.runs import unchanged_skipped

    held = {1: 10.0}
    first, prints, sent_at = unchanged_skipped(("step 1", "curve 1"), None, held, None, now=100.0)
    assert first == ["step 1", "curve 1"] and sent_at == {"1": 100.0}
    sent, prints, sent_at = unchanged_skipped(("step 2", "curve 2"), prints, held, sent_at, now=102.0)
    assert sent == ["step 2", gr.skip()]  # the header now, the curve later
    sent, prints, sent_at = unchanged_skipped(("step 2", "curve 2"), prints, held, sent_at, now=110.5)
    assert sent == [gr.skip(), "curve 2"] and sent_at == {"1": 110.5}  # not lost: sent once due
    sent, _, _ = unchanged_skipped(("step 3", "curve 3"), prints, None, sent_at, now=111.0)
    assert sent == ["step 3", "curve 3"]  # nothing held (a finished job): at once


def test_the_runs_page_holds_back_the_loss_curve_and_the_log_by_their_place() -> None:
    """HELD names places in ``_Handlers.tick``'s values: a plot added before the log moves it."""
    from ui.tabs.runs import DETAILS, HELD, nothing_selected

    assert len(nothing_selected("hint")) == len(DETAILS) + 3 + 1  # + the action buttons + the state
    assert sorted(DETAILS[i] for i in HELD) == ["log", "loss"]


def test_a_score_run_gets_a_scatter_of_predicted_against_true() -> None:
    import xml.etree.ElementTree as ET

    from service.svg_charts import truth_scatter_svg

    page = truth_scatter_svg([0.0, 2.5, 5.0], [0.5, 2.5, 4.0])
    svg = ET.fromstring(page[: page.index("</svg>") + len("</svg>")])
    rows = [c for c in svg.iter("{http://www.w3.org/2000/svg}circle") if c.get("class") == "wb-row"]
    (identity,) = [x for x in svg.iter("{http://www.w3.org/2000/svg}line") if x.get("class") == "wb-identity"]
    assert len(rows) == 3
    # the first row (true 0, predicted 0.5) lies above the y = x line: a smaller y in pixels
    x0, y0 = float(rows[0].get("cx")), float(rows[0].get("cy"))
    x1, y1, x2, y2 = (float(identity.get(k)) for k in ("x1", "y1", "x2", "y2"))
    on_line = y1 + (x0 - x1) * (y2 - y1) / (x2 - x1)
    assert y0 < on_line
    assert "No evaluation rows" in truth_scatter_svg([], [])


def test_a_regression_probe_sweep_draws_its_score_by_layer() -> None:
    from ui import charts

    layers = [
        {"layer": i, "spearman": s, "score": s, "eval_loss": 1.0} for i, s in enumerate([0.2, 0.7, 0.5])
    ]
    frame, order, best = charts.layer_accuracy(layers)
    assert frame["accuracy"].tolist() == [0.2, 0.7, 0.5] and best is not None and best["layer"] == 1
    assert len(order) == 3


def test_the_run_header_names_each_tasks_metrics_with_their_intervals() -> None:
    from ui.tabs.runs import results_text

    intervals = {"score_ci": [0.78, 0.84], "macro_f1_ci": [0.75, 0.82]}
    labels = {"score": 0.8123, "primary_metric": "accuracy", "headline": ["accuracy", "macro_f1"],
              "metrics": {"accuracy": 0.8123, "macro_f1": 0.79, **intervals}}  # fmt: skip
    expected = "accuracy 0.812 [0.780, 0.840] · macro-F1 0.790 [0.750, 0.820] (95% intervals)"
    assert results_text(labels) == expected
    scores = {
        "score": 0.88,
        "primary_metric": "spearman",
        "headline": ["spearman", "pearson", "rmse"],
        "metrics": {"spearman": 0.88, "pearson": 0.871, "rmse": None, "score_ci": [0.86, 0.9]},
    }
    assert results_text(scores) == "spearman 0.880 [0.860, 0.900] · pearson 0.871 (95% interval)"
    assert results_text({**scores, "metrics": {}}) == "spearman 0.880"  # a run from before intervals


def test_try_it_draws_a_set_of_labels_with_every_probability_and_the_chosen_marked() -> None:
    """The ``labels`` view kind (a set of labels per text): the chosen labels, then every label
    with its probability, most probable first, the chosen in bold with a tick."""
    from ui.tables import predictions_table

    item = {"label": "joy, surprise", "probability": None, "score": None,
            "labels": [{"name": "anger", "probability": 0.04, "chosen": False},
                       {"name": "surprise", "probability": 0.61, "chosen": True},
                       {"name": "joy", "probability": 0.83, "chosen": True}]}  # fmt: skip
    row = predictions_table([{"id": 4, "name": "lora", "view": "labels", "predictions": [item]}]).iloc[0]
    assert row["Prediction"] == "joy, surprise"
    marked = '<b class="wb-chosen">✓ joy 83.0%</b> · <b class="wb-chosen">✓ surprise 61.0%</b>'
    assert str(row["Every label"]) == f"{marked} · <span>anger 4.0%</span>"  # drawn as HTML, not escaped
    none = {**item, "label": "", "labels": item["labels"][:1]}  # nothing over the threshold
    empty = predictions_table([{"id": 5, "name": "x", "view": "labels", "predictions": [none]}])
    assert empty.iloc[0]["Prediction"] == "(no label)" and "<b" not in str(empty.iloc[0]["Every label"])
