# Holdover build and test entry points. `make test` is the one command that
# runs every test; `make dev` builds and runs the whole system locally.

GO ?= go

.PHONY: build dev test test-go vet

build:
	$(GO) build -o bin/ ./cmd/...

dev: build
	./bin/holdover dev

vet:
	$(GO) vet ./...

test-go:
	$(GO) test -race -count=1 -timeout 15m ./...

test: vet test-go
