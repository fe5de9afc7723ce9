#!/usr/bin/env bash
# Reproduces core/models/player-detector/player-detector.onnx and its metrics:
# dataset from the TypeScript generator (training seeds 100-109, held-out
# seeds 900-901), training, ONNX export (checked against JAX), evaluation.
# Needs Node 24 first on PATH, ffmpeg, Python 3.11. CPU only; about 20-40
# minutes on 2 cores. Work files go to $WORK (default /tmp/player-detector).
set -euo pipefail
cd "$(dirname "$0")"
WORK=${WORK:-/tmp/player-detector}
STEPS=${STEPS:-3000}
FT_STEPS=${FT_STEPS:-1000}
mkdir -p "$WORK"
if [ ! -x "$WORK/venv/bin/python" ]; then
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q -r requirements.txt
fi
PY="$WORK/venv/bin/python"
[ -f "$WORK/train/images.npy" ] || "$PY" dataset.py --out "$WORK/train" --seeds 100-109 --fps 2 --duration 20
[ -f "$WORK/heldout/images.npy" ] || "$PY" dataset.py --out "$WORK/heldout" --seeds 900-901 --fps 1 --duration 20
"$PY" train.py --data "$WORK/train" --out "$WORK/params.npz" --steps "$STEPS" --seed 0
# Second stage: rarer classes (referee, ball) favoured, lower learning rate.
"$PY" train.py --data "$WORK/train" --out "$WORK/params-ft.npz" --init "$WORK/params.npz" \
  --steps "$FT_STEPS" --lr 5e-4 --class-sampling 1,3,10,12 --seed 1
"$PY" export_onnx.py --params "$WORK/params-ft.npz" --out ../player-detector.onnx
"$PY" evaluate.py --model ../player-detector.onnx --data "$WORK/heldout" --score 0.3 --out ../metrics.json
