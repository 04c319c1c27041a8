#!/usr/bin/env bash
# Run the benchmark suite on an accelerator (when one is available) and record absolute throughput.
# Usage: bash benchmarks/gpu.sh [OUTDIR]   -- writes OUTDIR/*.md and a device summary.
set -euo pipefail
out=${1:-benchmarks/results/gpu}
mkdir -p "$out"
pip install -q -U "jax[cuda12]"
python -c "import jax; print(jax.devices())" | tee "$out/devices.txt"
for b in bench_poisson bench_shuffle bench_calibrate bench_pufferfish; do
  python "benchmarks/$b.py" 2>&1 | tee "$out/$b.log"
done
cp benchmarks/results/*.md "$out/" 2>/dev/null || true
