"""The app in a real browser: Debian's chromium, headless, driven by Playwright.

The README's tour on the real default model: load the example dataset, choose LoRA, move
"LoRA rank" and watch the trainable-parameter line change, launch, watch the run succeed,
compare it with a probe on every layer, try a text, see the layers, download the adapter.
Also: a CSV upload, a bad upload, and a sweep. Screenshots land in test-artifacts/ui/; the two
the README shows (Compare, Probing by layer) in docs/images/.
"""

from __future__ import annotations

import csv
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.chromium import BROWSER_ARGS, CHROMIUM, nav
from tests.ui.conftest import JOB_TIMEOUT, Server, wait_finished

DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
UI_TIMEOUT_MS = 30_000  # one UI round trip on a busy 2-core machine
JOB_TIMEOUT_MS = int(JOB_TIMEOUT * 1000)

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"{CHROMIUM} not found: run `make browser` (apt-get install chromium)",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=BROWSER_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, server: Server, artifacts: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh page on the app; a final screenshot is saved whatever the outcome."""
    from playwright.sync_api import expect

    expect.set_options(timeout=UI_TIMEOUT_MS)
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.goto(server.url)
    expect(nav(page, "Data")).to_be_visible()
    yield page
    page.screenshot(path=str(artifacts / f"{request.node.name}-last.png"), full_page=True)
    context.close()


def readme_shot(page: Any, name: str, top: Any) -> None:
    """A screenshot for the README and the docs (docs/images/, committed): the window's view
    from ``top`` down, so that it reads at the README's width."""
    top.scroll_into_view_if_needed()
    page.mouse.move(0, 0)
    page.wait_for_timeout(600)
    box = top.bounding_box()
    view = page.viewport_size
    page.screenshot(
        path=str(DOCS_IMAGES / name),
        clip={"x": 0, "y": box["y"], "width": view["width"], "height": view["height"] - box["y"]},
    )


def shot(page: Any, artifacts: Path, name: str) -> None:
    """A full-page screenshot once transitions have settled (for people; asserts nothing)."""
    page.mouse.move(0, 0)  # no hover styling on whatever was clicked last
    page.wait_for_timeout(600)
    page.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)


