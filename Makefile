# kubectl-sched: make help lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
IMG ?= ghcr.io/kubectl-sched/operator:$(VERSION)
BIN ?= bin
LDFLAGS := -s -w -X github.com/kubectl-sched/kubectl-sched/plugin/internal/buildinfo.Version=$(VERSION) -X main.version=$(VERSION)
# controller-gen is a tool of hack/tools' module, so its dependencies stay
# out of go.mod; -modfile runs it here, where it reads the product's packages.
CONTROLLER_GEN := go tool -modfile=hack/tools/go.mod controller-gen
# golangci-lint, pinned and built by go run (cached after the first run),
# so its dependencies stay out of go.mod.
GOLANGCI_LINT := go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
# One set of build flags for every build of this module's packages, the
# release's: ko (the operator image) and make dist (the krew archives)
# build with -trimpath and CGO_ENABLED=0, and a build that differs in
# either compiles every package again (cgo changes net, which most of
# client-go imports). With these, make demo, go vet, go test, the test
# builds of the plugin and operator, the krew archives and the release
# image share one compile of each package in the Go cache. Nothing here
# needs cgo.
export CGO_ENABLED := 0
export GOFLAGS := -trimpath $(GOFLAGS)
# Test timeout: the first run builds the control plane before any test starts.
TEST_TIMEOUT ?= 30m
# Packages tested at once. Most wait on their clusters (leases, restarts,
# pods starting) rather than compute, so 4 on two cores takes about two
# thirds of the time go test's default (one per core) does.
TEST_PARALLEL ?= 4
# make test links about 60 test binaries every run; without symbol tables
# and DWARF (-s -w) that takes a quarter less CPU. Stack traces still name
# functions and lines. It leaves out hack/test/bench, whose packages hold
# only benchmarks (make bench): their six binaries would link (about 25 s
# of CPU) to run nothing, and go vet already type-checks them.

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-16s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: ## Write CRDs (config/crd/bases) and the operator's ClusterRole (config/rbac/role.yaml) from markers.
	$(CONTROLLER_GEN) rbac:roleName=kubectl-sched-operator crd paths="./api/...;./operator/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

.PHONY: generate
generate: ## Write DeepCopy methods for the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./api/..."

.PHONY: docs
docs: ## Write docs/reference from the code: commands, settings, exit codes, CRD fields, admission policies, tiers (a test fails when they are stale).
	go run ./hack/docgen/cmd/docgen

.PHONY: fmt
fmt: ## Run gofmt.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet on the product module and on hack/tools.
	go vet ./...
	go -C hack/tools vet ./...

.PHONY: control-plane
control-plane: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok into the cache (minutes, once).
	@hack/build-control-plane.sh >/dev/null

.PHONY: lint
lint: ## Run golangci-lint with .golangci.yml on the product module (make test-release lints hack/tools).
	$(GOLANGCI_LINT) run ./...

.PHONY: test
test: control-plane lint ## Run every test against a real API server and the simulated cluster.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet ./...
	KUBEBUILDER_ASSETS="$$(hack/build-control-plane.sh 2>/dev/null)" go test $$(go list ./... | grep -v /hack/test/bench/) -count=1 -short -ldflags="-s -w" -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT)

.PHONY: test-faults
test-faults: control-plane ## Run the long fault runs make test skips: API server and etcd restarts, leader failover, a kill after a cron run (CI runs them).
	KUBEBUILDER_ASSETS="$$(hack/build-control-plane.sh 2>/dev/null)" go test ./hack/test/chaos -count=1 -run 'TestAPIServerAndEtcdRestarts|TestLeaderFailover|TestKillAfterACronRunIsCreated' -timeout 20m

.PHONY: test-release
test-release: ## Vet, lint and test hack/tools: the release's operator image for both platforms pushed to an in-process registry and checked, and krew installing the Windows archive (minutes from a cold cache; CI runs it, make test does not).
	go -C hack/tools vet ./...
	cd hack/tools && $(GOLANGCI_LINT) run ./...
	go -C hack/tools test ./... -count=1 -timeout $(TEST_TIMEOUT)
	go test ./hack/test/e2e -run TestKrewInstall -count=1 -timeout $(TEST_TIMEOUT)

.PHONY: chaos
chaos: control-plane ## Run the fault tests in full (figures in docs/contributors/reliability.md).
	KUBEBUILDER_ASSETS="$$(hack/build-control-plane.sh 2>/dev/null)" CHAOS_KILLS=25 CHAOS_SCALE=10 CHAOS_STEPS=10 go test ./hack/test/chaos -count=1 -v -timeout 40m

