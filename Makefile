# Each target is what CI or a person runs; see README.md.
GO          ?= go
BIN         := bin/sluice
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 30s

.PHONY: build test lint bench fuzz run check

# A static, cgo-free binary: cgo (pulled in by os/user through mvdan.cc/sh's
# expand package) costs every sluice process ~2 ms to start.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/sluice

test:
	$(GO) test -race ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt: run gofmt -w on the files above'; exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./...

fuzz:
	$(GO) test ./queue -run '^$$' -fuzz FuzzDecodeRequest -fuzztime $(FUZZTIME)
	$(GO) test ./policy -run '^$$' -fuzz FuzzCheck -fuzztime $(FUZZTIME)
	$(GO) test ./audit -run '^$$' -fuzz '^FuzzDecodeLine$$' -fuzztime $(FUZZTIME)
	$(GO) test ./audit -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime $(FUZZTIME)
	$(GO) test ./audit -run '^$$' -fuzz '^FuzzVerifyTamper$$' -fuzztime $(FUZZTIME)

run: build
	./scripts/demo.sh $(BIN)

check: lint test