def test_a_bad_upload_shows_a_message_and_creates_nothing(
    page: Any, server: Server, tmp_path: Path, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    header_only = tmp_path / "empty.csv"
    header_only.write_text("text,label\n")
    bench = server.workbench()
    datasets_before = bench.list_datasets()
    stored_before = _stored_files(server)

    page.locator("#upload-dataset input[type=file]").set_input_files(str(header_only))

    expect(page.locator("#data-message")).to_contain_text("⚠️")
    expect(page.locator("#data-message")).to_contain_text("empty.csv")
    shot(page, artifacts, "01-bad-upload")
    assert bench.list_datasets() == datasets_before
    assert _stored_files(server) == stored_before


def _stored_files(server: Server) -> list[str]:
    folder = server.settings.datasets_dir
    return sorted(str(p) for p in folder.rglob("*")) if folder.is_dir() else []


def test_the_example_trains_a_probe_and_lora_compares_them_and_downloads_the_adapter(
    page: Any, server: Server, client: Any, tmp_path: Path, artifacts: Path
) -> None:
    """The README's tour, on the real default model and the shipped example dataset: the
    screenshots in docs/images/ come from here, so they show real runs and stay current."""
    dataset_id = _load_example(page, artifacts)
    probe_id = _queue_a_probe_sweep(client, dataset_id)
    _set_up_lora(page, artifacts)
    lora_id = _launch(page)
    _watch(page, lora_id, probe_id, artifacts)
    wait_finished(client, [probe_id])
    _compare(page, [lora_id, probe_id], artifacts, "I was charged twice for my order")
    _probing(page, artifacts)
    zip_path = _download(page, lora_id, tmp_path, artifacts)
    names = set(zipfile.ZipFile(zip_path).namelist())
    assert {"adapter_model.safetensors", "adapter_config.json", "labels.json", "README.md"} <= names


def _load_example(page: Any, artifacts: Path) -> int:
    """Data tab: "Load an example" registers the shipped dataset and shows it."""
    from playwright.sync_api import expect

    page.locator("#load-example").click()
    expect(page.locator("#data-message")).to_contain_text("Loaded the example")
    expect(page.locator("#data-message")).to_contain_text("386")
    expect(page.get_by_label("Text column", exact=True)).to_have_value("text")
    expect(page.get_by_label("Label column", exact=True)).to_have_value("label")
    expect(page.locator("#data-preview")).to_contain_text("billing")
    shot(page, artifacts, "02-data-example")
    chosen = page.get_by_label("Uploaded datasets").input_value()
    return int(re.search(r"#(\d+)$", chosen).group(1))


def _queue_a_probe_sweep(client: Any, dataset_id: int) -> int:
    """A probe on every layer via the API, so there are two runs to compare (it trains meanwhile)."""
    job = client.predict(
        dataset_id=dataset_id,
        method="probe",
        method_settings={"sweep_layers": True},
        max_length=64,
        api_name="/launch",
    )
    return job["id"]


def test_a_csv_upload_is_registered_and_shown(page: Any, tiny_csv: Path, artifacts: Path) -> None:
    _upload(page, tiny_csv, artifacts)


def _upload(page: Any, csv_path: Path, artifacts: Path) -> None:
    from playwright.sync_api import expect

    page.locator("#upload-dataset input[type=file]").set_input_files(str(csv_path))
    expect(page.locator("#data-message")).to_contain_text("Registered")
    first_text = next(csv.DictReader(csv_path.open()))["text"]
    expect(page.get_by_text(first_text).filter(visible=True).first).to_be_visible()
    expect(page.get_by_label("Text column", exact=True)).to_have_value("text")
    expect(page.get_by_label("Label column", exact=True)).to_have_value("label")
    shot(page, artifacts, "02-data")


def _set_up_lora(page: Any, artifacts: Path) -> None:
    """Pick LoRA, move its rank, check the parameter line follows; short common settings."""
    from playwright.sync_api import expect

    nav(page, "Train").click()
    params = page.locator("#trainable-params")
    expect(params).to_have_text(PARAM_LINE)
    lora_default = _count(params.inner_text())  # LoRA is selected when the page opens
    # A method with the shared "Prompt length" label: only the selected method's slider is visible.
    page.get_by_role("radio", name="Prompt tuning").check()
    prompt_default = _expect_new_count(params, lora_default)
    page.get_by_role("slider", name="Prompt length").fill("40")
    _expect_new_count(params, prompt_default)

    page.get_by_role("radio", name="LoRA", exact=True).check()
    expect(page.get_by_role("slider", name="LoRA rank")).to_be_visible()
    expect(params).to_contain_text(f"Trainable parameters: {lora_default:,} (")
    page.get_by_role("slider", name="LoRA rank").fill("16")
    assert _expect_new_count(params, lora_default) > lora_default, "a higher rank trains more parameters"
    # Epochs "auto" sizes the run from the data before launch; the learning rate stays "auto".
    plan = page.locator("#run-plan")
    expect(plan).to_contain_text("optimizer steps (auto)")
    expect(plan).to_contain_text("learning rate auto")
    expect(page.get_by_role("spinbutton", name="Epochs")).to_be_disabled()
    page.get_by_label("Epochs: auto").uncheck()
    # Three short epochs: enough for LoRA to learn the toy task, a few seconds each.
    for label, value in (("Epochs", "3"), ("Batch size", "16"), ("Max length", "32")):
        page.get_by_role("spinbutton", name=label).fill(value)
        page.get_by_role("spinbutton", name=label).press("Enter")
    expect(plan).to_contain_text("3 epochs × ")  # a typed epoch count wins, shown before launch
    expect(plan).to_contain_text("(as set)")
    shot(page, artifacts, "03-train")


PARAM_LINE = re.compile(r"Trainable parameters: [\d,]+ \(\d+\.\d\d% of [\d,]+\)")


def _count(line: str) -> int:
    found = re.search(r"Trainable parameters: ([\d,]+)", line)
    assert found, line
    return int(found.group(1).replace(",", ""))


def _expect_new_count(params: Any, old: int) -> int:
    """Wait until the parameter line shows a count other than ``old``; return it."""
    from playwright.sync_api import expect

    expect(params).to_have_text(re.compile(rf"Trainable parameters: (?!{old:,} )[\d,]+ \("))
    return _count(params.inner_text())


def _launch(page: Any) -> int:
    from playwright.sync_api import expect

    page.get_by_role("button", name="Launch training").click()
    message = page.locator("#launch-message")
    expect(message).to_contain_text("Queued job")
    return int(re.search(r"#(\d+)", message.inner_text()).group(1))


def _watch(page: Any, job_id: int, other_id: int, artifacts: Path) -> None:
    """The Runs tab follows the launched job until it succeeds (timer refresh, no reload);
    a click on another job's row shows that job."""
    from playwright.sync_api import expect

    nav(page, "Runs").click()
    expect(page.get_by_role("heading", name=re.compile(rf"#{job_id} lora r=16"))).to_be_visible()
    shot(page, artifacts, "04-runs-started")
    expect(page.locator("#run-summary")).to_contain_text("succeeded", timeout=JOB_TIMEOUT_MS)
    expect(page.get_by_label("Log (last lines)")).to_have_value(re.compile(r"succeeded: accuracy"))
    expect(page.locator("#run-lr-search-text")).to_contain_text("chosen by the automatic search")
    expect(page.locator("#run-lr-search")).to_be_visible()
    shot(page, artifacts, "05-runs-succeeded")
    page.get_by_role("row", name=re.compile(rf"^{other_id} probe all layers")).click()
    expect(page.get_by_role("heading", name=re.compile(rf"#{other_id} probe all layers"))).to_be_visible()
    # A layer sweep counts layers, not epochs: embeddings + 6 layers of MiniLM-L6.
    expect(page.locator("#run-summary")).to_contain_text("layers probed 7/7")
    expect(page.locator("#run-layers")).to_be_visible()
    shot(page, artifacts, "05b-runs-probe-sweep")


def _compare(page: Any, job_ids: list[int], artifacts: Path, text: str) -> None:
    from playwright.sync_api import expect

    nav(page, "Compare").click()
    page.get_by_role("button", name="Refresh list").filter(visible=True).click()
    for job_id in job_ids:
        page.get_by_role("checkbox", name=re.compile(rf"^#{job_id} ")).check()
    page.get_by_role("button", name="Compare ticked runs").click()
    table = page.locator("#compare-table")
    for job_id in job_ids:
        expect(table).to_contain_text(f"#{job_id} ")
    expect(table).to_contain_text("lora")
    expect(table).to_contain_text("probe")
    # issue 37: every score with its interval, each run against the best, and how
    expect(
        table.locator("td").filter(has_text=re.compile(r"^0\.\d{3} \[0\.\d{3}, [01]\.\d{3}\]$"))
    ).to_have_count(
        len(job_ids) * 2  # accuracy and macro-F1 of each run
    )
    expect(table.locator("td").filter(has_text=re.compile(r"^best$"))).to_have_count(1)
    verdicts = r"^(better|within noise|worse) \(p = (< 0\.001|[01]\.\d{3})\)$"
    expect(table.locator("td").filter(has_text=re.compile(verdicts))).to_have_count(len(job_ids) - 1)
    expect(page.locator("#compare-significance")).to_contain_text("McNemar")
    page.get_by_label("Text to classify").fill(text)
    page.get_by_role("button", name="Predict", exact=True).click()
    predictions = page.locator("#predictions")
    for job_id in job_ids:
        expect(predictions).to_contain_text(f"#{job_id} ", timeout=JOB_TIMEOUT_MS)
    shot(page, artifacts, "06-compare")
    readme_shot(page, "compare.png", nav(page, "Compare"))


def _probing(page: Any, artifacts: Path) -> None:
    from playwright.sync_api import expect

    nav(page, "Probing by layer").click()
    expect(page.get_by_text("Best layer:")).to_be_visible()
    shot(page, artifacts, "07-probing")
    readme_shot(page, "probing.png", nav(page, "Probing by layer"))


def _download(page: Any, job_id: int, tmp_path: Path, artifacts: Path) -> Path:
    from playwright.sync_api import expect

    nav(page, "Export").click()
    # The most recent finished run is preselected: the download is ready before any choice.
    expect(page.get_by_role("button", name="Download adapter")).to_be_enabled(timeout=JOB_TIMEOUT_MS)
    page.get_by_label("Run to export").click()
    page.get_by_role("option", name=re.compile(rf"^#{job_id} ")).click()
    button = page.get_by_role("button", name="Download adapter")
    expect(button).to_be_enabled()
    with page.expect_download() as download:
        button.click()
    target = tmp_path / download.value.suggested_filename
    download.value.save_as(target)
    assert target.name == f"job-{job_id}.zip"
    page.get_by_role("button", name="Build merged model").click()
    expect(page.get_by_role("button", name="Download merged model")).to_be_enabled(timeout=JOB_TIMEOUT_MS)
    expect(page.get_by_text(f"job-{job_id}-merged.zip")).to_be_visible()
    shot(page, artifacts, "08-export")
    return target


def test_a_grid_sweep_shows_its_front_opens_runs_and_fills_the_train_tab(
    page: Any, server: Server, tiny_csv: Path, artifacts: Path, tmp_path: Path
) -> None:
    """Sweep beside Launch: a LoRA rank grid queued from the Train tab, its trials and Pareto
    points on the Sweeps tab, a point opening its run, and "use the best run's settings"
    putting that run's method and numbers back into a Train tab that shows something else."""
    from playwright.sync_api import expect

    _upload(page, tiny_csv, artifacts)
    nav(page, "Train").click()
    _type_common(page, epochs="2", lr="0.003")
    page.get_by_text("Sweep: try several settings of this method").click()
    page.locator("#sweep-axis1").get_by_role("textbox").fill("rank=1,8")
    page.locator("#sweep-launch").click()
    message = page.locator("#sweep-message")
    expect(message).to_contain_text("Queued sweep")
    sweep_id = int(re.search(r"#(\d+)", message.inner_text()).group(1))
    # Change the form, so that filling it back later is visible.
    page.get_by_role("radio", name="Prompt tuning").check()
    page.get_by_label("Learning rate: auto").check()

    nav(page, "Sweeps").click()
    summary = page.locator("#sweep-summary")
    expect(summary).to_contain_text("2/2 trials ended", timeout=2 * JOB_TIMEOUT_MS)
    detail = server.workbench().get_sweep(sweep_id)
    best = detail["best_job_id"]
    expect(summary).to_contain_text(f"Best run: #{best}")
    expect(page.locator("#sweep-pareto circle[data-key]")).to_have_count(2)
    for rank in (1, 8):
        expect(page.locator("#sweep-trials")).to_contain_text(f"rank={rank}")
    shot(page, artifacts, "09-sweep")
    page.locator("#sweep-report").click()
    with page.expect_download() as download:
        page.locator("#sweep-report-file").get_by_role("link").first.click()
    report = tmp_path / download.value.suggested_filename
    download.value.save_as(report)
    text = report.read_text()
    assert report.suffix == ".html" and all(f"#{t['job_id']}" in text for t in detail["trials"])

    other = next(t["job_id"] for t in detail["trials"] if t["job_id"] != best)
    page.locator(f"#sweep-pareto circle[data-key='{other}']").click()
    expect(page.get_by_role("heading", name=re.compile(rf"#{other} lora"))).to_be_visible()

    nav(page, "Sweeps").click()
    page.locator("#sweep-use").click()
    expect(page.locator("#launch-message")).to_contain_text(f"Settings of run #{best} filled in")
    best_rank = next(t["params"]["rank"] for t in detail["trials"] if t["job_id"] == best)
    expect(page.get_by_role("radio", name="LoRA", exact=True)).to_be_checked()
    expect(page.get_by_role("slider", name="LoRA rank")).to_have_value(str(best_rank))
    expect(page.get_by_label("Learning rate: auto")).not_to_be_checked()
    expect(page.get_by_role("spinbutton", name="Learning rate")).to_have_value("0.003")
    expect(page.get_by_role("spinbutton", name="Epochs")).to_have_value("2")
    shot(page, artifacts, "10-use-settings")
    rerun = _launch(page)  # launched from the filled form: its lineage names the best run
    assert server.workbench().get_job(rerun)["rerun_of"] == best
    server.workbench().cancel(rerun)
    _error_analysis(page, tmp_path, artifacts)


def _error_analysis(page: Any, tmp_path: Path, artifacts: Path) -> None:
    """A confusion-matrix cell filters the examples to its pair; the CSV holds exactly those."""
    from playwright.sync_api import expect

    nav(page, "Error analysis").click()
    expect(page.locator("#errors-summary")).to_contain_text("examples · accuracy")
    cells = page.locator("#errors-confusion td[data-cell]")
    expect(cells).to_have_count(4)
    # The fullest cell, so that the filter and the CSV have rows to check.
    counts = [int(text) for text in cells.all_inner_texts()]
    cell = cells.nth(counts.index(max(counts)))
    true, predicted = cell.get_attribute("data-cell").split("\t")
    count = max(counts)
    cell.click()
    expect(page.get_by_label("True label")).to_have_value(true)
    expect(page.get_by_label("Predicted label")).to_have_value(predicted)
    expect(page.locator("#errors-table")).to_contain_text(f"{count:,} of ")
    expect(page.locator("#errors-reliability svg")).to_be_visible()
    shot(page, artifacts, "11-errors")
    button = page.locator("#errors-csv")
    expect(button).to_be_enabled()
    with page.expect_download() as download:
        button.click()
    target = tmp_path / download.value.suggested_filename
    download.value.save_as(target)
    rows = list(csv.DictReader(target.open()))
    assert count > 0 and len(rows) == count
    assert all((r["true"], r["predicted"]) == (true, predicted) for r in rows)


def _type_common(page: Any, *, epochs: str, lr: str) -> None:
    """Untick the "auto" boxes and type short-run settings."""
    page.get_by_label("Epochs: auto").uncheck()
    page.get_by_label("Learning rate: auto").uncheck()
    typed = (("Epochs", epochs), ("Learning rate", lr), ("Batch size", "16"), ("Max length", "32"))
    for label, value in typed:
        page.get_by_role("spinbutton", name=label).fill(value)
        page.get_by_role("spinbutton", name=label).press("Enter")


def test_a_conll_upload_trains_lora_and_try_it_highlights_its_entities(
    page: Any, client: Any, tmp_path: Path, artifacts: Path
) -> None:
    """Issue 38: a CoNLL file (a word and a tag per line) is recognised as token data and drawn
    with its entities; LoRA trains on it from the Train tab; Try it marks the entities of a
    typed sentence."""
    from playwright.sync_api import expect

    from tests.token_data import sentences, write_conll

    conll = write_conll(tmp_path / "people-places.conll", sentences(120, 7))
    page.locator("#upload-dataset input[type=file]").set_input_files(str(conll))
    expect(page.locator("#data-message")).to_contain_text("Registered")
    preview = page.locator("#data-preview")
    expect(preview.locator("mark.wb-ent").first).to_be_visible()  # the tags drawn in, by type
    expect(preview).to_contain_text("Preview (first sentences, tags drawn in)")
    expect(page.get_by_text("a tag per word (IOB2)")).to_be_visible()
    shot(page, artifacts, "09-data-tokens")

    nav(page, "Train").click()
    page.get_by_role("radio", name="LoRA", exact=True).check()
    _type_common(page, epochs="6", lr="0.003")  # a few seconds on the 108 training sentences
    job_id = _launch(page)
    finished = wait_finished(client, [job_id])[job_id]
    assert finished["status"] == "succeeded", finished
    assert finished["task"] == "token-classification"

    nav(page, "Compare").click()
    page.get_by_role("button", name="Refresh list").filter(visible=True).click()
    page.get_by_role("checkbox", name=re.compile(rf"^#{job_id} ")).check()
    page.get_by_role("button", name="Compare ticked runs").click()
    expect(page.locator("#compare-table")).to_contain_text(f"#{job_id} ")
    page.get_by_label("Text to classify").fill("I met Ada Lovelace in New York today")
    page.get_by_role("button", name="Predict", exact=True).click()
    marks = page.locator("#predictions mark.wb-ent")
    expect(marks.filter(has_text="Ada Lovelace")).to_have_count(1, timeout=JOB_TIMEOUT_MS)
    expect(marks.filter(has_text="New York")).to_have_count(1)
    expect(marks.filter(has_text="Ada Lovelace")).to_contain_text("PER")
    shot(page, artifacts, "10-try-it-entities")
