# Praxis: build, test, lint, bench, demo.
CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: build release test lint fmt bench demo clean

build:
	$(CARGO) build --workspace --bins

release:
	$(CARGO) build --workspace --bins --release

# The end-to-end tests drive the real binaries, so build them first.
test: build
	$(CARGO) test --workspace --no-fail-fast

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

bench: release
	$(CARGO) bench -p praxis-bench

demo: release
	bash scripts/demo.sh target/release

clean:
	$(CARGO) clean
