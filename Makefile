# coopr — build, test and check. `make test` is the test command CI runs.
GO        ?= go
BIN       := bin/coopr
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
export COOPR_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test?sslmode=disable
export COOPR_TEST_REDIS_URL ?= redis://127.0.0.1:6379/0

.PHONY: all build build-go ui test test-prereqs generate check-generate lint bench bench-throughput fuzz clean package dev

all: build

# The binary with the web UI built into it.
build: ui build-go

# The binary alone: it embeds whatever ui/dist holds (a fresh clone has a
# placeholder, and the server then says how to build the UI).
build-go:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/coopr

# The web UI (docs/ui.md): npm ci when ui/node_modules is missing or older
# than the lockfile, then codegen, typecheck and vite build into ui/dist/
# when a source is newer than the last build. Needs node 20.19+ and npm.
UI_SRC := $(shell find ui/src ui/public -type f 2>/dev/null) ui/index.html ui/vite.config.ts ui/codegen.ts \
	ui/tsconfig.json ui/postcss.config.cjs schema.graphqls
ui: ui/dist/index.html

ui/node_modules/.package-lock.json: ui/package.json ui/package-lock.json
	@scripts/node-ok || (echo "(make build-go builds the binary without the UI)" >&2; exit 1)
	cd ui && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

ui/dist/index.html: ui/node_modules/.package-lock.json $(UI_SRC)
	cd ui && npm run build

# Everything on this machine: private Postgres and Redis under .coopr-dev/,
# the server, an agent, local nodes and the example catalog (as root).
# DEV_FLAGS passes flags, e.g. make dev DEV_FLAGS='--max-nodes 100'.
dev: build
	$(BIN) dev $(DEV_FLAGS)

# Every test, against a real Postgres, Redis, sshd hosts and containers.
# test-prereqs installs and starts what is missing first (as root), or
# stops with the command that would. The Coopr compatibility tests read
# COOPR_COMPAT_DIR (make test COOPR_COMPAT_DIR=DIR, or from the
# environment; unset, internal/cooprcompat's default) and skip where it
# does not exist. The timeout covers a first run, which builds the libvirt
# driver's VM image (debootstrap, several minutes) inside its package's tests.
test: test-prereqs
	@if scripts/node-ok; then $(MAKE) --no-print-directory ui && cd ui && npm test; \
	else echo "ui: skipping the web UI's build, unit and browser tests"; fi
	$(GO) test -count=1 -timeout 30m ./...

test-prereqs:
	@scripts/test-prereqs

# The web UI's operation types (ui/src/gql) come from schema.graphqls too.
generate:
	$(GO) generate ./...
	@if scripts/node-ok; then $(MAKE) --no-print-directory ui/node_modules/.package-lock.json && cd ui && npm run codegen; \
	else echo "ui: not regenerating the web UI's types"; fi

# Fails when regenerating would change committed generated code.
check-generate: generate
	@git diff --exit-code --stat -- . || (echo "generated code is stale: run 'make generate' and commit" >&2; exit 1)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@if scripts/node-ok; then $(MAKE) --no-print-directory ui/node_modules/.package-lock.json && cd ui && npm run lint; \
	else echo "ui: not checking the web UI's format and types"; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# No-op tasks/s through the whole product (docs/performance.md): a server,
# the real agent over GraphQL, Postgres and Redis. COOPR_BENCH_SIZES picks
# the cluster sizes, e.g. make bench-throughput COOPR_BENCH_SIZES=10,100.
export COOPR_BENCH_SIZES
bench-throughput:
	$(GO) test -run '^$$' -bench Throughput -benchtime 1x -timeout 2h ./bench/

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
	rm -rf bin ui/test-results
	find ui/dist -mindepth 1 ! -name .gitkeep -delete 2>/dev/null || true
