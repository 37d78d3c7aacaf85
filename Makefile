# crowsnest developer tasks. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
BIN       ?= bin/crowsnest
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
# Tests start a real etcd + kube-apiserver; with -race on two cores a
# package can take minutes (cmd/crowsnest also waits for the Argo CD
# build that `make test` starts in the background on a fresh machine).
TEST_FLAGS ?= -race -timeout 30m
# Time per fuzz target: a short smoke in `make test`, a minute in `make fuzz`.
FUZZTIME  ?= $(if $(filter fuzz,$(MAKECMDGOALS)),1m,10s)

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/crowsnest
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/crowsnest

.PHONY: image
image: ## Build the container image (linux/amd64+arm64, non-root) into bin/image, an OCI layout; no Docker. IMAGE_FLAGS='-push REF' pushes too
	$(GO) run ./hack/image -out bin/image -version '$(VERSION)' -revision "$$(git rev-parse HEAD 2>/dev/null || true)" \
	  -created "$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || echo 0)}" $(IMAGE_FLAGS)

# The Argo CD release the real-Argo CD tests build and run (hack/argocd,
# internal/argocdenv); `make e2e-argocd ARGOCD_VERSION=v3.6.0` tries another.
ARGOCD_VERSION ?= v3.6.1
export ARGOCD_VERSION
# The releases `make e2e-argocd-matrix` runs (Argo CD before v3.6 cannot be
# built from the module proxy; see hack/argocd/build.sh).
ARGOCD_VERSIONS ?= v3.6.0 v3.6.1

# The Gitea release the pull-request tests build and run (hack/gitea,
# internal/giteaenv).
GITEA_VERSION ?= v1.27.3
export GITEA_VERSION

.PHONY: deps
deps: deps-base ## Build/install what the tests need (kube, Argo CD and Gitea binaries, linters, apt packages); cached, idempotent
	bash hack/argocd/build.sh >/dev/null
	bash hack/gitea/build.sh >/dev/null

.PHONY: deps-base
deps-base:
	bash hack/kube/build.sh >/dev/null
	bash hack/tools.sh >/dev/null
	bash hack/apt.sh >/dev/null

# `make test` builds Argo CD, then Gitea (minutes each, on a fresh
# machine) in the background while the checks and the other packages'
# tests run; the tests that need one wait for it (each build.sh takes a
# lock, and a test that comes first builds it itself) and report its
# error if it fails. Their output goes to bin/argocd-build.log and
# bin/gitea-build.log. One after the other: two cores, and more tests
# wait for Argo CD.
.PHONY: deps-background
deps-background: deps-base
	mkdir -p bin
	{ { bash hack/argocd/build.sh >bin/argocd-build.log 2>&1; bash hack/gitea/build.sh >bin/gitea-build.log 2>&1; } & }

.PHONY: test
test: deps-background fmt-check vet lint unit conformance fuzz-smoke ## The whole suite: setup, format, vet, lint, race tests (unit + e2e), conformance, fuzz smoke

.PHONY: unit
unit: ## go test -race ./... (needs `make deps` once); includes the fault suite
	FAULTS_REPORT='$(FAULTS_REPORT)' $(GO) test $(TEST_FLAGS) ./...

# The fault-injection suite (test/faults) runs crowsnest as a subprocess
# against the real apiserver, a registry, a Git server and webhook sinks
# made to fail, and writes its table here. `go test ./...` (so `make test`)
# runs it too: about 10 minutes on two cores.
FAULTS_REPORT ?= $(CURDIR)/bin/faults.md

# The conformance suite (test/conformance) is its own module: Argo CD's
# dependency tree stays out of the main one, and Argo CD needs Go 1.27.
CONFORMANCE_GO ?= go1.27.3

.PHONY: conformance
conformance: ## Conformance suite: Argo CD's and notifications-engine's own code against crowsnest's on the same inputs (own module, GOTOOLCHAIN=$(CONFORMANCE_GO))
	cd test/conformance && export GOTOOLCHAIN='$(CONFORMANCE_GO)' && $(GO) vet ./... && $(GO) test -timeout 20m ./...

.PHONY: faults
faults: deps ## Fault-injection suite alone (test/faults); prints the fault table and writes it to FAULTS_REPORT (bin/faults.md). FAULTS_SEED repeats a crash schedule
	FAULTS_REPORT='$(FAULTS_REPORT)' $(GO) test $(TEST_FLAGS) -count=1 -v ./test/faults/

.PHONY: e2e
e2e: deps ## Only the end-to-end tests of the crowsnest binary against the real apiserver
	$(GO) test $(TEST_FLAGS) -run 'E2E' ./cmd/...

.PHONY: e2e-argocd
e2e-argocd: deps ## Only the end-to-end tests against a real Argo CD (application controller + repo server, hack/argocd) of ARGOCD_VERSION; `make unit` runs them too
	$(GO) test $(TEST_FLAGS) -count=1 -run 'ArgoCD' ./internal/argocdenv/ ./cmd/crowsnest/

.PHONY: e2e-gitea
e2e-gitea: ## Only the tests against a real Gitea (hack/gitea) of GITEA_VERSION; `make unit` runs them too
	bash hack/gitea/build.sh >/dev/null
	$(GO) test $(TEST_FLAGS) -count=1 ./internal/giteaenv/

.PHONY: e2e-argocd-matrix
e2e-argocd-matrix: ## e2e-argocd against each Argo CD release in ARGOCD_VERSIONS (builds each once)
	for v in $(ARGOCD_VERSIONS); do echo "== Argo CD $$v"; $(MAKE) --no-print-directory e2e-argocd ARGOCD_VERSION=$$v || exit 1; done

.PHONY: bench
bench: ## Performance benchmark on real parts (S1-S3, rounds 1-5; S3 takes a while); results in bin/bench. Narrow it: BENCH_FLAGS='-scenarios S2 -rounds 1,2,3'
	$(GO) run ./bench -out bin/bench $(BENCH_FLAGS)

.PHONY: bench-smoke
bench-smoke: ## The benchmark harness's own test (S1 rounds 1-2, about a minute); `make unit` runs it too
	$(GO) test $(TEST_FLAGS) -run Smoke ./bench/

.PHONY: fuzz-smoke
fuzz-smoke: ## Run every fuzz target briefly (FUZZTIME each, 10s)
	bash hack/fuzz.sh $(FUZZTIME)

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 1m), then list results; fails on any crash (Go's fuzztime deadline race, go.dev/issue/75804, is retried once and shown as flaky)
	bash hack/fuzz.sh $(FUZZTIME)

.PHONY: lint
lint: ## golangci-lint (version pinned in hack/tools.sh)
	"$$(bash hack/tools.sh | tail -n1)/golangci-lint" run --allow-parallel-runners ./...

.PHONY: vet
vet: ## go vet
	$(GO) vet ./...

.PHONY: fmt
fmt: ## gofmt -w
	gofmt -w $$(git ls-files '*.go')

.PHONY: fmt-check
fmt-check: ## Fail if gofmt would change a file
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

.PHONY: clean
clean: ## Remove build output
	rm -rf bin
