# A one-node Slurm cluster on this machine for a test, sourced by the test's script after it set
# MXTB: munged, slurmctld and slurmd from a generated slurm.conf in a temporary folder $T (no
# cgroups, linuxproc process tracking, no accounting); SLURM_CONF exported, fail() defined, the
# daemons stopped and $T removed on every exit. Exits 77 (skipped) only when Slurm, munge or jq is
# not installed.
export PATH="$PATH:/usr/sbin:/sbin"
for b in munged slurmctld slurmd sbatch squeue scontrol scancel sinfo jq; do
  if ! command -v "$b" >/dev/null 2>&1; then
    echo "SKIP: $b is not installed (Debian: slurm-wlm, munge, jq; ./mxtb installs them)"
    exit 77
  fi
done

T=$(mktemp -d -t mxtb-slurm.XXXXXX)
# munged insists that every folder above its socket is searchable by all.
chmod 755 "$T"
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/log"
chmod 755 "$T/munge"

fail() {
  echo "FAIL: $*"
  exit 1
}

cleanup() {
  local rc=$?
  for d in slurmd slurmctld munge/munged; do
    if [ -f "$T/$d.pid" ]; then
      local pid
      pid=$(cat "$T/$d.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  if [ "$rc" -ne 0 ]; then
    for f in "$T"/log/slurmctld.log "$T"/log/slurmd.log "$T"/munge/munged.log; do
      [ -f "$f" ] && { echo "--- last lines of $(basename "$f")"; tail -n 15 "$f"; }
    done
  fi
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Two free TCP ports for the controller and the node daemon.
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  fail "no free TCP port found"
}
CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port)
[ "$CTLD_PORT" != "$SLURMD_PORT" ] || SLURMD_PORT=$((CTLD_PORT + 1))

dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$T/munge/munge.key"
munged --key-file="$T/munge/munge.key" --socket="$T/munge/munge.socket" --pid-file="$T/munge/munged.pid" \
  --log-file="$T/munge/munged.log" --seed-file="$T/munge/munged.seed" --force ||
  fail "munged did not start"

HOST=$(hostname -s)
CPUS=$(nproc)
export SLURM_CONF="$T/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=mxtbtest
SlurmctldHost=$HOST
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/munge.socket
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
KillWait=5
NodeName=$HOST CPUs=$CPUS State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start"
for _ in $(seq 300); do
  [ "$(sinfo -h -o %T 2>/dev/null)" = "idle" ] && break
  sleep 0.1
done
[ "$(sinfo -h -o %T 2>/dev/null)" = "idle" ] || fail "the node did not come up idle: $(sinfo 2>&1)"
echo "cluster up: node $HOST ($CPUS CPUs), slurmctld port $CTLD_PORT, slurmd port $SLURMD_PORT"
