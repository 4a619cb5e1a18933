"""The Workbench's datasets: register (validated, stored, recorded), list, preview, delete."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from backend.data.limits import check_file_size
from backend.data.prepare import prepare
from backend.data.spec import DatasetSpec
from backend.data.stats import dataset_stats
from backend.errors import ConfigError
from backend.settings import PROJECT_ROOT
from jobs import datasets
from service.api_state import WorkbenchState
from service.records import (
    DatasetInfo,
    DatasetPreview,
    DatasetRemoval,
    DiskUsage,
)

# The example a newcomer can train on without data of their own (the Data tab's "Load an
# example"): hand-written support messages by team, CC0; source and licence in its README.
EXAMPLE_FILE = PROJECT_ROOT / "examples" / "support_tickets" / "support_tickets.csv"
EXAMPLE_NAME = "support tickets (example)"


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (0 if absent); links are not followed."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:  # removed while we walked
                continue
    return total


class DatasetsApi(WorkbenchState):
    """Datasets and the data folder's disk usage."""

    def register_dataset(
        self,
        path: str | Path,
        name: str | None = None,
        *,
        text_column: str | None = None,
        text_pair_column: str | None = None,
        label_column: str | None = None,
    ) -> DatasetInfo:
        """Validate a file, store a copy and record it (the same file + mapping: same row).

        Files over ``settings.max_upload_mb`` or ``settings.max_rows`` are a DataError.
        """
        path = Path(path)
        check_file_size(path, self.settings.max_upload_bytes)  # before reading it into memory
        # Validation first: on a DataError nothing is copied or recorded. Rows with a
        # missing cell do not block registration (training can drop them); they are counted.
        # The file is read once: its spec carries the hash and counts the row stores.
        prepared = prepare(
            path,
            text_column=text_column,
            text_pair_column=text_pair_column,
            label_column=label_column,
            drop_invalid=True,
            max_rows=self.settings.max_rows,
        )
        return self._store_dataset(prepared.spec, name)

    def load_example(self) -> DatasetInfo:
        """Register the example dataset that ships with the project (the same row each time)."""
        if not EXAMPLE_FILE.is_file():
            raise ConfigError(f"the example dataset is missing from this installation ({EXAMPLE_FILE.name})")
        return self.register_dataset(EXAMPLE_FILE, EXAMPLE_NAME)

    def _store_dataset(self, spec: DatasetSpec, name: str | None) -> DatasetInfo:
        return datasets.register(self.db, self.settings.datasets_dir, spec, name)

    def list_datasets(self) -> list[DatasetInfo]:
        """Registered datasets, newest first."""
        return datasets.list_all(self.db)

    def delete_dataset(self, dataset_id: int) -> DatasetRemoval:
        """Delete a dataset and its stored copy (kept while another dataset row uses it).

        Refused while a queued or running job uses it. Returns {id, deleted, file_removed}.
        """
        return datasets.remove(self.db, self.settings.datasets_dir, int(dataset_id))

    def disk_usage(self) -> DiskUsage:
        """Bytes under the data folder: datasets, artifacts, exports, cache and the total."""
        data = self.settings.data_dir
        parts = {
            "datasets": self.settings.datasets_dir,
            "artifacts": self.settings.artifacts_dir,
            "exports": data / "exports",
            "cache": data / "cache",  # probe features and uploads on their way in
        }
        usage = {name: folder_bytes(folder) for name, folder in parts.items()}
        usage["total"] = folder_bytes(data)  # the database and anything else too
        return usage

    def dataset_preview(self, dataset_id: int) -> DatasetPreview:
        """``dataset_stats`` of a stored dataset, token lengths (of a sample) included."""
        return self._stats(dataset_id, self._default_tokenizer())

    def dataset_task(self, dataset_id: int) -> str:
        """The task "auto" trains on a stored dataset (its label column read; no tokenizer)."""
        return str(self._stats(dataset_id, None)["task"])

    def _stats(self, dataset_id: int, tokenizer: Any) -> DatasetPreview:
        row = datasets.get(self.db, dataset_id)
        if row is None:
            raise ConfigError(f"no dataset {dataset_id}")
        return dataset_stats(
            row.path,
            text_column=row.text_column,
            text_pair_column=row.text_pair_column,
            label_column=row.label_column,
            tokenizer=tokenizer,
        )

    def _default_tokenizer(self) -> Any:
        from backend.catalogue import DEFAULT_MODEL, load_tokenizer, model_info

        with self._lock:
            if self._tokenizer is None:
                info = model_info(DEFAULT_MODEL, self.settings.models_cache)
                self._tokenizer = load_tokenizer(info)
            return self._tokenizer
