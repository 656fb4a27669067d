#!/usr/bin/env bash
# Submit a chain of SLURM jobs that train one run, each resuming where the one before stopped.
#
#   bash scripts/slurm_chain.sh [-n JOBS] [-N NODES] [-g GPUS_PER_NODE] [-t TIME] [-p PARTITION]
#                               [-A ACCOUNT] [--dry-run] CONFIG [key=value ...]
#
# Run it from the repository root on a SLURM login node (the .venv on a file system the nodes
# share). It checks CONFIG and the overrides, writes one batch script into the run folder
# (train.save_folder, or runs/RUN_NAME for an object-store save_folder) under slurm/, and submits
# it JOBS times, each job depending on the one before with --dependency=afterany, so a job that
# hits its time limit or is preempted still lets the next one start. Every job runs
#   srun --ntasks-per-node=1 .venv/bin/python -m stoicheia.launch -n GPUS --world_size NODES*GPUS --node_rank ... \
#        recipes/train.py CONFIG key=value ...
# and resumes the run by autoresume. When the run is complete (complete.json) or has diverged
# (exit status 3 or a new diverged.json) or could not start (exit status 2: configuration or
# input error, e.g. missing shards), the job cancels the jobs of the chain after it. Exit status
# 143 (a trainer stopped by SIGTERM after saving the batch in progress) lets the chain go on.
# --dry-run prints the batch script and the sbatch commands and writes and submits nothing.
#
# Exit status: 0 submitted (or nothing to do), 2 usage or configuration error, 1 sbatch failed.
set -euo pipefail

usage() {
  sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  cat <<'EOF'
Options:
  -n JOBS            jobs in the chain (default 4)
  -N NODES           nodes per job (default 1)
  -g GPUS_PER_NODE   GPUs per node, one training process each (default 8)
  -t TIME            wall time per job, SLURM format (default 24:00:00)
  -p PARTITION       SLURM partition (default: the cluster's)
  -A ACCOUNT         SLURM account (default: yours)
  --dry-run          print the batch script and sbatch commands; submit nothing
  -h, --help         this help
EOF
}

die() { echo "slurm_chain.sh: error: $*" >&2; exit 2; }

JOBS=4 NODES=1 GPUS=8 TIME=24:00:00 PARTITION="" ACCOUNT="" DRY_RUN=0
while (($#)); do
  case $1 in
    -n|-N|-g|-t|-p|-A)
      (($# >= 2)) || die "option $1 needs a value (see --help)"
      case $1 in
        -n) JOBS=$2 ;; -N) NODES=$2 ;; -g) GPUS=$2 ;; -t) TIME=$2 ;; -p) PARTITION=$2 ;; -A) ACCOUNT=$2 ;;
      esac
      shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
