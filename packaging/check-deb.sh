#!/usr/bin/env bash
# Checks the layout of the Debian package built by `make deb`: unpacks it into
# a scratch root and looks for what an install needs. Then runs the packaged
# binaries against the packaged config in a scratch home (user mode), so a
# config that praxisd would reject fails here, not on a host.
#
#   bash packaging/check-deb.sh [PACKAGE.deb]   (default: newest target/debian/praxis_*.deb)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
deb=${1:-$(ls -t "$target"/debian/praxis_*.deb 2>/dev/null | head -n 1)}
[[ -n $deb && -f $deb ]] || { echo "check-deb: no package; run make deb" >&2; exit 1; }

source "$root/scripts/scratch-daemon.sh"
make_scratch deb

passed=0
failed=0
check() {
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $what" >&2
  fi
}

echo "check-deb: $(basename "$deb")"
dpkg-deb -I "$deb" >"$scratch/info"
dpkg-deb -x "$deb" "$scratch/root"
dpkg-deb -e "$deb" "$scratch/control"
r=$scratch/root

check "control names package praxis" grep -q '^ Package: praxis$' "$scratch/info"
check "control has a Depends line" grep -q '^ Depends: ' "$scratch/info"
for b in praxis praxis-run praxisd; do
  check "/usr/bin/$b is executable" test -x "$r/usr/bin/$b"
done
check "praxis --version runs" "$r/usr/bin/praxis" --version
check "praxisd --version runs" "$r/usr/bin/praxisd" --version

unit=""
for d in lib/systemd/system usr/lib/systemd/system; do
  [[ -f $r/$d/praxisd.service ]] && unit=$r/$d/praxisd.service
done
check "praxisd.service in /lib/systemd/system" test -n "$unit"
check "unit starts praxisd --system" grep -q '^ExecStart=/usr/bin/praxisd --system$' "${unit:-/dev/null}"
if command -v systemd-analyze >/dev/null && [[ -n $unit ]]; then
  # Verified where it would be installed, against the packaged binary.
  mkdir -p "$scratch/units"
  sed "s|/usr/bin/praxisd|$r/usr/bin/praxisd|" "$unit" >"$scratch/units/praxisd.service"
  check "systemd-analyze verify accepts the unit" \
    env SYSTEMD_UNIT_PATH="$scratch/units:" systemd-analyze verify --man=no "$scratch/units/praxisd.service"
fi

for f in praxis.toml policy.toml; do
  check "/etc/praxis/$f shipped" test -f "$r/etc/praxis/$f"
  check "/etc/praxis/$f is a conffile" grep -qx "/etc/praxis/$f" "$scratch/control/conffiles"
done
check "postinst creates the praxis group" grep -q 'groupadd --system praxis' "$scratch/control/postinst"
check "postinst creates /var/lib/praxis" grep -q '/var/lib/praxis' "$scratch/control/postinst"
check "postinst enables praxisd.service" grep -q 'deb-systemd-helper.*praxisd.service' "$scratch/control/postinst"
check "postrm purges /var/lib/praxis" grep -q 'rm -rf /var/lib/praxis' "$scratch/control/postrm"

man=$r/usr/share/man/man1
for page in praxis praxis-run praxisd praxis-audit praxis-policy praxis-run-hook praxisd-verify; do
  check "man page $page.1.gz" test -f "$man/$page.1.gz"
done
check "praxis-run(1) documents the exit statuses" sh -c "zcat '$man/praxis-run.1.gz' | grep -q '125 HOLD'"
check "no man page for the hidden generate subcommand" test ! -e "$man/praxis-generate.1.gz"
for b in praxis praxis-run praxisd; do
  check "bash completion for $b" test -s "$r/usr/share/bash-completion/completions/$b.bash"
  check "zsh completion for $b" test -s "$r/usr/share/zsh/vendor-completions/_$b"
  check "fish completion for $b" test -s "$r/usr/share/fish/vendor_completions.d/$b.fish"
done
check "docs in /usr/share/doc/praxis" test -f "$r/usr/share/doc/praxis/operator.md"
check "copyright file" test -f "$r/usr/share/doc/praxis/copyright"

plugin=$r/usr/share/praxis/openclaw
for f in openclaw.plugin.json package.json dist/index.js dist/praxis.js; do
  check "OpenClaw plugin file $f" test -s "$plugin/$f"
done
# The plugin runs from the package alone: it imports Node's own modules and
# its own files, nothing from a node_modules the package does not ship.
check "OpenClaw plugin imports nothing outside node: and itself" \
  sh -c "! grep -hoE 'from \"[^\"]+\"' '$plugin'/dist/*.js | grep -vE 'from \"(node:|\\./)'"

# The packaged config, used for real: the policy checks, and praxisd starts
# on it (user mode in a scratch home) serving more than HOLD.
check "packaged policy.toml passes praxis policy check" \
  "$r/usr/bin/praxis" policy check "$r/etc/praxis/policy.toml"
mkdir -p "$scratch"/{home,run,state,config/praxis}
chmod 700 "$scratch/run"
cp "$r/etc/praxis/praxis.toml" "$r/etc/praxis/policy.toml" "$scratch/config/praxis/"
export HOME=$scratch/home XDG_RUNTIME_DIR=$scratch/run XDG_STATE_HOME=$scratch/state \
       XDG_CONFIG_HOME=$scratch/config PRAXIS_SYSTEM=0
start_praxisd "$r/usr/bin/praxisd" || true
check "packaged praxisd starts on the packaged config" test -S "$scratch/run/praxis/praxisd.sock"
"$r/usr/bin/praxis" status >"$scratch/status" 2>&1 || true
check "the packaged policy loads (not serving only HOLD)" sh -c "grep -q 'policy revision' '$scratch/status' && ! grep -q 'SERVING ONLY HOLD' '$scratch/status'"
check "packaged praxis-run runs a command through it" sh -c "cd '$scratch' && '$r/usr/bin/praxis-run' -- true </dev/null"
# `praxis install openclaw` finds the packaged plugin beside the binaries.
check "praxis install openclaw finds the packaged plugin" \
  env OPENCLAW_CONFIG_PATH="$scratch/openclaw.json" "$r/usr/bin/praxis" install openclaw
check "the OpenClaw config loads the packaged plugin" grep -q "$plugin" "$scratch/openclaw.json"

echo "check-deb: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
