#!/usr/bin/env bash
# Builds Argo Workflows' workflow-controller from the Go module proxy into
# the cache beside the control plane, for the side-by-side benchmark
# (make bench-argo, hack/test/bench/argo), and copies Argo's CRDs
# (manifests/base/crds/full in the module) beside it. Nothing of Argo
# enters our go.mod: go install builds it as its own module, with its own
# pinned dependencies.
#
# Idempotent: what is already in the cache is not built or copied again.
# Prints the controller's path on its last line; the CRDs are in crds/
# beside it.
#
# Environment:
#   KUBECTL_SCHED_CACHE  cache root (default: ${XDG_CACHE_HOME:-~/.cache}/kubectl-sched)
#   ARGO_VERSION         default v4.0.5 (the only /v4 version the proxy serves here)
set -euo pipefail

ARGO_VERSION="${ARGO_VERSION:-v4.0.5}"
CACHE="${KUBECTL_SCHED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-sched}"
BIN="$CACHE/bin/argo-$ARGO_VERSION"
MOD=github.com/argoproj/argo-workflows/v4
mkdir -p "$BIN"

log() { printf '[build-argo] %s\n' "$*" >&2; }

# GOFLAGS is cleared so that a caller's -mod=... cannot reach Argo's module;
# the commands run outside our module so that they cannot touch go.mod.
cd "$BIN"
if [[ -x workflow-controller ]]; then
  log "workflow-controller $ARGO_VERSION: cached"
else
  log "workflow-controller $ARGO_VERSION: building (about 10 minutes cold on 2 cores)..."
  mkdir -p tmp
  # CGO_ENABLED=0: util/sqldb imports go-sqlite3, which needs cgo otherwise.
  CGO_ENABLED=0 GOFLAGS= GOBIN="$BIN/tmp" go install "$MOD/cmd/workflow-controller@$ARGO_VERSION"
  mv tmp/workflow-controller workflow-controller
  rmdir tmp
  log "workflow-controller: done"
fi
if [[ ! -f crds/.complete ]]; then
  dir=$(GOFLAGS= go mod download -json "$MOD@$ARGO_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [[ -d "$dir/manifests/base/crds/full" ]] || { log "no CRDs in the module ($dir)"; exit 1; }
  rm -rf crds && mkdir crds
  cp "$dir"/manifests/base/crds/full/argoproj.io_*.yaml crds/
  chmod u+w crds/*.yaml
  touch crds/.complete
  log "CRDs: copied from $dir"
fi
echo "$BIN/workflow-controller"
