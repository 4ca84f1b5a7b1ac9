# coopr — build, test and check. `make test` is the test command CI runs.
GO        ?= go
BIN       := bin/coopr
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
export COOPR_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test?sslmode=disable
export COOPR_TEST_REDIS_URL ?= redis://127.0.0.1:6379/0

.PHONY: all build test generate check-generate lint bench fuzz clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/coopr

# Unit, integration and acceptance tests against the real Postgres (and, as
# later parts land, Redis and sshd hosts).
test:
	$(GO) test -count=1 ./...

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

clean:
	rm -rf bin
