#!/usr/bin/env bash
# Everything worth timing on one GPU, in one call of at most 8 minutes (issue 32): run it as the
# one command on a lent GPU machine, from the repository root, with DPGNN_DATA set:
#
#     DPGNN_DATA=$(realpath ../shared/datasets) bash benchmarks/gpu.sh
#
# 1. the school-scale fits (Rutgers89: ProGAP K=3, GAP K=2; fit + test, whole process, peak RSS)
#    on the GPU, 3 interleaved repeats, then once on the CPU of the same machine: the 1-GPU vs CPU
#    comparison, side by side in one call;
# 2. one private hop at FB-scale size (a random graph of facebook100/all's size) on the GPU;
# 3. FB-scale GAP-EDP K=2 and ProGAP-EDP K=3 end to end on the GPU (target: ProGAP < 20 s).
# Each step has its own time limit, so a slow step cannot eat the next one's time; every row goes
# to results/speed.jsonl (names end in " [gpu]") and results/speed.md is rebuilt.
#
#     bash benchmarks/gpu.sh --smoke    # the script itself on the CPU (benchmarks/smoke.py)
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1
SPEED=(python benchmarks/speed.py)

if [[ "${1:-}" == "--smoke" ]]; then  # the steps' code paths on the CPU, once, small
    "${SPEED[@]}" --accelerator cpu --targets school --repeats 1
    "${SPEED[@]}" --accelerator cpu --targets hop --repeats 1 --hop-dataset random:2000:20000
    exit 0
fi
python -c "import torch; assert torch.cuda.is_available(), 'no GPU visible'; print(torch.cuda.get_device_name(0))"
timeout 200 "${SPEED[@]}" --accelerator gpu --targets school --repeats 3
timeout 100 "${SPEED[@]}" --accelerator cpu --targets school --repeats 1
timeout 40 "${SPEED[@]}" --accelerator gpu --targets hop --hop-dataset random:694125:51779806
timeout 140 "${SPEED[@]}" --accelerator gpu --targets fb --fb-methods GAP ProGAP --repeats 1
