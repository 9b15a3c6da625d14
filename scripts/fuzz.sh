#!/usr/bin/env bash
# Long coverage-guided fuzz run of every harness in fuzz/ (atheris; docs/reliability.md).
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Default: 300 s per target, every target. Corpora persist in build/fuzz/corpus/<target>/
# (so later runs start where earlier ones stopped); crashes are written to
# build/fuzz/crash-*. Known, already reported findings are counted, not stopped at;
# FUZZ_STRICT=1 stops at those too. Exit status: non-zero when any target crashed.
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-300}
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(cards classify batch enumerate variant replay grpc)
fi
PY=.venv/bin/python
"$PY" -c "import atheris" 2>/dev/null || echo "atheris is not installed: using the hypothesis fallback" >&2
mkdir -p build/fuzz
status=0
for t in "${TARGETS[@]}"; do
  corpus=build/fuzz/corpus/$t
  mkdir -p "$corpus"
  log=build/fuzz/$t.log
  echo "== fuzz_$t: ${SECONDS_PER_TARGET}s, corpus $corpus"
  # -timeout: one input running longer than 30 s is a hang; -rss_limit_mb: a leak or an
  # unbounded allocation is a finding too.
  (cd fuzz && "../$PY" "fuzz_$t.py" "../$corpus" -max_total_time="$SECONDS_PER_TARGET" \
      -timeout=30 -rss_limit_mb=2048 -artifact_prefix=../build/fuzz/ -print_final_stats=1) \
      >"$log" 2>&1
  rc=$?
  runs=$(grep -Eo '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || true)
  [ -z "$runs" ] && runs=$(grep -Eo '^Done [0-9]+' "$log" | grep -Eo '[0-9]+' || echo "?")
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  files=$(find "$corpus" -type f | wc -l)
  known=$(grep -o 'known findings hit: .*' "$log" || true)
  echo "   rc=$rc runs=$runs $cov corpus=$files files ${known}"
  if [ "$rc" -ne 0 ]; then
    status=1
    grep -v '^#' "$log" | tail -40
  fi
done
exit $status
