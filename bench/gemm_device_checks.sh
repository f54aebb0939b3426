# Sourced by the GEMM device scripts (gemm_mma_device.sh,
# gemm_epilogue_device.sh): the Python-layer GPU checks of one library.
# Needs PYENV (env ... SAMEBITS_LIBRARY=... PYTHONPATH=...), OUT (a folder)
# and the array `sum` (summary lines, appended to).
# FULL=1: every CUDA test of the Python layer and `samebits verify`, not only
# the GEMM's; then bench_dense.py's GEMM checks (every tile entry bitwise
# equal to the default at every M bucket).
gemm_python_checks() {
  if [ -n "${FULL:-}" ]; then
    "${PYENV[@]}" timeout 240 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider > "$OUT/pytest_cuda.log" 2>&1
    sum+=("pytest test_cuda rc=$? $(tail -1 "$OUT/pytest_cuda.log")")
    "${PYENV[@]}" timeout 90 python3 -m samebits.cli verify --device cuda --json "$OUT/verify.json" > "$OUT/verify.log" 2>&1
    sum+=("verify rc=$? $(tail -1 "$OUT/verify.log")")
  else
    "${PYENV[@]}" timeout 200 python3 -m pytest tests/python/test_cuda.py -q -p no:cacheprovider -k gemm > "$OUT/pytest_gemm.log" 2>&1
    sum+=("pytest test_cuda -k gemm rc=$? $(tail -1 "$OUT/pytest_gemm.log")")
  fi
  "${PYENV[@]}" timeout 200 python3 bench/bench_dense.py --gemm-only --out "$OUT/dense_gemm.json" > "$OUT/dense_gemm.log" 2>&1
  sum+=("bench_dense --gemm-only rc=$? $(grep -E 'FAILS' "$OUT/dense_gemm.log" | tail -1)")
}
