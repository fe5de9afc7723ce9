"""The default detector's inference on a CUDA GPU.

The product's GPU path is onnxruntime's CUDA execution provider (`DETECT_EXECUTION_PROVIDER=cuda`,
core/src/workers/detect/model/open-session.ts). This runs the shipped ONNX file:
  - onnxruntime + CUDAExecutionProvider (the `onnxruntime-gpu` package, Python binding of the same
    C++ engine as onnxruntime-node), when it is importable and the provider loads: `session.run` on
    host arrays, as the stage calls it (the upload and read-back included), batch 1;
  - PyTorch + onnx2torch: the shipped graph converted op for op (in-graph decoding too), batch 1 as
    the graph and the detect stage have it; fp32 (cuDNN, TF32 allowed, PyTorch's default) and fp16;
  - JAX/XLA: the training code's forward (train/model.py) with the file's weights, the trunk and
    head only (decoding is a few element-wise ops), batch 1..32: what batched inference would buy;
  - onnxruntime on the CPU of the same machine, as the baseline.
Every GPU runtime is checked against onnxruntime on the CPU on a real validation frame letterboxed to
the nominal input (max |score difference|, boxes at the card's `high` threshold).

Input sizes: 1280x720 is one 1920x1080 (or 3072x1728) camera at the shipped 1x1 tiling;
1280x480 is one tile of the demo's panorama strips (3 per frame, `DetectPlan.inputHeight`).

Timing: `iters` calls after `warmup`, torch.cuda.synchronize / block_until_ready at the end,
repeated `repeats` times; the median per call is reported (ms). "with copies" adds the
float32 host->device upload of the letterboxed tensor and the device->host read of the
[1, 8, N] output per call (what the stage does per tile).

Usage (on a machine with an NVIDIA GPU and CUDA builds of PyTorch and JAX, onnx, pillow, onnxruntime-gpu
1.30 (CUDA 13; it finds cuDNN and cuBLAS through PyTorch's, imported first) and onnx2torch 1.5.15, the last two
from PyPI with `pip install --no-deps`):
    python bench/detect/gpu.py --frame FRAME.jpg --out RESULT.json
FRAME.jpg: any real frame, e.g. ../shared/datasets/football-players-detection/images/54745b_7_9_*.jpg
(bench/results/detect-gpu.json was made with that one). A runtime that is missing or fails is
reported as such in RESULT.json's `checks`; the others are still measured.
Writes RESULT.json; prints one line per measurement.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "core/models/player-detector/player-detector.onnx"
TRAIN = REPO / "core/models/player-detector/train"
HIGH = 0.561  # the card's `high` tracker threshold (metrics.json thresholds.high)


def letterbox(path: Path, width: int, height: int) -> np.ndarray:
    """A JPEG -> float32 [1, 3, height, width] RGB / 255, scaled to fit, centred, grey 114 (the card's rule)."""
    from PIL import Image

    im = Image.open(path).convert("RGB")
    scale = min(width / im.width, height / im.height)
    w, h = round(im.width * scale), round(im.height * scale)
    canvas = Image.new("RGB", (width, height), (114, 114, 114))
    canvas.paste(im.resize((w, h), Image.BILINEAR), ((width - w) // 2, (height - h) // 2))
    return (np.asarray(canvas, np.float32) / 255.0).transpose(2, 0, 1)[None].copy()


def timed(fn, sync, warmup: int, iters: int, repeats: int) -> float:
    """Median over `repeats` of (time of `iters` calls of fn) / iters, in ms."""
    for _ in range(warmup):
        fn()
    sync()
    per = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        per.append((time.perf_counter() - t0) * 1000 / iters)
    return statistics.median(per)


def gpu_facts() -> dict:
    """Name, driver, memory; whether the chip has video encode / decode engines (NVML)."""
    facts: dict = {}
    try:
        q = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm", "--format=csv,noheader"],
            capture_output=True, text=True, check=True,
        )
        facts["nvidia_smi"] = q.stdout.strip()
    except Exception as err:  # noqa: BLE001 - a fact we report, not a failure
        facts["nvidia_smi"] = f"unavailable: {err}"
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        for name, query in (("h264", pynvml.NVML_ENCODER_QUERY_H264), ("hevc", pynvml.NVML_ENCODER_QUERY_HEVC)):
            try:
                facts[f"nvenc_{name}_capacity"] = pynvml.nvmlDeviceGetEncoderCapacity(h, query)
            except pynvml.NVMLError as err:
                facts[f"nvenc_{name}_capacity"] = f"error: {err}"
        try:
            facts["nvenc_sessions"] = pynvml.nvmlDeviceGetEncoderSessions(h)
        except pynvml.NVMLError as err:
            facts["nvenc_sessions"] = f"error: {err}"
        try:
            facts["nvdec_utilization"] = list(pynvml.nvmlDeviceGetDecoderUtilization(h))
        except pynvml.NVMLError as err:
            facts["nvdec_utilization"] = f"error: {err}"
    except Exception as err:  # noqa: BLE001
        facts["nvml"] = f"unavailable: {err}"
    return facts


def reference(frame: np.ndarray) -> np.ndarray:
    """onnxruntime on the CPU: the shipped file's [1, 8, N] output for `frame`."""
    import onnxruntime as ort

    sess = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    return sess.run(None, {"images": frame})[0]


def compare(name: str, got: np.ndarray, ref: np.ndarray) -> dict:
    """Max |difference| of the class scores and of the boxes; people boxes at `HIGH` in each."""
    people = lambda out: int((out[0, 4:7].max(0) >= HIGH).sum())  # noqa: E731
    return {
        "runtime": name,
        "max_abs_score_diff": float(np.abs(got[0, 4:] - ref[0, 4:]).max()),
        "max_abs_box_diff_px": float(np.abs(got[0, :4] - ref[0, :4]).max()),
        "cells_person_at_high": people(got),
        "cells_person_at_high_reference": people(ref),
    }


def bench_torch(frame: np.ndarray, ref: np.ndarray, shapes, args) -> tuple[list, dict]:
    import torch
    from onnx2torch import convert

    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    model = convert(str(MODEL)).eval().to(dev)
    rows = []
    with torch.inference_mode():
        check = compare("torch-fp32", model(torch.from_numpy(frame).to(dev)).float().cpu().numpy(), ref)
        for dtype_name, dtype in (("fp32", torch.float32), ("fp16", torch.float16)):
            m = model.to(dtype)  # in place: after the loop the model is fp16
            for h, w in shapes:
                host = np.random.default_rng(0).random((1, 3, h, w), dtype=np.float32)
                pinned = torch.from_numpy(host).pin_memory()
                x = pinned.to(dev).to(dtype)
                only = timed(lambda: m(x), torch.cuda.synchronize, args.warmup, args.iters, args.repeats)
                copies = timed(
                    lambda: m(pinned.to(dev, non_blocking=True).to(dtype)).float().cpu(),
                    torch.cuda.synchronize, args.warmup, args.iters, args.repeats,
                )
                row = {"runtime": "torch+onnx2torch", "precision": dtype_name, "batch": 1, "height": h, "width": w,
                       "ms_per_call": round(only, 3), "ms_per_call_with_copies": round(copies, 3),
                       "frames_per_s_with_copies": round(1000 / copies, 1)}
                print(json.dumps(row), flush=True)
                rows.append(row)
        check16 = compare("torch-fp16", model(torch.from_numpy(frame).to(dev).half()).float().cpu().numpy(), ref)
    return rows, {"fp32": check, "fp16": check16}


def bench_jax(frame: np.ndarray, ref: np.ndarray, shapes, args) -> tuple[list, dict]:
    sys.path.insert(0, str(TRAIN))
    import jax
    import jax.numpy as jnp
    from model import decode, forward, params_from_onnx

    params = {k: jnp.asarray(v) for k, v in params_from_onnx(MODEL).items()}
    fwd = jax.jit(forward)
    raw = np.asarray(fwd(params, jnp.asarray(frame.transpose(0, 2, 3, 1))))[0]
    boxes, scores = decode(raw)
    check = compare("jax-fp32", np.concatenate([boxes.T, scores.T])[None], ref)
    rows = []
    for h, w in shapes:
        for batch in args.batches:
            x = jax.device_put(jnp.asarray(np.random.default_rng(0).random((batch, h, w, 3), dtype=np.float32)))
            out = {}

            def call():
                out["y"] = fwd(params, x)

            ms = timed(call, lambda: out["y"].block_until_ready(), args.warmup, args.iters, args.repeats)
            row = {"runtime": "jax", "precision": "fp32", "batch": batch, "height": h, "width": w,
                   "ms_per_call": round(ms, 3), "ms_per_frame": round(ms / batch, 3),
                   "frames_per_s": round(1000 * batch / ms, 1)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows, check


def bench_ort_cuda(frame: np.ndarray, ref: np.ndarray, shapes, args) -> tuple[list, dict]:
    import onnxruntime as ort

    if hasattr(ort, "preload_dlls"):
        ort.preload_dlls()  # the CUDA and cuDNN libraries of the nvidia-* packages beside it, if any
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        raise RuntimeError(f"onnxruntime {ort.__version__} has no CUDA provider ({ort.get_available_providers()})")
    sess = ort.InferenceSession(str(MODEL), providers=["CUDAExecutionProvider"])
    if sess.get_providers()[0] != "CUDAExecutionProvider":
        raise RuntimeError(f"the session fell back to {sess.get_providers()}")
    check = compare("onnxruntime-cuda", sess.run(None, {"images": frame})[0], ref)
    rows = []
    for h, w in shapes:
        x = np.random.default_rng(0).random((1, 3, h, w), dtype=np.float32)
        ms = timed(lambda: sess.run(None, {"images": x}), lambda: None, args.warmup, args.iters, args.repeats)
        row = {"runtime": "onnxruntime-cuda", "version": ort.__version__, "precision": "fp32", "batch": 1,
               "height": h, "width": w, "ms_per_call_with_copies": round(ms, 3),
               "frames_per_s_with_copies": round(1000 / ms, 1)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows, check


def bench_ort_cpu(shapes, args) -> list:
    import onnxruntime as ort

    rows = []
    sess = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    for h, w in shapes:
        x = np.random.default_rng(0).random((1, 3, h, w), dtype=np.float32)
        ms = timed(lambda: sess.run(None, {"images": x}), lambda: None, 3, max(5, args.iters // 20), args.repeats)
        row = {"runtime": "onnxruntime-cpu", "precision": "fp32", "batch": 1, "height": h, "width": w,
               "threads": "default (all cores)", "ms_per_call": round(ms, 3)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frame", required=True, type=Path, help="a real frame (JPEG) for the correctness check")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batches", type=lambda s: [int(v) for v in s.split(",")], default=[1, 3, 8, 32])
    args = ap.parse_args()
    shapes = [(720, 1280), (480, 1280)]
    try:
        import torch  # noqa: F401 - loads the CUDA runtime, cuBLAS and cuDNN that onnxruntime-gpu links to
    except ImportError:
        pass
    frame = letterbox(args.frame, 1280, 720)
    ref = reference(frame)
    result: dict = {"model": str(MODEL.relative_to(REPO)), "host": platform.node(), "gpu": gpu_facts(),
                    "settings": {"warmup": args.warmup, "iters": args.iters, "repeats": args.repeats}, "checks": {},
                    "rows": []}
    import onnxruntime as ort

    result["onnxruntime"] = {"version": ort.__version__, "providers": ort.get_available_providers()}
    print(json.dumps(result["gpu"]), json.dumps(result["onnxruntime"]), flush=True)

    def save() -> None:
        args.out.write_text(json.dumps(result, indent=2))

    for name, run in (("onnxruntime-cuda", lambda: bench_ort_cuda(frame, ref, shapes, args)),
                      ("torch", lambda: bench_torch(frame, ref, shapes, args)),
                      ("jax", lambda: bench_jax(frame, ref, shapes, args))):
        try:
            rows, check = run()
            result["rows"] += rows
            result["checks"][name] = check
        except Exception as err:  # noqa: BLE001 - one runtime failing must not lose the other's figures
            result["checks"][name] = f"failed: {type(err).__name__}: {err}"
            print(f"{name}: failed: {err}", flush=True)
        save()
    result["rows"] += bench_ort_cpu(shapes, args)
    save()
    print(json.dumps(result["checks"], indent=1))


if __name__ == "__main__":
    main()
