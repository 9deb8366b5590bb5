#!/usr/bin/env bash
# Praxis in two minutes: a user-mode praxisd in a scratch home, an allowed, a
# held and a stopped command, an approval, the kill switch, the audit chain.
#
#   bash scripts/demo.sh [BIN_DIR]     (default target/release; `make demo`)
#
# Needs no stdin and no network. Every process it starts is ended on exit.
set -euo pipefail

bin=$(cd "${1:-target/release}" && pwd)
for b in praxis praxis-run praxisd; do
  [[ -x $bin/$b ]] || { echo "demo: missing $bin/$b; run cargo build --release first" >&2; exit 1; }
done
command -v git >/dev/null || { echo "demo: needs git" >&2; exit 1; }

source "$(dirname "${BASH_SOURCE[0]}")/scratch-daemon.sh"
make_scratch demo

bold=$'\e[1m'; dim=$'\e[2m'; off=$'\e[0m'
[[ -t 1 ]] || { bold=""; dim=""; off=""; }
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$off"; }
note() { printf '%s   %s%s\n' "$dim" "$*" "$off"; }

# The command as it would be typed: words that need it are single-quoted.
shown() {
  local out="" w
  for w in "$@"; do
    if [[ $w =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
      out+=" $w"
    else
      out+=" '${w//\'/\'\\\'\'}'"
    fi
  done
  printf '$%s\n' "$out"
}

# expect CODE CMD...: runs CMD with no stdin, shows its stdout and stderr and
# its exit status, and stops the demo if the status is not CODE.
expect() {
  local want=$1 rc=0
  shift
  shown "$@"
  "$@" </dev/null >"$scratch/out" 2>"$scratch/err" || rc=$?
  sed 's/^/   /' "$scratch/out"
  sed 's/^/   stderr: /' "$scratch/err"
  printf '   exit %s\n' "$rc"
  if [[ $rc != "$want" ]]; then
    echo "demo: expected exit $want from: $*" >&2
    exit 1
  fi
}

# Pids of processes whose command line is exactly the arguments.
pids_of() {
  local want p line
  want=$(printf '%s\0' "$@" | od -An -c | tr -s ' ')
  for p in /proc/[0-9]*; do
    line=$(od -An -c "$p/cmdline" 2>/dev/null | tr -s ' ') || continue
    [[ -n $line && $line == "$want" ]] && echo "${p#/proc/}"
  done
  return 0
}

# A private home: the daemon and the CLI find each other through these.
mkdir -p "$scratch"/{home,run,state,config,ws}
chmod 700 "$scratch/run"
export HOME=$scratch/home XDG_RUNTIME_DIR=$scratch/run \
       XDG_STATE_HOME=$scratch/state XDG_CONFIG_HOME=$scratch/config
export PATH=$bin:$PATH PRAXIS_SESSION=demo
ws=$scratch/ws

step "Start praxisd in user mode (scratch home, nothing installed)"
start_praxisd "$bin/praxisd" || { echo "demo: praxisd did not start" >&2; exit 1; }
expect 0 praxis status

cd "$ws"
git init --quiet
echo "first line" >notes.txt
git add notes.txt
git -c user.name=demo -c user.email=demo@example.invalid commit --quiet -m "first"

step "1. An allowed command: read-only, runs sandboxed and audited"
expect 0 praxis-run -- git log --oneline
note "praxis-run exits with the command's own status."

step "2. A held command: discarding uncommitted work needs a human"
echo "an edit the agent should not throw away" >>notes.txt
expect 125 praxis-run -- git reset --hard
note "exit 125 = HOLD. The JSON line on stderr is the audit signal the agent reads;"
note "nothing ran: notes.txt still has the edit:"
sed 's/^/   | /' notes.txt

step "3. A stopped command: no approval can let it run"
expect 126 praxis-run -c 'rm -rf /'
note "exit 126 = STOP, the same JSON signal, and no approve command offered."

step "4. The operator approves the held request, once"
expect 0 praxis pending
id=$(praxis pending --json | sed -n 's/.*"request_id":"\([^"]*\)".*/\1/p' | head -n 1)
[[ -n $id ]] || { echo "demo: no pending request" >&2; exit 1; }
expect 0 praxis approve "$id" --note "demo: discard is fine"
expect 0 praxis-run -- git reset --hard
note "the same command now ran once; notes.txt is back to the commit:"
sed 's/^/   | /' notes.txt
expect 125 praxis-run -- git reset --hard
note "the approval was one-shot: a second run is held again."

step "5. The edit it threw away comes back: praxis undo"
note "before the approved reset ran, praxisd saved what it would discard."
expect 0 praxis undo --list
done_id=$(praxis undo --list --json | sed -n 's/.*"request_id":"\([^"]*\)".*/\1/p' | head -n 1)
[[ -n $done_id ]] || { echo "demo: no snapshot to undo" >&2; exit 1; }
expect 0 praxis undo "$done_id"
note "notes.txt has the edit again:"
sed 's/^/   | /' notes.txt

step "6. The kill switch: running work dies, new work is refused"
praxis-run -c 'sleep 4242' </dev/null >/dev/null 2>"$scratch/sleeper.err" &
sleeper_pid=$!
owned_pids+=("$sleeper_pid")
for _ in $(seq 100); do
  [[ -n $(pids_of sleep 4242) ]] && break
  sleep 0.05
done
[[ -n $(pids_of sleep 4242) ]] || { echo "demo: the sleep did not start" >&2; exit 1; }
note "a sandboxed 'sleep 4242' is running as pid $(pids_of sleep 4242)"
expect 0 praxis kill --reason "demo incident"
rc=0
wait "$sleeper_pid" || rc=$?
note "the agent's praxis-run for the sleep ended with exit $rc: $(tail -n 1 "$scratch/sleeper.err")"
[[ -z $(pids_of sleep 4242) ]] || { echo "demo: the sleep survived the kill switch" >&2; exit 1; }
note "no 'sleep 4242' is left on the host."
expect 126 praxis-run -- git status
note "while engaged every request is refused (STOP, exit 126)."
expect 0 praxis kill --release
expect 0 praxis-run -- echo "working again"

step "7. The audit trail: every decision, denials included, hash-chained"
expect 0 praxis audit tail -n 40
expect 0 praxis audit verify

step "What happened"
cat <<'EOF'
   - `git log` was ALLOWED (read-only tier) and ran inside the sandbox: exit 0.
   - `git reset --hard` was HELD (it destroys uncommitted work): exit 125, a JSON
     audit signal on stderr, nothing executed.
   - `rm -rf /` was STOPPED by a catastrophic-pattern rule: exit 126, not approvable.
   - The operator approved the held request; the same command then ran exactly
     once, and a second attempt was held again.
   - What the approved command discarded had been saved first: `praxis undo`
     put it back.
   - The kill switch killed the running sleep and refused new work until released.
   - Every one of these decisions is in the audit log, and its hash chain verifies.
EOF
