#!/usr/bin/env bash
# Reproduces core/models/player-detector/player-detector.onnx, its person and ball verifiers and its metrics:
# synthetic dataset from the TypeScript generator (training seeds 100-109,
# held-out seeds 900-901), the real football-players-detection frames split by
# match (split.json), two synthetic-only stages, a mixed real + synthetic stage
# with the wide-camera augmentations, a long mixed stage that adds a second
# residual block (version 3), a polish stage of the same mix at half the
# learning rate (version 3.1), a hard-negative stage (version 3.2: crops
# centred where the polished model fires on the real training frames with
# nothing labelled, mine_negatives.py), ONNX export (checked against JAX), and
# the side-by-side evaluation (new, previous, YOLOX-Nano) on the real
# validation matches and the synthetic held-out seeds, then the int8 rendition
# CPU workers run (quantize.py, recorded in metrics.json's `renditions`).
# Needs Node 24 first on PATH, ffmpeg, Python 3.11, and ../shared beside the
# repository (the real set is read from there, never copied into the repo).
# CPU only. Work files go to $WORK (default /tmp/player-detector).
#
#   INIT_ONNX=path   skip the two synthetic-only stages and start the mixed stage
#                    from these weights (version 2 was made this way from the
#                    synthetic-only version 1, which is exactly what those two
#                    stages produce)
#   MIXED_ONNX=path  skip the first three stages and start the long stage from
#                    these weights (version 3 was made this way from version
#                    2.2's player-detector.onnx, what the mixed stage produces)
#   LONG_ONNX=path   skip the first four stages and start the polish stage from
#                    these weights (version 3.1 was made this way from version
#                    3.0's player-detector.onnx, what the long stage produces)
#   MIX_STEPS, MIX_MINUTES   length of the mixed stage (steps, wall-clock cap)
#   LONG_STEPS, LONG_MINUTES length of the long stage (steps, wall-clock cap)
#   POLISH_ONNX=path skip the first five stages and start the hard-negative stage
#                    from these weights (version 3.2 was made this way from version
#                    3.1's player-detector.onnx, what the polish stage produces)
#   POLISH_STEPS, POLISH_MINUTES length of the polish stage (steps, wall-clock cap)
#   NEG_STEPS, NEG_MINUTES   length of the hard-negative stage (steps, wall-clock cap)
#   DETECTOR_ONNX=path skip the detector's six stages and use these weights as they are (versions 3.3 and
#                    3.4 were made this way: version 3.2's player-detector.onnx, unchanged, and its verifiers)
#   VERIFIER_STEPS   length of the person verifier's training (verifier.py)
#   BALL_VERIFIER_STEPS length of the ball verifier's training (verifier.py --target ball)
set -euo pipefail
cd "$(dirname "$0")"
WORK=${WORK:-/tmp/player-detector}
STEPS=${STEPS:-3000}
FT_STEPS=${FT_STEPS:-1000}
MIX_STEPS=${MIX_STEPS:-700}
MIX_MINUTES=${MIX_MINUTES:-54}
LONG_STEPS=${LONG_STEPS:-8000}
LONG_MINUTES=${LONG_MINUTES:-120}
POLISH_STEPS=${POLISH_STEPS:-8000}
POLISH_MINUTES=${POLISH_MINUTES:-120}
NEG_STEPS=${NEG_STEPS:-4000}
NEG_MINUTES=${NEG_MINUTES:-60}
VERIFIER_STEPS=${VERIFIER_STEPS:-4000}
BALL_VERIFIER_STEPS=${BALL_VERIFIER_STEPS:-2500}
REAL=${REAL:-../../../../../shared/datasets/football-players-detection}
YOLOX=${YOLOX:-../../../../../shared/models/yolox_nano.onnx}
if [ ! -d "$REAL/images" ]; then
  echo "missing $REAL/images (the football-players-detection set; set REAL=...)" >&2
  exit 1
fi
mkdir -p "$WORK"
if [ ! -x "$WORK/venv/bin/python" ]; then
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q -r requirements.txt
fi
PY="$WORK/venv/bin/python"
[ -f "$WORK/train/images.npy" ] || "$PY" dataset.py --out "$WORK/train" --seeds 100-109 --fps 2 --duration 20
[ -f "$WORK/heldout/images.npy" ] || "$PY" dataset.py --out "$WORK/heldout" --seeds 900-901 --fps 1 --duration 20
[ -f "$WORK/real-train/images.npy" ] || "$PY" real_dataset.py --src "$REAL" --part train --out "$WORK/real-train"
[ -f "$WORK/real-val/images.npy" ] || "$PY" real_dataset.py --src "$REAL" --part validation --out "$WORK/real-val"
# The model this run replaces, for the side-by-side table.
[ -f "$WORK/previous.onnx" ] || cp ../player-detector.onnx "$WORK/previous.onnx"
if [ -n "${DETECTOR_ONNX:-}" ]; then
  [ "$(realpath "$DETECTOR_ONNX")" = "$(realpath ../player-detector.onnx)" ] || cp "$DETECTOR_ONNX" ../player-detector.onnx
