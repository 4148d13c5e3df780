#!/usr/bin/env bash
# Builds the real control plane the test bed runs: kube-apiserver, kube-controller-manager and
# kubectl from k8s.io/kubernetes, etcd from go.etcd.io/etcd/server/v3 and kwok, at the versions
# pinned in versions.env and the module graphs gen.sh wrote. Output: target/controlplane/bin/.
# A second run costs nothing: the binaries are kept under a key of the pinned go.sum files and
# the Go toolchain, in target/ and in ~/.cache/vpnmig-controlplane (which a fresh clone on the
# same machine reuses). Go's own build cache stays where `go env GOCACHE` says.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/versions.env"
export GOWORK=off GOFLAGS=-mod=readonly GOTOOLCHAIN=local CGO_ENABLED=0

key=$( (go version; cat "$here/versions.env" "$here"/*/go.sum) | sha256sum | cut -c1-16)
out="$root/target/controlplane/bin"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vpnmig-controlplane/$key"
bins="kube-apiserver kube-controller-manager kubectl etcd kwok"

have() { for b in $bins; do [ -x "$1/$b" ] || return 1; done; }
# kwok needs stages (how a Node and a Pod become Ready): the pinned module's own "fast"
# stages, read from the module cache, written beside the binaries.
stages() {
  local kdir
  kdir=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  for f in node/fast/node-initialize pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    cat "$kdir/kustomize/stage/$f.yaml"; echo '---'
  done | sed '$d' > "$1/kwok-stages.yaml"
}
if have "$out" && [ "$(cat "$out/.key" 2>/dev/null)" = "$key" ]; then
  [ -s "$out/kwok-stages.yaml" ] || stages "$out"
  echo "control plane: cached in target/controlplane/bin ($key)"; exit 0
fi
mkdir -p "$out"
if have "$cache"; then
  cp "$cache"/* "$out"/ && echo "$key" > "$out/.key" && stages "$out"
  echo "control plane: copied from $cache"; exit 0
fi

started=$SECONDS
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
stamp="-X k8s.io/component-base/version.gitVersion=${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION} -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=${minor}"
tmp="$out/.partial"; rm -rf "$tmp"; mkdir -p "$tmp"
echo "control plane: building ${K8S_VERSION}, etcd ${ETCD_VERSION}, kwok ${KWOK_VERSION} (a cold build on 2 cores takes tens of minutes)"
(cd "$here/k8s" && go build -trimpath -tags=selinux,notest,grpcnotrace -ldflags "-s -w $stamp" -o "$tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl)
echo "control plane: kubernetes built after $((SECONDS - started)) s"
(cd "$here/etcd" && go build -trimpath -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=${ETCD_VERSION}" -o "$tmp/etcd" go.etcd.io/etcd/server/v3)
(cd "$here/kwok" && go build -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION}" -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok)
mv "$tmp"/* "$out"/ && rmdir "$tmp"
stages "$out"
echo "$key" > "$out/.key"
mkdir -p "$cache" && cp "$out"/kube-apiserver "$out"/kube-controller-manager "$out"/kubectl "$out"/etcd "$out"/kwok "$cache"/
echo "control plane: built in $((SECONDS - started)) s"
