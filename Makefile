.PHONY: build run test lint compose nightly bench-loadgen bench-null audience-sweep page page-part page-report page-quick page-from-results screenshot

VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  := $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X github.com/hlsbench/hlsbench/cmd/cli.Version=$(VERSION) -X github.com/hlsbench/hlsbench/cmd/cli.Commit=$(COMMIT)

build:
	go build -ldflags "$(LDFLAGS)" -o bin/hlsbench ./cmd/hlsbench

run: build
	bin/hlsbench run

# docker-compose.yml and compose/: the stack hlsbench runs, as hlsbench
# renders it (a test keeps them equal).
compose:
	go run ./cmd/hlsbench engines compose --out .

# The suite, then again under the race detector (timing assertions relax
# there, and say so). Packages one at a time: timing tests need a quiet machine.
test:
	go test -p 1 -count=1 -timeout 40m ./...
	go test -race -p 1 -count=1 -timeout 40m ./...

# The load generator's figures from issue 2 (takes 2-3 minutes; BENCH_QUICK=1 for a smoke run).
bench-loadgen:
	bash workloads/loadgen/bench/bench.sh

# The null engine against NGINX (one worker) and the Go origin, all on one
# CPU: open loop on a 2 KB object at each of RATES, a few seconds a pass,
# then wrk's closed loop against null and NGINX with their user and system
# CPU per request: what any generator could show on this host (about
# 3 minutes; see the script for RATES, DURATION, CONNS and REPEAT).
bench-null:
	bash workloads/loadgen/bench/null.sh

# How large an audience one generator core carries validly: live-audience on
# the built-in cache at each of SWEEP_VIEWERS (a warm-up and 2 passes of
# 10 s + 20 s, no curve), then per size the requests a second, body MB a
# second, the generator's schedule lag p99 and busy share, and which tests
# were valid. A size whose p99 tests are invalid for the generator's
# lateness is past what it carries.
SWEEP_VIEWERS ?= 500 750 1000 2000 4000
SWEEP_OUT     ?= build/audience-sweep
audience-sweep: build
	rm -rf $(SWEEP_OUT) && mkdir -p $(SWEEP_OUT)
	for n in $(SWEEP_VIEWERS); do \
		bin/hlsbench run --quiet --engine builtin --workload live-audience --audience-passes 2 --store-sizes none \
			--ramp 10s --watch 20s --viewers $$n --out $(SWEEP_OUT)/$$n > $(SWEEP_OUT)/$$n.txt; \
		code=$$?; if [ $$code -ne 0 ] && [ $$code -ne 3 ]; then cat $(SWEEP_OUT)/$$n.txt; exit $$code; fi; \
	done
	python3 workloads/audience_sweep.py $(SWEEP_OUT) $(SWEEP_VIEWERS)

