# Sourced by the demo, the whole-process benchmark and the package check: a
# scratch dir removed on exit, with every process started into it ended first,
# and a user-mode praxisd started in the scratch home.

owned_pids=()

# make_scratch NAME: sets $scratch to a fresh dir, removed when the script exits.
make_scratch() {
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/praxis-$1.XXXXXX")
  trap end_scratch EXIT
}

end_scratch() {
  local pid
  for pid in "${owned_pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$scratch"
}

# start_praxisd PRAXISD: starts it in user mode (XDG_RUNTIME_DIR set by the
# caller) and waits for its socket. Non-zero, with its log on stderr, when
# it does not come up.
start_praxisd() {
  PRAXIS_LOG=warn "$1" --user 2>"$scratch/praxisd.log" &
  daemon_pid=$!
  owned_pids+=("$daemon_pid")
  for _ in $(seq 200); do
    [[ -S $XDG_RUNTIME_DIR/praxis/praxisd.sock ]] && return 0
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.05
  done
  cat "$scratch/praxisd.log" >&2
  return 1
}
