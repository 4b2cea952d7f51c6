.PHONY: build test bench-loadgen

build:
	go build -o bin/hlsbench ./cmd/hlsbench

test:
	go test ./...

# The load generator's figures from issue 2 (takes 2-3 minutes; BENCH_QUICK=1 for a smoke run).
bench-loadgen:
	bash workloads/loadgen/bench/bench.sh
