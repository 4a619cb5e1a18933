"""Install the offline base models into models_cache/hub once; ``make install`` runs this.

SmolLM2's GGUF is dequantized into safetensors here (about 30 s) rather than at its first use,
where it would hold up the Train tab or a worker. Without this, the first use does the same.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend.settings import Settings, apply_environment


def main() -> int:
    settings = Settings.from_env()
    apply_environment(settings)  # before transformers is imported: it reads HF_HOME then
    from backend.offline_models import OFFLINE_MODELS, available, offline_snapshot

    for model in OFFLINE_MODELS:
        if not available(model, settings.models_cache):
            print(f"{model.name}: skipped, its package is not installed ({model.pip_name})")
            continue
        start = time.perf_counter()
        snapshot = offline_snapshot(model, settings.models_cache)
        print(f"{model.name}: {snapshot} ({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
