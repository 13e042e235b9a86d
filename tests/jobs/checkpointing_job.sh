#!/bin/bash
# A tenant's training job, for the offboarding tests:
#   checkpointing_job.sh SCRATCH [SECONDS|released [CHECKPOINT_SECONDS]]
#
# Writes SCRATCH/started-<job id> once it runs (and its TERM trap is set), then works (sleeps)
# for SECONDS (default 300) and exits 0. With `released` instead of SECONDS it works until
# SCRATCH/release-<job id> exists, then exits 0 the same way: a test that must see the job running
# for as long as its own steps take, however slow the machine, lets it finish once it has seen
# that (the job's --time still bounds it). On SIGTERM it takes CHECKPOINT_SECONDS (default 0) to
# write SCRATCH/checkpoint-<job id>, as a framework flushes its last checkpoint, and exits 143
# (128 + SIGTERM); a SIGKILL before then leaves no checkpoint. sacct shows a job stopped this way
# as FAILED with ExitCode 15:0 (Slurm 22.05 reports an exit status above 128 so), one that ran to
# the end as COMPLETED 0:0, and one cancelled with scancel as CANCELLED.
#
# Slurm signals the batch script itself only when asked: `scancel --full --signal=TERM JOBID`
# (without --full, a signal other than KILL goes to the job's steps, and this job has none).
set -u
scratch=$1
seconds=${2:-300}
checkpoint_seconds=${3:-0}
job=${SLURM_JOB_ID:?not run by Slurm}

checkpoint() {
  # Ignored from here on, also by the sleep below: a second SIGTERM (plain scancel sends one
  # before its SIGKILL) does not cut the checkpoint short; only SIGKILL does.
  trap '' TERM
  kill "$work" 2>/dev/null
  sleep "$checkpoint_seconds"
  # Written aside then renamed: whoever waits for the file never reads half of it.
  echo "job $job checkpointed at $(date +%s)" >"$scratch/.checkpoint-$job"
  mv "$scratch/.checkpoint-$job" "$scratch/checkpoint-$job"
  exit 143
}
trap checkpoint TERM

echo "job $job started at $(date +%s) as $(id -un)" >"$scratch/started-$job"
# In the background: bash runs a trap only between commands, and `wait` returns at once on a
# signal, where a sleep in the foreground would hold the trap until it ended.
if [ "$seconds" = released ]; then
  # Looked for, not waited on: the test runs as root and the job as its user, and a signal from
  # the test would end the job as CANCELLED or FAILED, not COMPLETED. The checkpoint's kill ends
  # the loop; its last sleep outlives it by at most 0.2 s.
  (until [ -e "$scratch/release-$job" ]; do sleep 0.2; done) &
else
  sleep "$seconds" &
fi
work=$!
wait "$work"