.PHONY: bench
bench: control-plane ## Run the benchmarks and print their figures (all but bench-argo's, which builds Argo's controller).
	KUBEBUILDER_ASSETS="$$(hack/build-control-plane.sh 2>/dev/null)" go test $$(go list ./... | grep -v /hack/test/bench/argo) -run '^$$' -bench . -benchtime 1x -timeout 60m

.PHONY: bench-scale
bench-scale: control-plane ## The scale benchmark: tenants, apps, workflows and tasks at once on 200+ kwok nodes, against bare Jobs (sizes from SCALE_* variables, see docs/contributors/benchmarks.md "Scale").
	KUBEBUILDER_ASSETS="$$(hack/build-control-plane.sh 2>/dev/null)" go test ./hack/test/bench/scale -run '^$$' -bench Scale -benchtime 1x -timeout 90m

.PHONY: bench-argo
bench-argo: control-plane ## The same work through Argo Workflows (as shipped, tuned) and the operator, each on a fresh simulated cluster, side by side (builds Argo's controller into the cache once; sizes from ARGO_BENCH_* variables, see docs/contributors/benchmarks.md "Against Argo Workflows").
	@hack/build-argo.sh >/dev/null
	KUBEBUILDER_ASSETS="$$(hack/build-control-plane.sh 2>/dev/null)" ARGO_CONTROLLER="$$(hack/build-argo.sh 2>/dev/null)" go test ./hack/test/bench/argo -run '^$$' -bench ArgoSideBySide -benchtime 1x -timeout 120m

##@ Build

.PHONY: build
build: ## Build bin/kubectl-sched and bin/operator.
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/kubectl-sched ./plugin
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/operator ./operator

.PHONY: dist
dist: ## Cross-build the krew archives into dist/ and write their sha256s into krew/sched.yaml.
	go run ./hack/dist -version $(if $(filter v%,$(VERSION)),$(VERSION),v0.1.0) -out dist -update-manifest

##@ Release

# REGISTRY is where the operator image goes (<REGISTRY>/operator:VERSION);
# INSECURE=true pushes over plain HTTP (loopback and private addresses are).
REGISTRY ?=
INSECURE ?= false

.PHONY: release
release: ## Push the operator image (ko: linux/amd64+arm64, SBOMs) and write the krew archives, checksums and manifest into dist/: make release VERSION=v0.2.0 REGISTRY=ghcr.io/kubectl-sched
	@[[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]] || { echo "VERSION=$(VERSION) is not a release version: make release VERSION=v0.2.0 REGISTRY=..."; exit 2; }
	@test -n "$(REGISTRY)" || { echo "REGISTRY is not set: make release VERSION=$(VERSION) REGISTRY=ghcr.io/kubectl-sched"; exit 2; }
	go -C hack/tools run ./release -root $(CURDIR) -version $(VERSION) -registry $(REGISTRY) -out dist $(if $(filter true,$(INSECURE)),-insecure)
	go run ./hack/dist -version $(VERSION) -out dist -update-manifest

.PHONY: docker-build
docker-build: ## Build the operator image (needs a Docker engine).
	docker build --build-arg VERSION=$(VERSION) -t $(IMG) .

.PHONY: run
run: manifests ## Run the operator against the current kubeconfig.
	go run ./operator --leader-elect=false

##@ Local cluster

.PHONY: cluster-up
cluster-up: control-plane ## Start the local cluster: control plane, kwok nodes, and the real node if the host can (REAL_NODE=false: kwok only).
	KUBEBUILDER_ASSETS="$$(hack/build-control-plane.sh 2>/dev/null)" go run ./hack/cluster/cmd/localcluster up

.PHONY: cluster-down
cluster-down: ## Stop the simulated cluster (and the demo's operator).
	@d="$${KUBECTL_SCHED_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/kubectl-sched}/cluster"; \
	  if [ -f "$$d/operator.pid" ] && grep -q operator "/proc/$$(cat $$d/operator.pid)/cmdline" 2>/dev/null; then kill "$$(cat $$d/operator.pid)"; fi
	go run ./hack/cluster/cmd/localcluster down

.PHONY: demo
demo: ## The tour: build, start the simulated cluster, install, run the operator, and use kubectl sched.
	go run ./hack/demo

.PHONY: install
install: manifests ## Apply the CRDs and the admission policy to the current kubeconfig's cluster.
	kubectl apply --server-side -k config/crd
	kubectl apply --server-side -k config/policy
