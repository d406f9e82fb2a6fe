#!/usr/bin/env bash
# Builds krew (the kubectl plugin manager) from the Go module proxy into the
# cache, for the test that installs kubectl-sched from our own manifest.
# `go install sigs.k8s.io/krew/cmd/krew@v0.5.0` fails here (the proxy refuses
# the version list it asks for), so a wrapper module pins it instead.
# Idempotent; prints the binary's path on its last line.
set -euo pipefail

KREW_VERSION="${KREW_VERSION:-0.5.0}"
CACHE="${KUBECTL_SCHED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-sched}"
BIN="$CACHE/bin/krew-$KREW_VERSION"
WORK="$CACHE/build/krew-$KREW_VERSION"

if [[ -x "$BIN/kubectl-krew" ]]; then
  echo "[build-krew] krew $KREW_VERSION: cached" >&2
  echo "$BIN/kubectl-krew"
  exit 0
fi
echo "[build-krew] krew $KREW_VERSION: building..." >&2
mkdir -p "$BIN" "$WORK"
cat >"$WORK/go.mod" <<GOMOD
module buildkrew

go 1.26

require sigs.k8s.io/krew v$KREW_VERSION
GOMOD
cat >"$WORK/tools.go" <<'GO'
//go:build tools

package tools

import _ "sigs.k8s.io/krew/cmd/krew"
GO
(cd "$WORK" && GOFLAGS=-mod=mod go mod tidy >/dev/null && go build -o "$BIN/kubectl-krew.tmp" sigs.k8s.io/krew/cmd/krew)
mv "$BIN/kubectl-krew.tmp" "$BIN/kubectl-krew"
echo "[build-krew] krew: done" >&2
echo "$BIN/kubectl-krew"
