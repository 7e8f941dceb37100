# Sluice. Every target builds the tools it needs into bin/ first (cached; see hack/build-tools.sh).
SHELL := /usr/bin/env bash -o pipefail
BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
export KUBEBUILDER_ASSETS := $(BIN)
# Tests that start many apiservers share 2 cores in CI: keep package parallelism low.
GO_TEST_FLAGS ?= -p 2 -count=1 -timeout 45m
# How long pods of the demo stack take to become ready (make demo-up POD_READY_DELAY=5s).
POD_READY_DELAY ?= 1s

.PHONY: all
all: build

##@ Build
.PHONY: build
build: ## Build the manager and the kubectl plugin into bin/.
	go build -o $(BIN)/sluice ./cmd/sluice
	go build -o $(BIN)/kubectl-sluice ./cmd/kubectl-sluice

.PHONY: tools
tools: ## Build the pinned tools for code generation and envtest into bin/.
	hack/build-tools.sh gen envtest

.PHONY: cluster-tools
cluster-tools: ## Build the pinned local-cluster tools (controller-manager, scheduler, kwok) too.
	hack/build-tools.sh gen cluster

.PHONY: prometheus
prometheus: ## Install Prometheus (Debian package) when it is missing.
	hack/install-prometheus.sh

.PHONY: chromium
chromium: ## Install Chromium (Debian package) for the dashboard's browser tests when it is missing.
	hack/install-chromium.sh

##@ Code generation
.PHONY: generate
generate: ## Generate deepcopy code.
	hack/build-tools.sh gen
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: ## Generate CRD YAML and RBAC, and copy them into the Helm chart.
	hack/build-tools.sh gen
	$(CONTROLLER_GEN) crd:allowDangerousTypes=true paths=./api/... output:crd:artifacts:config=config/crd
	$(CONTROLLER_GEN) rbac:roleName=sluice-manager paths=./controllers/... output:rbac:artifacts:config=config/rbac
	# Namespace-scoped installs and installs without the data-plane controller: the rules of the
	# Canary and MetricTemplate controllers alone.
	$(CONTROLLER_GEN) rbac:roleName=sluice-canary paths="{./controllers/canary/...,./controllers/metrictemplate/...}" output:rbac:artifacts:config=config/rbac/canary
	hack/chart-crds.sh

.PHONY: verify
verify: ## gofmt, go vet, and fail when generated files differ from what is committed.
	hack/verify.sh

##@ Test
.PHONY: test
test: cluster-tools prometheus chromium ## Build tools, then run unit, envtest, browser and end-to-end tests.
	go test $(GO_TEST_FLAGS) ./...

.PHONY: bench
bench: tools ## Run benchmarks.
	go test -run '^$$' -bench . -benchmem ./...

# N Canaries for bench-scale; BENCH_ARGS passes more flags (go run ./hack/benchscale -h).
N ?= 100
BENCH_ARGS ?=

.PHONY: bench-scale
bench-scale: cluster-tools ## Scale benchmark on the local cluster: N Canaries (default 100) created, idle, then all released at once; prints a table.
	go run ./hack/benchscale -n $(N) $(BENCH_ARGS)

##@ Demo
.PHONY: demo
demo: cluster-tools prometheus ## Run a good and a bad release end to end on a local cluster.
	@echo "make demo: building what is missing first (a cold build of the control plane takes about 10 minutes on 2 cores)"
	go build -o $(BIN)/demo ./hack/demo
	$(BIN)/demo

.PHONY: demo-up
demo-up: cluster-tools prometheus ## Bring the demo stack up in the background (POD_READY_DELAY=5s slows pods) and print its KUBECONFIG.
	POD_READY_DELAY=$(POD_READY_DELAY) hack/demo-stack.sh up

.PHONY: demo-restart-manager
demo-restart-manager: ## Restart only the demo stack's Sluice manager (it resumes from status).
	hack/demo-stack.sh restart-manager

.PHONY: demo-down
demo-down: ## Stop the stack demo-up started.
	hack/demo-stack.sh down

.PHONY: help
help:
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ { printf "  %-16s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
