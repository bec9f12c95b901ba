# Sourced by .ci/run and .ci/sanitizers: `stage NAME` ends the running stage and starts
# the next; when the script exits, for whatever reason, it prints each stage's seconds and
# the total, so a failed run says where its time went too.
STAGE_NAME=""
STAGE_START=$SECONDS
STAGE_TIMES=()

stage() {
  if [ -n "$STAGE_NAME" ]; then
    STAGE_TIMES+=("$(printf '%6d s  %s' $((SECONDS - STAGE_START)) "$STAGE_NAME")")
  fi
  STAGE_NAME="$1"
  STAGE_START=$SECONDS
  if [ -n "$1" ]; then echo "== $1"; fi
}

stage_times() {
  stage ""
  echo "== $(basename "$0"): seconds per stage"
  printf '%s\n' "${STAGE_TIMES[@]}"
  printf '%6d s  total\n' "$SECONDS"
}
trap stage_times EXIT
