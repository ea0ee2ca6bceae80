#!/usr/bin/env bash
# Regenerates the README's screenshots from the real app (gpuperf-gui --screenshot), offscreen.
# The trace pictures use the real traces in tests/data/shared_traces (a copy of the project's shared traces).
set -euo pipefail
cd "$(dirname "$0")/../.."
export QT_QPA_PLATFORM=offscreen
app=".venv/bin/gpuperf-gui"
out=docs/screenshots
traces=tests/data/shared_traces

# A throw-away data folder holding the real H200 benchmark run committed in benchmarks/results/.
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
mkdir -p "$data/bench/runs"
cp benchmarks/results/h200_full_run.jsonl "$data/bench/runs/h200-full.jsonl"
export GPUPERF_DATA_DIR="$data" XDG_CONFIG_HOME="$data/config"

$app --tab roofline --device h200 --precisions bf16,fp8,fp32 --screenshot $out/roofline.png
GPUPERF_DATA_DIR="$data/no-runs" $app --tab roofline --device h100-sxm --compare h200,a100-sxm-80gb,mi300x,l40s --precisions bf16 \
     --screenshot $out/roofline_compare.png
$app --tab bench --device h200 --screenshot $out/bench.png
# A small CPU run on this machine, then: its points and cache roofs on the cpu roof, the cpu drawn
# beside the H200 at once, and its points in the Points table (docs/benchmarks-cpu.md)
.venv/bin/gpuperf bench --device cpu --kernels matmul,copy --dtypes fp32,bf16 --sizes 256,512,1024 \
     --warmup-ms 5 --rep-ms 20 --quiet --results-dir "$data/bench" > /dev/null
$app --tab roofline --device cpu --precisions fp32 --screenshot $out/roofline_cpu.png
.venv/bin/python docs/screenshots/roofline_cpu_states.py $out
# The shipped H200 demo trace's kernels: on its roof, hidden on the A100's, "measured on h200" on request
GPUPERF_DATA_DIR="$data/no-runs" .venv/bin/python docs/screenshots/roofline_states.py $out
# Presentation mode (View ▸ Presentation): each page, made by the app's own module
.venv/bin/python -m gpuperf_gui.views.presentation --device h100-sxm --precision bf16 --screenshot $out
$app --tab mfu --device h200 --screenshot $out/mfu.png
$app --tab trace --device h200 --screenshot $out/trace.png $traces/param/dlrm_kineto
$app --tab trace --device h200 --screenshot $out/trace_launch_bound.png $traces/h200/launch_bound_tiny.json.gz
.venv/bin/python docs/screenshots/trace_pages.py $out  # Trace tab: overview, compare, straggler, ranks, range
# File ▸ Profile a script… started from the Roofline tab: progress in the status bar, then its trace
.venv/bin/python docs/screenshots/profile_states.py $out
# A folder of 256 ranks (a real gloo straggler recording tiled, rank 173 late) opens as a job overview
.venv/bin/python -c "import sys; sys.path.insert(0, 'tests/core'); from pathlib import Path; \
from many_ranks import tiled_straggler_job; tiled_straggler_job(Path('$data/job256'), 256, 173)"
$app --screenshot $out/job_overview.png "$data/job256"
ls -l $out/*.png
