# Holdover build and test entry points. `make test` is the one command that
# runs every test; `make dev` builds and runs the whole system locally.

GO ?= go

.PHONY: build dev check-tree test test-go test-conformance test-web test-schemas test-sdk vet tidy

build:
	$(GO) build -o bin/ ./cmd/...

dev: build
	./bin/holdover dev

# Nothing built is tracked: no executable, object or build output, and no
# file over 1 MiB but the lockfiles and the committed web build.
check-tree:
	./.ci/check-tree

vet:
	$(GO) vet ./...

# go.mod and go.sum must be exactly what `go mod tidy` writes.
tidy:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

test-go:
	$(GO) test -race -count=1 -timeout 20m -skip '^TestConformance' ./...

# The conformance suite: every scenario against every agent runtime (the Go
# runtime, the TypeScript SDK, whose build test-sdk makes, and the MCP
# bridge behind a host), printing the runtime × scenario table. Run in the package's folder so go test shows
# the table even when every test passes.
test-conformance:
	cd integration && $(GO) test -race -count=1 -timeout 10m -run '^TestConformance'

# The browser Client: type check, unit tests, and a check that the committed
# built files in web/dist match the sources.
test-web:
	cd web && npm ci --no-audit --no-fund && npm run typecheck && npm test && npm run check-dist

# The TypeScript the web Client gets from schemas/ must be what the schema
# files generate now (run `npm run generate` in schemas/codegen to update it).
test-schemas:
	cd schemas/codegen && npm ci --no-audit --no-fund && npm run check

# The TypeScript agent SDK: its build (tsc, which type checks) and its tests
# against a real `holdover dev` (vitest builds and starts it). The build (dist/)
# is what the conformance suite runs behind its TypeScript runner.
test-sdk:
	cd sdk/typescript && npm ci --no-audit --no-fund && npm test

test: check-tree tidy vet test-schemas test-web test-sdk test-go test-conformance
