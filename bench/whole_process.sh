#!/usr/bin/env bash
# Whole-process benchmark of Praxis against the programs it stands in for and
# against peer hooks, in one run. Writes bench/results/<date>.md and refreshes
# the "## Benchmarks" section at the end of README.md.
#
#   bash bench/whole_process.sh [BIN_DIR]      (default target/release)
#
# Environment:
#   ROUNDS=N              paired rounds per comparison (default 200); commands
#                         spaced apart use fewer (50 at 100 ms, 30 at 1 s,
#                         12 at 5 s) so the run stays within about 10 minutes
#   PRAXIS_BENCH_TOOLS=D  where peers are installed (default ~/.cache/praxis-bench)
#   SKIP_PEERS=1          do not install or run dcg / cc-safety-net
#   SKIP_CRITERION=1      do not run the criterion audit-append bench
#   NO_README=1           leave README.md alone
#
# The daemon runs in user mode in a scratch home (temporary XDG dirs) started
# here and stopped at the end, whatever happens.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$(cd "${1:-$root/target/release}" && pwd)
rounds=${ROUNDS:-200}
tools=${PRAXIS_BENCH_TOOLS:-$HOME/.cache/praxis-bench}
cargo=${CARGO:-cargo}

# Peer versions, pinned.
DCG_CRATE=destructive_command_guard
DCG_VERSION=0.16.0
CCSN_PACKAGE=cc-safety-net
CCSN_VERSION=2.4.5

say() { printf 'bench: %s\n' "$*" >&2; }

for b in praxis praxis-run praxisd; do
  [[ -x $bin/$b ]] || { say "missing $bin/$b (run: cargo build --release)"; exit 1; }
done

# --- peers (installed with the real HOME, before the scratch one) ---------
dcg=""
ccsn=""
install_dcg() {
  local dir=$tools/dcg-$DCG_VERSION
  if [[ -x $dir/bin/dcg ]]; then dcg=$dir/bin/dcg; return; fi
  command -v "$cargo" >/dev/null || { say "dcg skipped: no cargo"; return; }
  say "installing $DCG_CRATE $DCG_VERSION (dcg) into $dir"
  # The crate's newest dependencies may want a newer rustc than ours; the
  # locked set first, then a fresh resolution that ignores rust-version.
  if "$cargo" install --quiet --root "$dir" "$DCG_CRATE" --version "$DCG_VERSION" --locked >&2 ||
     "$cargo" install --quiet --root "$dir" "$DCG_CRATE" --version "$DCG_VERSION" --ignore-rust-version >&2; then
    dcg=$dir/bin/dcg
  else
    say "dcg skipped: $DCG_CRATE $DCG_VERSION did not install"
  fi
}
install_ccsn() {
  local dir=$tools/ccsn-$CCSN_VERSION
  local exe=$dir/node_modules/.bin/cc-safety-net
  if [[ -x $exe ]]; then ccsn=$exe; return; fi
  command -v npm >/dev/null || { say "cc-safety-net skipped: no npm"; return; }
  say "installing $CCSN_PACKAGE@$CCSN_VERSION into $dir"
  if npm install --silent --no-audit --no-fund --prefix "$dir" "$CCSN_PACKAGE@$CCSN_VERSION" >&2; then
    ccsn=$exe
  else
    say "cc-safety-net skipped: npm install failed"
  fi
}
if [[ -z ${SKIP_PEERS:-} ]]; then
  mkdir -p "$tools"
  install_dcg
  install_ccsn
fi

# --- in-process audit throughput (criterion) ------------------------------
audit_eps=""
audit_summary=""
if [[ -z ${SKIP_CRITERION:-} ]]; then
  say "criterion: audit_append/normal_8_appenders"
  if "$cargo" bench --quiet -p praxis-bench --bench audit -- --warm-up-time 1 \
       'audit_append/normal_8_appenders$' | tee "${TMPDIR:-/tmp}/praxis-audit-bench.$$" >&2; then
    # One line per appender count, printed by the bench after criterion's.
    audit_summary=$(sed -n 's/^audit append summary: /- /p' "${TMPDIR:-/tmp}/praxis-audit-bench.$$")
    rm -f "${TMPDIR:-/tmp}/praxis-audit-bench.$$"
    est=${CARGO_TARGET_DIR:-$root/target}/criterion/audit_append/normal_8_appenders/new/estimates.json
    # Mean time per iteration (ns); each iteration appends a burst of 800.
    ns=$(sed -n 's/^{"mean":{"confidence_interval":{[^}]*},"point_estimate":\([0-9.eE+-]*\).*/\1/p' "$est")
    [[ -n $ns ]] && audit_eps=$(awk -v ns="$ns" 'BEGIN { printf "%.0f", 800 / (ns / 1e9) }')
  else
    say "criterion audit bench failed; audit store events/s not measured"
  fi