(($# >= 1)) || { usage >&2; die "missing CONFIG, e.g. bash scripts/slurm_chain.sh -N 2 yamls/stoicheia.yaml"; }
CONFIG=$1; shift
OVERRIDES=("$@")
for pair in "JOBS:$JOBS" "NODES:$NODES" "GPUS_PER_NODE:$GPUS"; do
  [[ ${pair#*:} =~ ^[1-9][0-9]*$ ]] || die "${pair%%:*} must be a positive whole number, got '${pair#*:}'"
done
for kv in ${OVERRIDES[@]+"${OVERRIDES[@]}"}; do
  [[ $kv == *=* ]] || die "override '$kv' must look like key=value, e.g. train.lr=1e-4"
done
[[ -f $CONFIG ]] || die "config $CONFIG not found (give a YAML file, e.g. yamls/stoicheia.yaml)"

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONFIG=$(cd "$(dirname "$CONFIG")" && pwd)/$(basename "$CONFIG")
CONFIG=${CONFIG#"$REPO"/}  # relative to the repository when inside it (the jobs run there)
cd "$REPO"
[[ -x .venv/bin/python && -x .venv/bin/composer ]] || die "no .venv in $REPO: run bash scripts/setup.sh first"

# The run's name and local run folder, from the same config code as the recipe (errors exit 2).
RUN_INFO=$(.venv/bin/python -c '
import sys
from stoicheia.config import ConfigError, load_config
try:
    cfg = load_config(sys.argv[1], sys.argv[2:])
    from stoicheia.train.registry import check_plugins
    check_plugins(cfg)
except ConfigError as err:
    print(f"slurm_chain.sh: config error: {err}", file=sys.stderr)
    sys.exit(2)
from stoicheia.train import run_files
folder = run_files.local_run_folder(cfg.train.save_folder.format(run_name=cfg.run_name), cfg.run_name)
print(cfg.run_name)
print(folder.resolve())
' "$CONFIG" ${OVERRIDES[@]+"${OVERRIDES[@]}"}) || exit 2
RUN_NAME=$(sed -n 1p <<<"$RUN_INFO")
RUN_FOLDER=$(sed -n 2p <<<"$RUN_INFO")

if [[ -f $RUN_FOLDER/complete.json ]]; then
  echo "run '$RUN_NAME' is already complete ($RUN_FOLDER/complete.json); nothing to submit"
  echo "  .venv/bin/python -m stoicheia status $RUN_FOLDER"
  exit 0
fi

LOGDIR=$RUN_FOLDER/slurm
[[ $LOGDIR != *[[:space:]]* ]] || die "the run folder $RUN_FOLDER has a space in its path, which #SBATCH --output cannot take; choose another train.save_folder"
STAMP=$(date +%Y%m%d-%H%M%S)
SCRIPT=$LOGDIR/chain-$STAMP.sbatch
JOBS_FILE=$LOGDIR/chain-$STAMP.jobs
JOB_NAME=stoicheia-${RUN_NAME//[^A-Za-z0-9._-]/_}
TRAIN_ARGS=$(printf ' %q' recipes/train.py "$CONFIG" ${OVERRIDES[@]+"${OVERRIDES[@]}"})
TRAIN_ARGS=${TRAIN_ARGS# }

job_script() {
  cat <<EOF
#!/usr/bin/env bash
# One job of a chain written by scripts/slurm_chain.sh on $(date '+%Y-%m-%d %H:%M:%S') for run '$RUN_NAME'.
#SBATCH --job-name=$JOB_NAME
#SBATCH --nodes=$NODES
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=$GPUS
#SBATCH --exclusive
#SBATCH --time=$TIME
#SBATCH --signal=B:TERM@120
#SBATCH --output=$LOGDIR/job-%j.out
EOF
  [[ -n $PARTITION ]] && echo "#SBATCH --partition=$PARTITION"
  [[ -n $ACCOUNT ]] && echo "#SBATCH --account=$ACCOUNT"
  cat <<EOF

REPO=$(printf %q "$REPO")
RUN_FOLDER=$(printf %q "$RUN_FOLDER")
LOGDIR=$(printf %q "$LOGDIR")
JOBS_FILE=$(printf %q "$JOBS_FILE")
GPUS_PER_NODE=$GPUS
MASTER_PORT=\${STOICHEIA_MASTER_PORT:-29500}
TRAIN=($TRAIN_ARGS)
EOF
  cat <<'EOF'

cd "$REPO" || exit 2
export PYTHONUNBUFFERED=1
say() { echo "[chain] $(date '+%F %T') job $SLURM_JOB_ID: $*"; }

# Cancel the jobs of the chain after this one (they are listed in order in JOBS_FILE).
cancel_rest() {
  local id seen=0 rest=()
  [[ -f $JOBS_FILE ]] || { say "no $JOBS_FILE: cancel the later jobs of the chain by hand"; return; }
  while read -r id; do
    ((seen)) && rest+=("$id")
    [[ $id == "$SLURM_JOB_ID" ]] && seen=1
  done <"$JOBS_FILE"
  if ((${#rest[@]})); then
    say "$1: cancelling the rest of the chain: ${rest[*]}"
    scancel "${rest[@]}" || say "scancel failed: cancel ${rest[*]} by hand"
  fi
}

if [[ -f $RUN_FOLDER/complete.json ]]; then
  say "the run is already complete ($RUN_FOLDER/complete.json); nothing to do"
  cancel_rest "run complete"
  exit 0
fi

# SLURM sends SIGTERM to this shell 120 s before the time limit (and on preemption or scancel).
# It is passed on to every process of the training step (scancel --signal without --batch
# signals the steps only): each trainer saves a checkpoint at the end of the batch in progress
# and exits with status 143, so the next job loses at most one batch. The launchers are
# stoicheia.launch (Composer's launcher that passes the signal on to its trainers and waits for
# them): Composer's own launcher would turn the SIGTERM into a traceback and SIGKILL its trainers
# 30 s later, possibly mid-save. trap '' keeps the shell from dying before exec.
on_term() {
  say "SIGTERM: time limit near, or preempted/cancelled; the trainers save the batch in progress and stop; the next job of the chain resumes from that checkpoint"
  scancel --signal=TERM "$SLURM_JOB_ID" || say "scancel --signal=TERM failed: the trainers will be stopped by SLURM without a final checkpoint"
}
trap on_term TERM

START_MARK=$(mktemp "$LOGDIR/.start-$SLURM_JOB_ID.XXXXXX")
MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
say "training on $SLURM_NNODES node(s) x $GPUS_PER_NODE GPU(s), master $MASTER_ADDR:$MASTER_PORT: ${TRAIN[*]}"
# One launcher per node; it starts one process per GPU. $SLURM_NODEID is read on each node.
srun --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c \
  'trap "" TERM; exec .venv/bin/python -m stoicheia.launch -n "$1" --world_size "$((SLURM_NNODES * $1))" --node_rank "$SLURM_NODEID" --master_addr "$2" --master_port "$3" "${@:4}"' \
  composer-launch "$GPUS_PER_NODE" "$MASTER_ADDR" "$MASTER_PORT" "${TRAIN[@]}" &
SRUN_PID=$!
while :; do
  wait "$SRUN_PID"; rc=$?
  kill -0 "$SRUN_PID" 2>/dev/null || break  # wait returned for the trap: srun still runs
done

# Exit status 3 is the recipe's "diverged"; across nodes and launchers another status may hide
# it, so a diverged.json written during this job counts too.
if ((rc == 3)) || [[ $RUN_FOLDER/diverged.json -nt $START_MARK ]]; then
  say "the run diverged (exit status $rc; $RUN_FOLDER/diverged.json)"
  cancel_rest "diverged"
  rm -f "$START_MARK"
  exit 3
fi
rm -f "$START_MARK"
if [[ -f $RUN_FOLDER/complete.json ]]; then
  say "the run is complete (exit status $rc)"
  cancel_rest "run complete"
elif ((rc == 143)); then
  # the recipe's "stopped by SIGTERM after saving the batch in progress" (preemption, time limit)
  say "training was stopped by SIGTERM and saved a checkpoint of the batch in progress (exit status 143); the next job of the chain (if any) resumes the run"
elif ((rc == 2)); then
  # the recipe's "configuration or input error" (missing shards, bad key...): every later job
  # would fail the same way
  say "the run could not start (exit status 2: configuration or input error, see above)"
  cancel_rest "configuration or input error"
else
  say "training stopped with exit status $rc; the next job of the chain (if any) resumes the run"
fi
exit "$rc"
EOF
}

sbatch_cmd() {  # sets CMD: the sbatch command of a job after job $1 ("" for the first)
  CMD=(sbatch --parsable)
  if [[ -n $1 ]]; then CMD+=("--dependency=afterany:$1"); fi
  CMD+=("$SCRIPT")
}

if ((DRY_RUN)); then
  echo "# dry run: nothing written, nothing submitted"
  echo "# run '$RUN_NAME', run folder $RUN_FOLDER"
  echo "# --- job script (would be written to $SCRIPT) ---"
  job_script
  echo "# --- end of job script ---"
  echo "# sbatch commands (each job id goes into $JOBS_FILE as it is submitted):"
  prev=""
  for ((i = 1; i <= JOBS; i++)); do
    sbatch_cmd "$prev"
    echo "$(printf '%q ' "${CMD[@]}")   # -> JOB$i"
    prev="JOB$i"
  done
  exit 0
fi

command -v sbatch >/dev/null || die "sbatch not found: run this on a SLURM login node (or try --dry-run)"
mkdir -p "$LOGDIR"
job_script >"$SCRIPT"
: >"$JOBS_FILE"
echo "run '$RUN_NAME': job script $SCRIPT, logs $LOGDIR/job-JOBID.out"
prev=""
for ((i = 1; i <= JOBS; i++)); do
  sbatch_cmd "$prev"
  if ! out=$("${CMD[@]}"); then
    echo "slurm_chain.sh: sbatch failed for job $i of $JOBS; submitted so far: $(tr '\n' ' ' <"$JOBS_FILE")" >&2
    exit 1
  fi
  id=${out%%;*}  # --parsable prints JOBID or JOBID;CLUSTER
  echo "$id" >>"$JOBS_FILE"
  echo "job $i/$JOBS: $id${prev:+ (after $prev)}"
  prev=$id
done
echo "watch it with: .venv/bin/python -m stoicheia status $RUN_FOLDER"