# The workflows, checked with actionlint (installed with go install).
ACTIONLINT := github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
lint:
	go run $(ACTIONLINT) .github/workflows/*.yml

# The nightly regression job: BASE (default: the last tag, else the previous
# commit) and HEAD, suites back to back here, then compare (its exit code).
nightly:
	BASE=$(BASE) bash .ci/nightly

# The published page, measured in parts that each finish within a session
# on this 2-core machine (nothing else of ours may run while one does), then
# reported as one. `make page` runs every part in PAGE_PARTS in turn, each a
# suite of the reference page's engines (Varnish 9.0.2 and Vinyl Cache built
# by `hlsbench engines build`, NGINX, builtin, and null: the instrument's
# ceiling and the host's floor, never ranked) into PAGE_RUNS/PART, then
# `make page-report`. `make page-part PART=segment` runs one part (again from
# the start; `hlsbench suite --resume PAGE_RUNS/PART` finishes an
# interrupted one), `make page-report` merges the parts into SITE (all of
# PAGE_PARTS must be there). A suite that ends with some result invalid
# (exit 3) still makes its page: the page says which. The parts are kept in
# results/page and committed as each finishes: a new checkout keeps what was
# measured, and the next part can run in another session. `make page-quick` is
# the same with --quick into build/site-quick. `make page-from-results`
# rebuilds site/ from the committed site/runs alone: the same bytes.
PAGE_ENGINES  ?= varnish@9.0.2,vinyl,nginx,builtin,null
PAGE_TOPOLOGY ?= all
PAGE_PARTS    ?= capacity capacity-terminated hit-path segment segment-tls segment-proxyv2 cache audience ll-hls
PAGE_PART_capacity = capacity
PAGE_PART_capacity-terminated = capacity
PAGE_PART_hit-path = hit-path
PAGE_PART_segment  = segment
PAGE_PART_segment-tls = segment
PAGE_PART_segment-proxyv2 = segment
PAGE_PART_cache    = miss-storm,origin-flap,purge-stampede,repeated-bans
PAGE_PART_audience = live-audience
PAGE_PART_ll-hls   = ll-hls
# The page runs live-audience in plaintext only: its hit ratio, offload,
# origin requests per segment and miss-ratio curve are the cache's, the same
# over TLS, and each topology's TTFB is hit-path's and segment's; its three
# topologies would take about 85 minutes here instead of 23.
PAGE_TOPOLOGY_audience = plaintext
# LL-HLS is measured in plaintext only (the workload does not run over the
# terminated topologies): planned at about 6 minutes here for five engines.
PAGE_TOPOLOGY_ll-hls = plaintext
# Capacity runs in two parts, plaintext (planned at about 40 minutes here) and
# the two terminated topologies (about 75): in one it would take about two
# hours of a three-hour session. Each part measures null, the instrument's ceiling, beside
# the engines of its topologies.
PAGE_TOPOLOGY_capacity = plaintext
PAGE_TOPOLOGY_capacity-terminated = tls,proxyv2
# Segment in three, one topology each: since the cells end and start again
# between their steps (2026-12-07), the two terminated topologies together
# would take about 95 minutes here, over a CI job's 90; plaintext (five
# engines), TLS (three) and PROXYv2 (five) each fit.
PAGE_TOPOLOGY_segment = plaintext
PAGE_TOPOLOGY_segment-tls = tls
PAGE_TOPOLOGY_segment-proxyv2 = proxyv2
PAGE_PROFILE  ?=
PAGE_RUNS     ?= results/page
SITE          ?= site

page: build
	rm -rf $(PAGE_RUNS)
	for p in $(PAGE_PARTS); do $(MAKE) --no-print-directory page-part PART=$$p || exit $$?; done
	$(MAKE) --no-print-directory page-report

page-part: build
	@test -n "$(PAGE_PART_$(PART))" || { echo "page-part: PART=$(PART): want one of: $(PAGE_PARTS)" >&2; exit 2; }
	rm -rf $(PAGE_RUNS)/$(PART)
	bin/hlsbench suite $(PAGE_PROFILE) --engine $(PAGE_ENGINES) --topology $(or $(PAGE_TOPOLOGY_$(PART)),$(PAGE_TOPOLOGY)) --workload $(PAGE_PART_$(PART)) --out $(PAGE_RUNS)/$(PART); \
	code=$$?; if [ $$code -ne 0 ] && [ $$code -ne 3 ]; then exit $$code; fi

page-report: build
	@for p in $(PAGE_PARTS); do test -f $(PAGE_RUNS)/$$p/manifest.json || { echo "page-report: $(PAGE_RUNS)/$$p has no suite: run make page-part PART=$$p" >&2; exit 2; }; done
	bin/hlsbench report $(addprefix $(PAGE_RUNS)/,$(PAGE_PARTS)) --out $(SITE)

page-quick:
	$(MAKE) page PAGE_PROFILE=--quick PAGE_RUNS=build/page-runs-quick SITE=build/site-quick

page-from-results: build
	bin/hlsbench report $(SITE)/runs --out $(SITE)

# The README's picture of the page: headless Chromium opens $(SITE)/index.html
# from disk, checks it (every image loads, no console error, no network
# request) and saves the top of the page as report/page.png.
screenshot:
	HLSBENCH_PAGE=$(CURDIR)/$(SITE)/index.html HLSBENCH_SCREENSHOT=$(CURDIR)/report/page.png HLSBENCH_SCREENSHOT_HEIGHT=2400 \
		go test -count=1 -run '^TestPage$$' ./report/browser
