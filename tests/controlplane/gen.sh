#!/usr/bin/env bash
# Regenerates the wrapper modules' go.mod and go.sum from the pinned versions in versions.env.
# k8s.io/kubernetes requires its staging modules at v0.0.0 and maps them to ./staging with
# replace directives, which a dependent module ignores: each one is replaced here with its
# published version, and the list is read from k8s.io/kubernetes' own go.mod (never copied).
# Run it after changing versions.env; build.sh only builds what this wrote.
set -euo pipefail
cd "$(dirname "$0")"
. ./versions.env
export GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
staging_version="v0.${K8S_VERSION#v1.}"

mk() { # DIR MODULE
  rm -rf "$1" && mkdir -p "$1"
  (cd "$1" && go mod init "$2" >/dev/null 2>&1)
}

# kube-apiserver, kube-controller-manager, kubectl
mk k8s vpnmig.invalid/controlplane/k8s
gomod=$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
(
  cd k8s
  go mod edit -require="k8s.io/kubernetes@${K8S_VERSION}"
  for m in $(awk '$2=="v0.0.0"{print $1}' "$gomod"); do
    go mod edit -replace="$m=$m@${staging_version}"
  done
  cat > tools.go <<'GO'
//go:build tools

// Package tools pins the control plane's commands in this module's graph.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  go mod tidy
)

# etcd: the server module's root package is a main
mk etcd vpnmig.invalid/controlplane/etcd
(
  cd etcd
  go mod edit -require="go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
  printf '//go:build tools\n\n// Package tools pins etcd in this module graph.\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
  go mod tidy
)

# kwok: the kubelet stand-in that answers pod exec with a local command
mk kwok vpnmig.invalid/controlplane/kwok
(
  cd kwok
  go mod edit -require="sigs.k8s.io/kwok@${KWOK_VERSION}"
  printf '//go:build tools\n\n// Package tools pins kwok in this module graph.\npackage tools\n\nimport _ "sigs.k8s.io/kwok/cmd/kwok"\n' > tools.go
  go mod tidy
)
echo "regenerated k8s/, etcd/ and kwok/ for ${K8S_VERSION}, etcd ${ETCD_VERSION}, kwok ${KWOK_VERSION}"
