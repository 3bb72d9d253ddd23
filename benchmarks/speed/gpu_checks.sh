#!/usr/bin/env bash
# The scoring kernels' checks on a GPU, in one call: first whether every path agrees with the
# plain transformers forward (benchmarks/speed/kernel_agreement.py: float32 and bfloat16, the
# embedded SmolLM2-135M and a Llama-shaped model with grouped-query attention, rows with and
# without cached prefixes; then the suite's GPU tests of the kernels, tests/lm/
# test_kernel_agreement.py and test_rotary_kernel.py, their outcome recorded beside it: pack.sh
# carries pytest), then the 8B-shape speed run of the compiled packed paths with and
# without fused projections and the Triton rotary kernel, the reference and the padded path
# measured in the same run, the fastest path at larger token budgets per forward (the sweep) and
# profiled (benchmarks/speed/scoring_gpu.py).
#
#   bash benchmarks/speed/gpu_checks.sh NAME [SECONDS]
#
# writes benchmarks/speed/results/kernel_agreement_NAME/ and scoring_gpu_NAME_rotary/, each
# with its manifest; SECONDS (default 250) bounds the speed run's optional parts (its profile).
# Exit status: 1 when a path disagrees or a run fails (both runs are attempted either way).
# On a short-lived GPU machine, through benchmarks/device/run.sh (the embedded model's package
# comes from pack.sh's parts):
#
#   bash benchmarks/device/run.sh 540 benchmarks/speed/results -- bash benchmarks/speed/gpu_checks.sh h200
#
# GPU_CHECKS_DEVICE (default cuda), GPU_CHECKS_AGREEMENT_ARGS and GPU_CHECKS_SPEED_ARGS (more
# arguments for each script), GPU_CHECKS_RESULTS (default benchmarks/speed/results) and PYTHON
# (default python3) let the same script run a small dry run on a CPU
# (tests/benchmarks/test_benchmarks.py).
set -uo pipefail
cd "$(dirname "$0")/../.."
[ "$#" -ge 1 ] || { echo "usage: gpu_checks.sh NAME [SECONDS]" >&2; exit 2; }
name=$1 seconds=${2:-250}
results=${GPU_CHECKS_RESULTS:-benchmarks/speed/results}
device=${GPU_CHECKS_DEVICE:-cuda}
read -r -a agreement_args <<< "${GPU_CHECKS_AGREEMENT_ARGS:-}"
read -r -a speed_args <<< "${GPU_CHECKS_SPEED_ARGS:-}"
"${PYTHON:-python3}" -m benchmarks.speed.kernel_agreement --device "$device" --suite-tests \
  --out "$results/kernel_agreement_$name/agreement.json" ${agreement_args[@]+"${agreement_args[@]}"}
agree=$?
"${PYTHON:-python3}" -m benchmarks.speed.scoring_gpu --workload benchmarks/speed/workloads/scoring_200pairs.json \
  --device "$device" --rounds 1 --profile --time-limit-s "$seconds" \
  --sweep 65536/8192,131072/16384,262144/32768 \
  --variants packed_compiled_flash,packed_compiled_fused_flash,packed_compiled_flash_rotary,packed_compiled_fused_flash_rotary \
  --out "$results/scoring_gpu_${name}_rotary/scoring_gpu.json" ${speed_args[@]+"${speed_args[@]}"}
speed=$?
echo "kernel agreement and the suite's GPU tests: exit $agree; speed run: exit $speed"
[ "$agree" -eq 0 ] && [ "$speed" -eq 0 ]
