#!/usr/bin/env bash
# Long fuzz run of every harness in fuzz/ (docs/reliability.md).
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   FUZZ_ASAN=1 bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Default: 300 s per target, every target (cards classify batch enumerate variant replay
# grpc), coverage guided by atheris. Corpora persist in build/fuzz/corpus/<target>/ (so
# later runs start where earlier ones stopped); crashes are written to build/fuzz/crash-*.
# Known, already reported findings are counted, not stopped at; FUZZ_STRICT=1 stops at
# those too.
#
# FUZZ_ASAN=1: build a copy of the compiled core with AddressSanitizer (gcc) into
# build/asan/ and run the harnesses against it with libasan preloaded, so an out-of-bounds
# access or use-after-free in the C code aborts the run with a report. Atheris' bundled
# libFuzzer cannot share the process with a preloaded ASan runtime, so this mode uses the
# hypothesis engine (same harnesses, not coverage guided).
#
# Exit status: non-zero when any target crashed.
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-300}
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(cards classify batch enumerate variant replay grpc)
fi
PY=$PWD/.venv/bin/python
mkdir -p build/fuzz
ENV=()
if [ "${FUZZ_ASAN:-0}" = 1 ]; then
  echo "== building the ASan copy of the core in build/asan/src/shuangkou/core"
  rm -rf build/asan/src && mkdir -p build/asan/src/shuangkou
  cp -r core_ext build/asan/src/shuangkou/core
  rm -f build/asan/src/shuangkou/core/*.so build/asan/src/shuangkou/core/*.c
  (cd build/asan/src && "$PY" - <<'PYEOF'
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

# The copy shadows the installed shuangkou.core (a namespace portion earlier on sys.path);
# cimports find the .pxd files under the same names.
flags = ["-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"]
exts = [Extension(f"shuangkou.core.{p.stem}", [str(p)], extra_compile_args=flags,
                  extra_link_args=["-fsanitize=address"])
        for p in sorted(Path("shuangkou/core").glob("*.pyx"))]
setup(ext_modules=cythonize(exts, language_level=3, quiet=True, include_path=["."],
                            compiler_directives={"boundscheck": False, "wraparound": False,
                                                 "cdivision": True, "initializedcheck": False}),
      script_args=["build_ext", "--inplace", "-q"])
PYEOF
  ) >build/asan/build.log 2>&1 || { echo "ASan build failed: build/asan/build.log" >&2; exit 2; }
  ENV=(PYTHONPATH="$PWD/build/asan/src" LD_PRELOAD="$(gcc -print-file-name=libasan.so)"
       ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 FUZZ_ENGINE=hypothesis)
  (cd fuzz && env "${ENV[@]}" "$PY" -c \
      "import common, shuangkou.core._core as c; print('   core under test:', c.__file__)") || exit 2
elif ! "$PY" -c "import atheris" 2>/dev/null; then
  echo "atheris is not installed: using the hypothesis fallback" >&2
fi
status=0
for t in "${TARGETS[@]}"; do
  corpus=build/fuzz/corpus/$t
  mkdir -p "$corpus"
  log=build/fuzz/$t${FUZZ_ASAN:+-asan}.log
  echo "== fuzz_$t: ${SECONDS_PER_TARGET}s${FUZZ_ASAN:+ (ASan build)}, corpus $corpus"
  # -timeout: one input running longer than 30 s is a hang; -rss_limit_mb: a leak or an
  # unbounded allocation is a finding too.
  (cd fuzz && env "${ENV[@]}" "$PY" "fuzz_$t.py" "../$corpus" \
      -max_total_time="$SECONDS_PER_TARGET" -timeout=30 -rss_limit_mb=2048 \
      -artifact_prefix=../build/fuzz/ -print_final_stats=1) >"$log" 2>&1
  rc=$?
  runs=$(grep -Eo '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || true)
  [ -z "$runs" ] && runs=$(grep -Eo '^Done [0-9]+|fallback: [0-9]+' "$log" | grep -Eo '[0-9]+' || echo "?")
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  files=$(find "$corpus" -type f | wc -l)
  echo "   rc=$rc runs=$runs $cov corpus=$files files"
  if [ "$rc" -ne 0 ]; then
    status=1
    grep -v '^#' "$log" | tail -40
  fi
done
exit $status
