# coopr — build, test and check. `make test` is the test command CI runs.
GO        ?= go
BIN       := bin/coopr
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
export COOPR_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test?sslmode=disable
export COOPR_TEST_REDIS_URL ?= redis://127.0.0.1:6379/0

.PHONY: all build test test-prereqs generate check-generate lint bench fuzz clean package dev

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/coopr

# Everything on this machine: private Postgres and Redis under .coopr-dev/,
# the server, an agent, local nodes and the example catalog (as root).
# DEV_FLAGS passes flags, e.g. make dev DEV_FLAGS='--max-nodes 100'.
dev: build
	$(BIN) dev $(DEV_FLAGS)

# Every test, against a real Postgres, Redis, sshd hosts and containers.
# test-prereqs installs and starts what is missing first (as root), or
# stops with the command that would. The Coopr compatibility tests read
# COOPR_COMPAT_DIR (make test COOPR_COMPAT_DIR=DIR, or from the
# environment; default ../shared) and skip where it does not exist.
test: test-prereqs
	$(GO) test -count=1 ./...

test-prereqs:
	@scripts/test-prereqs

generate:
	$(GO) generate ./...

# Fails when regenerating would change committed generated code.
check-generate: generate
	@git diff --exit-code --stat -- . || (echo "generated code is stale: run 'make generate' and commit" >&2; exit 1)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseEntity -fuzztime $(FUZZTIME) ./catalog
	$(GO) test -run '^$$' -fuzz FuzzAddDocument -fuzztime $(FUZZTIME) ./catalog

# The coopr .deb in bin/ (packaging/nfpm.yaml): the binary, the systemd
# units and commented settings. Its version is the latest vX.Y.Z tag
# (COOPR_PKG_VERSION overrides), else 0.0.0.
package: build
	mkdir -p bin
	v=$$(git describe --tags --match 'v[0-9]*' 2>/dev/null | sed 's/^v//'); \
	COOPR_BIN=$(BIN) COOPR_PKG_VERSION=$${COOPR_PKG_VERSION:-$${v:-0.0.0}} GOARCH=$$($(GO) env GOARCH) \
		$(GO) tool nfpm package -f packaging/nfpm.yaml -p deb -t bin/

clean:
	rm -rf bin
