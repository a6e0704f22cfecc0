#!/usr/bin/env bash
# The one prepared command for a lent GPU machine: the `cuda` tests, then the whole
# `aligners align --model hmm --device cuda` command at 200k pairs, on the full 1.13M set and
# on the full set x 4 (4.5M), then the Bayesian aligner on the machine's CPU (20k), each
# stage under its own time limit (together < 8 min), every log in OUTDIR. The cases merge
# their rows into benchmarks/results/gpu.json of this checkout, copied to
# OUTDIR/results-gpu.json at the end; back on the dev machine:
#   cp OUTDIR/results-gpu.json benchmarks/results/gpu.json && python benchmarks/report.py
#
#   bash benchmarks/gpu_session.sh --pack   # here: .gpudata/data.tar.xz (~40 MB; carry it)
#   bash benchmarks/gpu_session.sh OUTDIR   # there
#
# --pack puts the full Hansards training text (plain, xz inside the tar: 44 MB where the
# shipped .gz files take 70 MB, so it fits a device call's 64 MiB carry) and its test split
# into .gpudata/data.tar.xz; on the machine it is unpacked into /tmp/gpud (data/ =
# ALIGNERS_DATA), the two .gz files the loader reads are written there, and the 200k split
# is derived as the first 200,000 lines (the shipped 200k files are exactly that prefix).
# On a machine that has torch with CUDA but not the rest: put the missing wheels in .whl/
# (torch-struct, hydra-core, omegaconf, antlr4-python3-runtime, highspy) and they are
# installed into /tmp/site first. A dry run on a CPU box: BENCH="--device cpu --quick"
# ALIGNERS_TEST_DEVICE=cpu. A case cut off by its limit keeps the rows it printed ("row:
# ..." lines in its log); the summary line of each `aligners align` (in the row's note)
# holds its phases and peak host and GPU memory.
set -uo pipefail
OUTDIR=${1:?usage: bash benchmarks/gpu_session.sh OUTDIR | --pack}
cd "$(dirname "$0")/.."
if [ "$OUTDIR" = --pack ]; then
  PY=${PYTHON:-python3}
  D=$("$PY" -c 'from aligners.data.paths import data_root; print(data_root())') || exit 1
  H=hansards-enfr-naacl2003 T=$(mktemp -d)
  trap 'rm -rf "$T"' EXIT
  mkdir -p "$T/data/$H/train" .gpudata
  cp -r "$D/$H/test" "$D/$H/SOURCE.md" "$T/data/$H/" || exit 1  # (ALIGNERS_DATA: elsewhere)
  for s in e f; do
    zcat "$D/$H/train/hansards.train.$s.gz" >"$T/data/$H/train/hansards.train.$s" || exit 1
  done
  tar cf - -C "$T" data | xz -6 -T0 >.gpudata/data.tar.xz || exit 1
  ls -l .gpudata/data.tar.xz
  exit 0
fi
mkdir -p "$OUTDIR"
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
  tr=/tmp/gpud/data/hansards-enfr-naacl2003/train
  for s in e f; do  # the .gz files the loader reads, and the 200k prefix
    if [ -f "$tr/hansards.train.$s" ]; then
      { gzip -1 -c "$tr/hansards.train.$s" >"$tr/hansards.train.$s.gz" &&
        head -n 200000 "$tr/hansards.train.$s" | gzip -1 >"$tr/hansards.train200k.$s.gz"; } &
    fi
  done
  wait
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

# limits (s) per stage (the default stages sum to 470 s), gpu.py's device flags (BENCH), the
# stages to run (STAGES; also lattices, word, mono and phrasal: the older cases, not in the
# 8-minute run), extra flags of the word-aligner case (WORD_FLAGS); at most 8 files land in
# OUTDIR (what a lent machine returns)
CUDA_T=${CUDA_T:-60} A200_T=${A200_T:-40} FULL_T=${FULL_T:-90} X4_T=${X4_T:-210}
BAYES_T=${BAYES_T:-70} LAT_T=${LAT_T:-70} WORD_T=${WORD_T:-150} MONO_T=${MONO_T:-130}
PHR_T=${PHR_T:-90}
STAGES=" ${STAGES:-tests a200k full x4 bayes} "
read -r -a BENCH <<<"${BENCH:---device cuda}"
read -r -a WORD_FLAGS <<<"${WORD_FLAGS:-}"
want() { [[ $STAGES == *" $1 "* ]]; }
case_stage() { want "$1" && stage "$1" "$2" "$PY" benchmarks/gpu.py "${BENCH[@]}" --cases "$3"; }
want tests && stage tests "$CUDA_T" "$PY" -m pytest -q -m cuda -p no:cacheprovider \
  tests/test_cuda.py tests/test_word_cuda.py
case_stage a200k "$A200_T" case_align_200k
case_stage full "$FULL_T" case_align_full
case_stage x4 "$X4_T" case_align_4x
case_stage bayes "$BAYES_T" case_bayes_cpu
want lattices && stage lattices "$LAT_T" "$PY" benchmarks/gpu.py "${BENCH[@]}" --methods \
  --json "$OUTDIR/lattices.json" --cases case_linear_small case_semi_small case_linear_large \
  case_semi_large case_factored_hmm
want word && stage word "$WORD_T" "$PY" benchmarks/gpu.py "${BENCH[@]}" \
  --json "$OUTDIR/word.json" --cases case_word_aligner "${WORD_FLAGS[@]}"
case_stage mono "$MONO_T" case_mono_phrase_crf
case_stage phrasal "$PHR_T" case_phrasal_hsmm
cp benchmarks/results/gpu.json "$OUTDIR/results-gpu.json"
exit 0
