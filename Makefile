# mcpp-chat (Go edition). `make build` then `make test` is all a newcomer needs.
GO      ?= go
PREFIX  ?=
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: build test check clean

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/mcpp-chat ./cmd/mcpp-chat

# Everything: vet, the Go tests (unit and end-to-end against the built binaries).
test: build
	$(GO) vet ./...
	$(GO) test -count=1 ./...

check:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "run gofmt -w ."; exit 1; }
	$(GO) vet ./...

clean:
	rm -rf bin
