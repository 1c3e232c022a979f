# mcpp-chat (Go edition). `make build` then `make test` is all a newcomer needs.
GO      ?= go
PREFIX  ?=
PYTHON  ?= python3
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The binaries record this checkout: a copy installed elsewhere (PREFIX) then
# uses the checkout's database and config, as bin/ does (internal/config).
LDFLAGS := -s -w -X main.version=$(VERSION) -X "github.com/mcpp/mcpp-chat/internal/config.BuildCheckout=$(CURDIR)"
# Pure Go, statically linked: nothing here needs C, and a binary that loads
# the C library starts ~4 ms slower — the hook runs on every prompt.
export CGO_ENABLED = 0

# The real clients the end-to-end tests drive (tests/claude_test.go,
# codex_test.go), pinned to the versions docs/hooks.md was checked against,
# and the official MCP TypeScript SDK (tests/hub_clients_test.go drives
# the team hub with its HTTP client).
CLAUDE_CODE_VERSION ?= 2.1.332
CODEX_VERSION       ?= 0.171.0
MCP_SDK_VERSION     ?= 1.32.2
E2E_DIR             := .cache/e2e

.PHONY: build test short race bench check clean install e2e-clients

build:
	@echo "# building bin/mcpp-chat and bin/mcpp-chat-hook: seconds with a warm build cache; the first time 3–5 min on 2 cores, downloading and compiling the dependencies (SQLite, PostgreSQL's driver, the MCP SDK) with no output meanwhile"
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/mcpp-chat ./cmd/mcpp-chat
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/mcpp-chat-hook ./cmd/mcpp-chat-hook

# Everything (tests/make-test.sh): vet, the Go tests (unit and end-to-end
# against the built binaries; with the real Claude Code and Codex CLIs when
# `make e2e-clients` installed them, a few minutes more), then the mcpp host
# test (skipped, with a line saying so, without PyYAML). Every suite runs even
# when one fails; what was skipped and what failed come last.
test: build
	@GO='$(GO)' PYTHON='$(PYTHON)' bash tests/make-test.sh

# The edit loop: the unit tests without the end-to-end ones (they build and
# drive the binaries) and without the load tests, each skip saying why.
# `go test -short -count=1 ./...` with a warm build cache: 20 s on 2 cores
# at load 2.5, 30–40 s at load 7–9, a minute at load 13 (26–33 s of CPU,
# about 12 of them linking the test binaries). `make test` runs everything.
short:
	$(GO) test -short -count=1 ./...

# The race detector over every test, the binaries the end-to-end tests
# drive included (tests/ builds them with -race under -race). Not part of
# `make test`: about 12 minutes on 2 cores. The detector needs cgo.
race:
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 60m ./...

# Benchmarks, never part of `make test` (figures: docs/performance.md). In
# process: the store and the tool layer; then whole processes: the hook,
# chat_wait's wake-up, tests/bench (serve over stdio, call, 8 writers,
# memory, start-up) and the mcpp path (a host calling mcpptool.py). A few
# minutes; run it on a quiet machine.
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 200x ./internal/store/ ./tools/
	$(GO) test -count=1 -run '^$$' -bench Hook -benchtime 100x ./tests/
	MCPP_CHAT_BENCH=1 $(GO) test -count=1 -run TestWakeLatency -v ./tests/
	$(GO) run ./tests/bench
	$(PYTHON) tests/bench_mcpp_host.py

# Builds, then says what it installed and what to run next (`bin/mcpp-chat
# setup` prints every snippet). Copies nothing outside the checkout unless
# PREFIX is given: `make install PREFIX=~/.local` puts bin/* into
# $(PREFIX)/bin, binaries that use this checkout's database and config
# (recorded at build time), like bin/ itself: one install.
install: build
	@exe=bin/mcpp-chat; \
	if [ -n "$(PREFIX)" ]; then \
	  install -d "$(PREFIX)/bin" && \
	  for f in bin/*; do install -m 0755 "$$f" "$(PREFIX)/bin/" || exit 1; done && \
	  exe="$(PREFIX)/bin/mcpp-chat" && \
	  echo "installed: bin/mcpp-chat and bin/mcpp-chat-hook, copied to $(PREFIX)/bin (one install: this checkout's chat)"; \
	else \
	  echo "installed: bin/mcpp-chat and bin/mcpp-chat-hook (nothing outside this checkout)"; \
	fi; \
	echo "next, once per host: register the server for Claude Code and add the hooks:"; \
	"$$exe" setup claude | sed -n 's/^claude /  claude /p'; \
	echo "  $$exe setup hooks --write"; \
	echo "Codex: $$exe setup codex --write · every client's snippet: $$exe setup · check: $$exe doctor"

# Installs the pinned Claude Code and Codex CLIs and the MCP TypeScript SDK
# with npm into .cache/e2e (git-ignored); the tests find them there, or
# where MCPP_CHAT_E2E_BIN says (its node_modules/.bin).
e2e-clients:
	mkdir -p $(E2E_DIR)
	cd $(E2E_DIR) && { [ -f package.json ] || npm init -y >/dev/null; } && \
	  npm install --no-audit --no-fund --loglevel=error --save-exact \
	    @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) @openai/codex@$(CODEX_VERSION) \
	    @modelcontextprotocol/sdk@$(MCP_SDK_VERSION)
	$(E2E_DIR)/node_modules/.bin/claude --version
	$(E2E_DIR)/node_modules/.bin/codex --version

check:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "run gofmt -w ."; exit 1; }
	$(GO) vet ./...

clean:
	rm -rf bin