else
  if [ -n "${POLISH_ONNX:-}" ]; then
    POLISHED="$POLISH_ONNX"
  else
    if [ -n "${LONG_ONNX:-}" ]; then
      LONG="$LONG_ONNX"
    else
      if [ -n "${MIXED_ONNX:-}" ]; then
        MIXED="$MIXED_ONNX"
      else
        if [ -n "${INIT_ONNX:-}" ]; then
          INIT="$INIT_ONNX"
        else
          "$PY" train.py --data "$WORK/train" --out "$WORK/params.npz" --steps "$STEPS" --seed 0
          # Second stage: rarer classes (referee, ball) favoured, lower learning rate.
          "$PY" train.py --data "$WORK/train" --out "$WORK/params-ft.npz" --init "$WORK/params.npz" \
            --steps "$FT_STEPS" --lr 5e-4 --class-sampling 1,3,10,12 --seed 1
          INIT="$WORK/params-ft.npz"
        fi
        # Mixed stage (version 2): 60 % real crops at scale 0.3-1.0 (players ~16-54 px), 40 % synthetic at
        # 0.6-1.15, wide-camera augmentations (augment.py); adds the first residual block (identity at start).
        "$PY" train.py --data "$WORK/train:0.4:0.6-1.15" --data "$WORK/real-train:0.6:0.3-1.0" --augment 1 \
          --init "$INIT" --out "$WORK/params-mixed.npz" --steps "$MIX_STEPS" --lr 1e-3 --seed 2 --max-minutes "$MIX_MINUTES"
        MIXED="$WORK/params-mixed.npz"
      fi
      # Long stage (version 3): the same mix and augmentations, 8000 steps (a fresh warm-up + cosine schedule),
      # with a second residual block (identity at start).
      "$PY" train.py --data "$WORK/train:0.4:0.6-1.15" --data "$WORK/real-train:0.6:0.3-1.0" --augment 1 \
        --init "$MIXED" --residual-blocks 2 --out "$WORK/params-long.npz" --steps "$LONG_STEPS" --lr 1e-3 --seed 3 \
        --max-minutes "$LONG_MINUTES"
      LONG="$WORK/params-long.npz"
    fi
    # Polish stage (version 3.1): the same mix and augmentations, 8000 more steps from the long stage's weights
    # at half its learning rate (5e-4, a fresh warm-up + cosine schedule), two residual blocks.
    "$PY" train.py --data "$WORK/train:0.4:0.6-1.15" --data "$WORK/real-train:0.6:0.3-1.0" --augment 1 \
      --init "$LONG" --residual-blocks 2 --out "$WORK/params-polish.npz" --steps "$POLISH_STEPS" --lr 5e-4 --seed 4 \
      --max-minutes "$POLISH_MINUTES"
    "$PY" export_onnx.py --params "$WORK/params-polish.npz" --out "$WORK/polish.onnx"
    POLISHED="$WORK/polish.onnx"
  fi
  # Hard-negative stage (version 3.2): where the polished model fires (people or ball >= 0.3) on the real
  # training frames with no label within IoU 0.1 (mine_negatives.py: on these matches the letters of the
  # broadcaster's watermark, turf lettering, boards, unlabelled coaches), 15 % of the real crops are centred
  # on one of those boxes; the same mix and augmentations, 4000 steps at 2.5e-4 (half the polish stage's).
  "$PY" mine_negatives.py --model "$POLISHED" --data "$WORK/real-train"
  "$PY" train.py --data "$WORK/train:0.4:0.6-1.15" --data "$WORK/real-train:0.6:0.3-1.0" --augment 1 \
    --init "$POLISHED" --residual-blocks 2 --negatives 0.15 --out "$WORK/params-negatives.npz" --steps "$NEG_STEPS" \
    --lr 2.5e-4 --seed 5 --max-minutes "$NEG_MINUTES"
  "$PY" export_onnx.py --params "$WORK/params-negatives.npz" --out ../player-detector.onnx
fi
# The person verifier (version 3.3): a second look at each person candidate of this detector on the real
# training matches and the synthetic renders (verifier.py); the stage fuses its answer into the box's score.
# The ball verifier (version 3.4): the same second look at each ball candidate, through a square window.
# From 3.4 each is two networks trained from seeds 0 and 1, their logits averaged in one graph (--combine).
for SEED in 0 1; do
  "$PY" verifier.py --detector ../player-detector.onnx --data "$WORK/real-train" --data "$WORK/train:4" \
    --steps "$VERIFIER_STEPS" --seed "$SEED" --out "$WORK/person-verifier-s$SEED.onnx"
  "$PY" verifier.py --target ball --detector ../player-detector.onnx --data "$WORK/real-train" --data "$WORK/train:4" \
    --steps "$BALL_VERIFIER_STEPS" --seed "$SEED" --out "$WORK/ball-verifier-s$SEED.onnx"
done
"$PY" verifier.py --combine "$WORK/person-verifier-s0.onnx" "$WORK/person-verifier-s1.onnx" --out ../person-verifier.onnx
"$PY" verifier.py --target ball --combine "$WORK/ball-verifier-s0.onnx" "$WORK/ball-verifier-s1.onnx" \
  --out ../ball-verifier.onnx
# The card's thresholds are on the verified scores (the first model), `verifier.tracker_unverified` on its own.
"$PY" evaluate.py --model new=../player-detector.onnx --verifier new=../person-verifier.onnx \
  --ball-verifier new=../ball-verifier.onnx \
  --version player-detector-3.4 --model previous="$WORK/previous.onnx" --yolox "$YOLOX" \
  --data real="$WORK/real-val" --data synthetic="$WORK/heldout" --out ../metrics.json
# The int8 rendition for CPU workers, calibrated on training frames, checked against the float model
# on the validation matches and recorded in the card (after evaluate.py, which rewrites metrics.json).
"$PY" quantize.py --model ../player-detector.onnx --out ../player-detector-int8.onnx \
  --data "$WORK/real-train" --data "$WORK/train" --check "$WORK/real-val" --card ../metrics.json
