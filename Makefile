.PHONY: build run test lint nightly bench-loadgen

VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  := $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X github.com/hlsbench/hlsbench/cmd/cli.Version=$(VERSION) -X github.com/hlsbench/hlsbench/cmd/cli.Commit=$(COMMIT)

build:
	go build -ldflags "$(LDFLAGS)" -o bin/hlsbench ./cmd/hlsbench

run: build
	bin/hlsbench run

# The suite, then again under the race detector (timing assertions relax
# there, and say so). Packages one at a time: timing tests need a quiet machine.
test:
	go test -p 1 -count=1 -timeout 40m ./...
	go test -race -p 1 -count=1 -timeout 40m ./...

# The load generator's figures from issue 2 (takes 2-3 minutes; BENCH_QUICK=1 for a smoke run).
bench-loadgen:
	bash workloads/loadgen/bench/bench.sh

# The workflows, checked with actionlint (installed with go install).
ACTIONLINT := github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
lint:
	go run $(ACTIONLINT) .github/workflows/*.yml

# The nightly regression job: BASE (default: the last tag, else the previous
# commit) and HEAD, suites back to back here, then compare (its exit code).
nightly:
	BASE=$(BASE) bash .ci/nightly
