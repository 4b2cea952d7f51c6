.PHONY: build run test bench-loadgen

build:
	go build -o bin/hlsbench ./cmd/hlsbench

run: build
	bin/hlsbench run

test:
	go test -count=1 -timeout 40m ./...

# The load generator's figures from issue 2 (takes 2-3 minutes; BENCH_QUICK=1 for a smoke run).
bench-loadgen:
	bash workloads/loadgen/bench/bench.sh
