#!/usr/bin/env bash
# The one prepared command for a lent GPU machine: the `cuda` tests, then
# benchmarks/gpu.py case by case, each under its own time limit, every log and JSON in OUTDIR.
# The cases merge their result rows into benchmarks/results/gpu.json of this checkout, which
# is copied to OUTDIR/results-gpu.json at the end; back on the dev machine:
#   cp OUTDIR/results-gpu.json benchmarks/results/gpu.json && python benchmarks/report.py
#
#   bash benchmarks/gpu_session.sh OUTDIR
#
# On a machine that has torch with CUDA but not the rest: put the missing wheels in .whl/
# (torch-struct, hydra-core, omegaconf, antlr4-python3-runtime, highspy) and they are installed
# into /tmp/site first; put the data as .gpudata/data.tar.xz (folders data/ = ALIGNERS_DATA,
# wordnet/ = WNSEARCHDIR) and it is unpacked into /tmp/gpud. Both folders are optional: a
# machine set up like CI needs neither. A case cut off by its limit keeps the rows it printed
# ("row: ..." lines in its log).
set -uo pipefail
OUTDIR=${1:?usage: bash benchmarks/gpu_session.sh OUTDIR}
mkdir -p "$OUTDIR"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
if compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
if [ -f .gpudata/data.tar.xz ]; then
  mkdir -p /tmp/gpud && tar xJf .gpudata/data.tar.xz -C /tmp/gpud || exit 1
  export ALIGNERS_DATA=/tmp/gpud/data WNSEARCHDIR=/tmp/gpud/wordnet
fi
nvidia-smi -L 2>&1 | head -2
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'

stage() {  # stage NAME SECONDS COMMAND...: run under `timeout`, log to OUTDIR/NAME.log
  local name=$1 limit=$2 start rc
  shift 2
  start=$(date +%s)
  echo "== $name (limit $limit s)"
  timeout "$limit" "$@" >"$OUTDIR/$name.log" 2>&1
  rc=$?
  tail -n 25 "$OUTDIR/$name.log"
  echo "== $name: exit $rc after $(( $(date +%s) - start )) s"
}

# limits (s) per stage, gpu.py's device flags (a dry run here: BENCH="--device cpu --quick"
# ALIGNERS_TEST_DEVICE=cpu), the stages to run (STAGES), extra flags of the word-aligner case
# (WORD_FLAGS, e.g. "--no-cpu-baseline --word-cells 1e6 1.6e7") and the CLI cases (MODEL_CASES);
# at most 8 files land in OUTDIR (what a lent machine returns)
CUDA_T=${CUDA_T:-80} LAT_T=${LAT_T:-70} WORD_T=${WORD_T:-150} MONO_T=${MONO_T:-130}
MODELS_T=${MODELS_T:-220}
STAGES=" ${STAGES:-tests lattices word mono models} "
read -r -a BENCH <<<"${BENCH:---device cuda}"
read -r -a WORD_FLAGS <<<"${WORD_FLAGS:-}"
# the CLI cases: gappy HSMM at 20k, then the whole `aligners align` at 200k and on the full
# 1.13M set (issue 26's GPU targets: <= 15 s and <= 60 s)
read -r -a MODEL_CASES <<<"${MODEL_CASES:-case_phrasal_hsmm case_align_200k case_align_full}"
want() { [[ $STAGES == *" $1 "* ]]; }
want tests && stage tests "$CUDA_T" "$PY" -m pytest -q -m cuda -p no:cacheprovider \
  tests/test_cuda.py tests/test_word_cuda.py
want lattices && stage lattices "$LAT_T" "$PY" benchmarks/gpu.py "${BENCH[@]}" --methods \
  --json "$OUTDIR/lattices.json" --cases case_linear_small case_semi_small case_linear_large \
  case_semi_large case_factored_hmm
want word && stage word "$WORD_T" "$PY" benchmarks/gpu.py "${BENCH[@]}" \
  --json "$OUTDIR/word.json" --cases case_word_aligner "${WORD_FLAGS[@]}"
want mono && stage mono "$MONO_T" "$PY" benchmarks/gpu.py "${BENCH[@]}" --cases case_mono_phrase_crf
want models && stage models "$MODELS_T" "$PY" benchmarks/gpu.py "${BENCH[@]}" \
  --cases "${MODEL_CASES[@]}"
cp benchmarks/results/gpu.json "$OUTDIR/results-gpu.json"
exit 0
