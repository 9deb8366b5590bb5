# Praxis: build, test, lint, bench, demo.
CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: build release install test lint fmt bench demo clean deb deb-check bench-process openclaw-plugin postgres bench-fleet browser

build:
	$(CARGO) build --workspace --bins

TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
HOST_TRIPLE := $(shell rustc -vV | sed -n 's/^host: //p')

# praxis-run starts once for every command an agent runs: linked statically it
# skips the dynamic loader (about 0.3 ms a call), and at a fixed address it
# skips relocating its own image (about 14,000 relocations and 70 pages
# copied: 0.1 ms a call). Only praxis-run: praxisd and praxis look users up
# through NSS. An explicit --target keeps the flags off build scripts and
# proc macros.
release:
	$(CARGO) build --workspace --bins --release
	RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static" $(CARGO) build --release -p praxis-shim --bin praxis-run --target $(HOST_TRIPLE)
	cp $(TARGET_DIR)/$(HOST_TRIPLE)/release/praxis-run $(TARGET_DIR)/release/praxis-run

# The three binaries into $(PREFIX)/bin (default ~/.local/bin). praxis-run
# starts a user-mode praxisd from there on first use.
PREFIX ?= $(HOME)/.local
install: release
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(TARGET_DIR)/release/praxis $(TARGET_DIR)/release/praxis-run $(TARGET_DIR)/release/praxisd $(DESTDIR)$(PREFIX)/bin/
	@echo "installed praxis, praxis-run and praxisd in $(DESTDIR)$(PREFIX)/bin"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "add it to PATH: export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

# The end-to-end tests drive the real binaries, so build them first, and the
# real Python clients (MCP SDK, openai-agents), from a project venv made once
# and remade when tests/requirements.txt changes.
VENV := .venv
PYTHON ?= python3

$(VENV)/installed: tests/requirements.txt
	@$(PYTHON) -m venv $(VENV) || { echo "make: cannot create $(VENV): install Python's venv module (Debian: apt-get install python3-venv)" >&2; exit 1; }
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
	touch $@

# The OpenClaw plugin and the real `openclaw` package its test loads it into
# (with the Node.js that OpenClaw needs, from npm), installed once and again
# when the lockfile changes, without install scripts or optional packages;
# the plugin is rebuilt when its source changes. Without npm the test says
# it is skipped.
OPENCLAW := integrations/openclaw

$(OPENCLAW)/node_modules/.installed: $(OPENCLAW)/package-lock.json
	cd $(OPENCLAW) && npm ci --ignore-scripts --omit=optional --no-audit --no-fund
	touch $@

$(OPENCLAW)/dist/index.js: $(OPENCLAW)/node_modules/.installed $(OPENCLAW)/tsconfig.json $(wildcard $(OPENCLAW)/src/*.ts)
	cd $(OPENCLAW) && npm run build

# The built plugin alone, as the Debian package installs it: the manifest,
# package.json and dist/, without the node_modules that building it needs
# (OpenClaw aborts every turn when a plugin folder holds its own). This is
# the folder to pass to `praxis install openclaw --plugin`.
OPENCLAW_PLUGIN := $(TARGET_DIR)/openclaw-plugin

openclaw-plugin: $(OPENCLAW)/dist/index.js
	rm -rf $(OPENCLAW_PLUGIN)
	install -d $(OPENCLAW_PLUGIN)/dist
	install -m 0644 $(OPENCLAW)/openclaw.plugin.json $(OPENCLAW)/package.json $(OPENCLAW_PLUGIN)/
	install -m 0644 $(OPENCLAW)/dist/*.js $(OPENCLAW_PLUGIN)/dist/
	@echo "the built OpenClaw plugin is in $(OPENCLAW_PLUGIN): praxis install openclaw --plugin $(abspath $(OPENCLAW_PLUGIN))"

# The official MCP clients from npm (the Inspector CLI and the TypeScript
# SDK), which tests/tests/mcp.rs drives praxis-run's MCP server with; they
# run on OpenClaw's Node.js above.
MCP_CLIENTS := tests/js

$(MCP_CLIENTS)/node_modules/.installed: $(MCP_CLIENTS)/package-lock.json
	cd $(MCP_CLIENTS) && npm ci --ignore-scripts --omit=optional --no-audit --no-fund
	touch $@

NODE_PACKAGES := $(if $(shell command -v npm 2>/dev/null),$(OPENCLAW)/dist/index.js $(MCP_CLIENTS)/node_modules/.installed)

# The fleet tests start a real PostgreSQL server (initdb and postgres from
# Debian's `postgresql`) and skew hosts' clocks with Debian's `faketime`;
# both installed here when missing and make runs as root.
POSTGRES_BIN := $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb))

postgres:
	@if [ -z "$(POSTGRES_BIN)" ] && ! command -v pg_config >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; \
	  else \
	    echo "make: the fleet tests need PostgreSQL's server binaries (Debian: apt-get install postgresql)" >&2; exit 1; \
	  fi; \
	fi
	@if ! command -v faketime >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime || \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime; }; \
	  else \
	    echo "make: no faketime; the fleet's clock skew test is skipped (Debian: apt-get install faketime)"; \
	  fi; \
	fi

# The headless browser tests/tests/console.rs drives the web console with:
# Debian's Chromium and its WebDriver, installed when missing and make runs
# as root on Debian; elsewhere the test says it is skipped.
BROWSER := $(if $(wildcard /usr/bin/chromedriver),,browser)

browser:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }; \
	else echo "make: no chromium-driver; the console's browser test is skipped (Debian: apt-get install chromium chromium-driver)"; fi

test: build postgres $(VENV)/installed $(NODE_PACKAGES) $(BROWSER)
	PRAXIS_PYTHON=$(abspath $(VENV))/bin/python $(CARGO) test --workspace --no-fail-fast

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

bench: release
	$(CARGO) bench -p praxis-bench

demo: release
	bash scripts/demo.sh $(TARGET_DIR)/release

# Whole-process comparisons (exec, hook, peers, kill switch, 64 clients);
# writes bench/results/<date>.md and the README's Benchmarks table.
bench-process: release
	bash bench/whole_process.sh $(TARGET_DIR)/release

# The fleet's figures against a real PostgreSQL: kill and approval
# propagation (p50, p99), audit rows copied per second.
bench-fleet: build postgres
	$(CARGO) test -p praxis-e2e --test fleet -- --ignored --nocapture figures

# Debian package in target/debian/: the three binaries, the systemd unit,
# /etc/praxis config, man pages, completions, and the built OpenClaw plugin
# in /usr/share/praxis/openclaw (plain JavaScript that needs only OpenClaw's
# Node.js; building it needs npm, as make test does).
CARGO_DEB_VERSION ?= 3.8.0
DEB_GEN := $(TARGET_DIR)/release/generated
deb: release $(OPENCLAW)/dist/index.js
	$(CARGO) deb --version >/dev/null 2>&1 || $(CARGO) install cargo-deb --version $(CARGO_DEB_VERSION) --locked
	rm -rf $(DEB_GEN)
	$(TARGET_DIR)/release/praxis generate --man $(DEB_GEN)/man --completions $(DEB_GEN)/completions
	gzip -9n $(DEB_GEN)/man/*.1
	$(CARGO) deb -p praxis-shim --no-build

# Builds the package and checks its layout in a scratch root.
deb-check: deb
	bash packaging/check-deb.sh

clean:
	$(CARGO) clean