fi

# The harness binary is built beside the benchmarks (std only).
say "building the harness"
(cd "$root" && "$cargo" build --quiet --release -p praxis-bench --bin whole_process)
harness=${CARGO_TARGET_DIR:-$root/target}/release/whole_process
rustc_version=$(rustc --version 2>/dev/null || echo unknown)

# --- scratch home and the daemon ------------------------------------------
source "$root/scripts/scratch-daemon.sh"
make_scratch bench
mkdir -p "$scratch"/{home,run,state,config,ws}
chmod 700 "$scratch/run"
export HOME=$scratch/home XDG_RUNTIME_DIR=$scratch/run \
       XDG_STATE_HOME=$scratch/state XDG_CONFIG_HOME=$scratch/config
git -C "$scratch/ws" init --quiet
git -C "$scratch/ws" -c user.name=bench -c user.email=bench@example.invalid \
  commit --quiet --allow-empty -m init

start_praxisd "$bin/praxisd" || { say "praxisd did not start"; exit 1; }


args=(--bin-dir "$bin" --workspace "$scratch/ws" --state-dir "$XDG_STATE_HOME/praxis" --rounds "$rounds")
[[ -n $dcg ]] && args+=(--dcg "$dcg")
[[ -n $ccsn ]] && args+=(--ccsn "$ccsn")
[[ -n $audit_eps ]] && args+=(--audit-bench-eps "$audit_eps")
say "measuring ($rounds paired rounds per comparison)"
table=$(cd "$scratch/ws" && "$harness" "${args[@]}")

# --- machine facts and the report -----------------------------------------
self_test=$("$bin/praxis" status --json | sed -n 's/.*"self_test":"\([^"]*\)".*/\1/p')
# landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION): syscall
# 444 on every architecture that has it.
landlock=$(python3 -c 'import ctypes; print(ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1))' 2>/dev/null || echo unknown)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
# A dynamically linked praxis-run (plain `cargo build --release`) pays the
# loader on every hook; `make release` links it statically at a fixed
# address. Results of these are not comparable, so the report says which
# one ran.
if ! command -v readelf >/dev/null; then
  linkage=unknown
elif readelf -l "$bin/praxis-run" | grep -q 'program interpreter'; then
  linkage=dynamic
elif readelf -h "$bin/praxis-run" | grep -q 'Type:.*EXEC'; then
  linkage="static, fixed address"
else
  linkage="static, position-independent"
fi
date=$(date -u +%F)
mkdir -p "$root/bench/results"
out=$root/bench/results/$date.md
{
  echo "# Whole-process benchmark, $date"
  echo
  echo "| machine | |"
  echo "|---|---|"
  echo "| kernel | $(uname -sr) |"
  echo "| CPU | ${cpu:-unknown} |"
  echo "| cores | $(nproc) |"
  echo "| Landlock ABI | $landlock |"
  echo "| sandbox self-test | ${self_test:-unknown} |"
  echo "| rustc | $rustc_version |"
  echo "| praxis | $("$bin/praxis" --version) |"
  echo "| praxis-run linking | $linkage |"
  echo
  echo "$table"
  if [[ -n $audit_summary ]]; then
    echo
    echo "### Audit store appends (criterion bench, same run)"
    echo
    echo "$audit_summary"
  fi
} >"$out"
say "wrote $out"

if [[ -z ${NO_README:-} ]] && grep -q '^## Benchmarks$' "$root/README.md"; then
  # Replace the section's body, up to the next "## " heading or the end.
  {
    echo "\`make bench-process\` ($(basename "$out"), $(nproc) cores, $(uname -r)); full report in \`bench/results/\`; where a goal is missed, \`bench/results/*-profile.md\` says where the time goes."
    echo
    # The spacing details stay in the report; the 1 s row is in the table.
    printf '%s\n' "$table" | awk '/^### Commands spaced apart/ { skip = 1; next } /^### / { skip = 0 } !skip'
    echo
  } >"$scratch/section.md"
  awk -v section="$scratch/section.md" '
    /^## / { if (inside) { inside = 0 } }
    /^## Benchmarks$/ { print; print ""; while ((getline line < section) > 0) print line; inside = 1; next }
    !inside { print }
  ' "$root/README.md" >"$scratch/README.md"
  cp "$scratch/README.md" "$root/README.md"
  say "refreshed the Benchmarks section of README.md"
fi
cat "$out"
