# benchcage: two commands on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
BIN := $(or $(CARGO_TARGET_DIR),target)/debug/benchcage

.PHONY: build test demo lint bench images deps

build:
	$(CARGO) build

## Everything CI runs: unit tests, CLI tests and the end-to-end tests
## against real cgroups, dockerd and engines (needs root and `make deps`).
test: build
	$(CARGO) test --no-fail-fast -- --test-threads=2

## Installs what it needs, runs the quick-start scenario (about a minute),
## prints the results folder and the HTML report path.
demo: deps build
	$(BIN) run scenarios/quickstart.yaml

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

bench: build
	bash scripts/bench.sh

## Local Docker images of the Debian-packaged engines (no registry needed).
images:
	bash scripts/images.sh

## Debian packages, the Python wire-protocol server and the Docker daemon.
deps:
	bash scripts/deps.sh
