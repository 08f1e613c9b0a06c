# benchcage: two commands on a fresh machine: `make demo` and `make test`.
# `make test-fast` runs, as any user and in under a minute, every test that
# needs neither root nor an engine.
SHELL := /bin/bash
CARGO ?= cargo
BIN := $(or $(CARGO_TARGET_DIR),target)/debug/benchcage

.PHONY: build test test-env test-fast test-v2 demo lint bench bench-cells bench-site images deps

build:
	$(CARGO) build

## Everything CI runs: unit tests, CLI tests and the end-to-end tests
## against real cgroups, dockerd, Slurm and engines (needs root; `test-env`
## installs and starts what they need).
## Every run loads its cells afresh (BENCHCAGE_SNAPSHOTS=off), so that no
## test restores what another loaded; tests/snapshot.rs gives each of its
## runs a snapshot cache of its own.
test: build test-env
	BENCHCAGE_SNAPSHOTS=off $(CARGO) test --no-fail-fast -- --test-threads=2

## What the tests need running, each step idempotent (root): the Debian
## packages, dockerd, the engines' local images and the one-node Slurm
## cluster.
test-env:
	bash scripts/deps.sh
	bash scripts/dockerd.sh
	bash scripts/images.sh
	bash scripts/slurm.sh

## The fast tier: every test that needs neither root nor an engine, in
## under a minute: the unit tests and the files tests/fast_*.rs (CLI
## validation, plan and render, the bad-spec corpus, hostile input, report
## snapshots, drive on its null store). A test that needs root or an engine
## goes in another file of tests/; `make test` runs them all.
test-fast:
	$(CARGO) test --lib --bins --test 'fast_*'

## The cgroup sandbox on a cgroup-v2-only kernel: Debian's kernel under
## qemu (TCG), once with the tests as PID 1 and once under systemd; the
## sandbox and run suites and `doctor` inside (needs root; installs qemu).
test-v2: build
	bash scripts/v2/test.sh

## Installs what it needs, runs the quick-start scenario (about a minute),
## prints the results folder and the HTML report path.
demo: deps build
	$(BIN) run scenarios/quickstart.yaml

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

bench: build
	bash scripts/bench.sh

## What a cell costs outside its load and phases (release build, root):
## 50 tiny redis cells, the mean per cell and each stage's share
## (scripts/bench/cells.sh; results/bench/cells.json).
bench-cells:
	bash scripts/bench/cells.sh

## The results site for a year of nightly runs (365 runs of the nightly
## matrix from one real run), timed in a release build; target under 10 s.
## Also part of `make bench`.
bench-site: build
	bash scripts/bench/site.sh

## Local Docker images of the Debian-packaged engines (no registry needed).
images:
	bash scripts/images.sh

## Debian packages, the Python wire-protocol server and the Docker daemon.
deps:
	bash scripts/deps.sh
