# Each target is what CI or a person runs; see README.md.
GO          ?= go
BIN         := bin/sluice
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 30s
PREFIX      ?= $(HOME)/.local

.PHONY: build install test e2e e2e-agents golden lint bench fuzz load crash crash-hub faults run demo demo-cli check

# A static, cgo-free binary: cgo (pulled in by os/user through mvdan.cc/sh's
# expand package) costs every sluice process ~2 ms to start.
# bin/sluice-mcp is cmd/sluice-mcp, a program of its own: the MCP SDK
# would add ~1.5 ms to every sluice process ('sluice mcp' execs it).
build:
	CGO_ENABLED=0 $(GO) build -o bin/ ./cmd/...

# The seven programs into $(PREFIX)/bin (default ~/.local/bin), side by
# side: sluice runs sluice-engine, sluice-box, sluice-console, sluice-mcp,
# sluice-hub and sluice-web from the
# directory it is in, and 'sluice install' writes that sluice's path into
# the agents' hooks. install(1) replaces each file rather than writing
# into it, so a sluice that is running meanwhile is not disturbed.
install: build
	install -d "$(PREFIX)/bin"
	install -m 0755 bin/sluice bin/sluice-engine bin/sluice-box bin/sluice-console bin/sluice-mcp bin/sluice-hub bin/sluice-web "$(PREFIX)/bin/"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on your PATH; add it (export PATH=\"$(PREFIX)/bin:\$$PATH\")";; esac

# go test runs the crash harnesses' quick forms too (internal/e2e:
# TestCrashQuick, TestCrashHubQuick).
test:
	$(GO) test -race ./...
	./scripts/e2e.sh
	./scripts/e2e-hub.sh

# The console in a detached tmux session, driven by keys (needs tmux).
e2e:
	./scripts/e2e.sh

# The real agent CLIs (Claude Code, Codex, Gemini CLI; pinned versions
# installed from npm into ~/.cache/sluice-e2e-agents on first use) driven
# against a scripted model on 127.0.0.1 through the hooks 'sluice install'
# writes: no tool runs that neither the policy nor a person allowed, no run
# hangs, every denial reaches the model. Needs node and npm; not in
# 'make test' (large downloads). E2EFLAGS=-agents codex, -run REGEXP, -keep, -quick.
E2EFLAGS ?=
e2e-agents:
	$(GO) run ./scripts/e2eagents $(E2EFLAGS)

# Rewrite the console's golden views after checking a change to them.
golden:
	$(GO) test ./tui -run TestView -update

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt: run gofmt -w on the files above'; exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Every benchmark of issues 2-7 and the end-to-end ones, three runs each;
# the medians go into the table in BENCHMARKS.md (BENCHFLAGS=-quick skips
# the heavy ones). Then sluice against the physical floors of its protocol
# (bench/floor, bench/compare: run against the confined and the bare
# floor, a shell line, a run after a pause and beside churn, hook, sandbox
# against the wrapper floor, check, 8-client throughput, tmpfs and disk;
# it says MISSED for a target of issue 31 it misses, and make goes on)
# and serve's memory and judging time with 10,000 pending (bench/mem;
# likewise),
# and a fleet console's first frame with 100 boxes x 10 pending (bench/fleet).
bench: build
	$(GO) run ./scripts/benchtable -count 3 $(BENCHFLAGS)
	$(GO) run ./bench/compare -n 300 -fs both
	-$(GO) run ./bench/mem -fs both
	$(GO) run ./bench/fleet -runs 10

LOADFLAGS ?=
CRASHFLAGS ?=

# 50 agent processes x 100 'sluice run' each against 'sluice serve' (70%
# allowed, 15% denied, 15% asked and approved by scripted 'sluice approve'):
# nothing lost or run twice, the audit log verifies, latency per verdict,
# the engine's peak RSS (internal/e2e/load.go; scripts/load is its flags).
# LOADFLAGS=-quick for 8 x 20, TestLoadQuick in make test.
load:
	$(GO) run ./scripts/load $(LOADFLAGS)

# sluice serve killed with SIGKILL at 200 random moments while writers
# submit allowed, denied and approved requests: every request answered
# once, nothing run twice, the audit log verifies (internal/e2e/crash.go;
# scripts/crash is its flags). CRASHFLAGS=-quick for a 20-kill smoke run
# (in make test as TestCrashQuick); -kills N, -seed N, -keep.
crash:
	$(GO) run ./scripts/crash $(CRASHFLAGS)

# The fleet under SIGKILL (scripts/crashhub): the hub process and two boxes
# (serve, its bridge and what the bridge runs) killed at 30 random moments
# while agents ask and two consoles decide: nothing lost or run twice, every
# decision as the hub holds it, both chains verify (-quick, 8 kills, is in
# make test as internal/e2e's TestCrashHubQuick).
crash-hub:
	$(GO) run ./scripts/crashhub $(CRASHFLAGS)

# The faults of issue 28, each checking what the agent was told against
# what ran: the fault suite (internal/e2e: the real programs built once,
# under a full spool before, during and after a run, a read-only spool,
# serve, sluice approve, a box's bridge and the hub SIGKILLed mid-run;
# the tmpfs cases need root and skip without; make test runs its quick
# form, this all of it with -faults.full), the console's header on a
# read-only and a full spool (TestWatchSpool*), serve SIGKILLed mid-run
# as a script (serve_crash.txtar), two overlapping runs in one project
# (TestOverlappingRunsTakeTurns), the recovery's unit tests; both crash
# harnesses' quick runs are in internal/e2e. FAULTSFLAGS go to the fault
# suite (-v, -run REGEXP).
FAULTSFLAGS ?=
faults:
	$(GO) test -race -count=1 ./internal/e2e -faults.full $(FAULTSFLAGS)
	$(GO) test -race -count=1 -run 'TestWatchSpool|TestScripts/serve_crash' ./cmd/sluice
	$(GO) test -race -count=1 -run 'TestOverlappingRunsTakeTurns|TestGoAheadNamesEachOther|TestKillEndsTheWait|TestDeadHolderHoldsNothing|TestRecoverAnswersFromTheLog|TestRecoverStopsOrphansFirst|TestServePresentOnceItCan' ./exec ./queue

# Every fuzz target in the module, FUZZTIME each (the corpora in
# testdata/fuzz replay in 'make test').
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

# The console on the default spool, with the embedded default policy
# (layered under ~/.config/sluice/policy.toml if you have one).
run: build
	./$(BIN) console

# The console on a temporary spool with a built-in fake agent.
demo: build
	./$(BIN) console --demo

# The headless flow without a terminal UI: serve, run, approve, audit.
demo-cli: build
	./scripts/demo.sh $(BIN)

check: lint test
