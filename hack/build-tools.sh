#!/usr/bin/env bash
# Builds the pinned tools Sluice's tests, demo and code generation need into bin/, from Go modules
# only (no release downloads are reachable here). Each tool is rebuilt only when its tools module
# (hack/tools/<group>/go.mod + go.sum) changed since the last build: bin/.stamp-<tool> holds the hash.
#
#   hack/build-tools.sh [GROUP...]   groups: gen (controller-gen), envtest (etcd, kube-apiserver,
#                                    kubectl), cluster (envtest + kube-controller-manager,
#                                    kube-scheduler, kwok + stages.yaml). Default: gen envtest.
#
# Cold on 2 cores: kube-apiserver ~10 min, kube-controller-manager ~3 min, etcd ~2 min, the rest
# under a minute each. Warm (nothing changed): under a second.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/bin}
K8S_VERSION=v1.37.2
mkdir -p "$BIN"

log() { printf '[build-tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

stamp_of() { # stamp_of GROUP -> hash of the group's module files
  cat "$ROOT/hack/tools/$1/go.mod" "$ROOT/hack/tools/$1/go.sum" | sha256sum | cut -c1-16
}

# build GROUP NAME PACKAGE [LDFLAGS]: go build PACKAGE inside hack/tools/GROUP into bin/NAME.
build() {
  local group=$1 name=$2 pkg=$3 ldflags=${4:-}
  local want; want=$(stamp_of "$group")
  if [[ -x $BIN/$name && -f $BIN/.stamp-$name && $(cat "$BIN/.stamp-$name") == "$want" ]]; then
    return 0
  fi
  log "building $name from $pkg (cold builds of Kubernetes components take minutes; see header)"
  local t0=$SECONDS
  (cd "$ROOT/hack/tools/$group" && go build -trimpath -ldflags "-s -w $ldflags" -o "$BIN/$name" "$pkg")
  echo "$want" >"$BIN/.stamp-$name"
  log "built $name in $((SECONDS - t0))s"
}

k8s_ldflags() {
  local minor; minor=$(cut -d. -f2 <<<"$K8S_VERSION")
  local v=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    v+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  echo "$v"
}

group_gen() {
  build gen controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen
}

group_envtest() {
  build etcd etcd .
  build k8s kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$(k8s_ldflags)"
  build k8s kubectl k8s.io/kubernetes/cmd/kubectl "$(k8s_ldflags)"
}

group_cluster() {
  group_envtest
  build k8s kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$(k8s_ldflags)"
  build k8s kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$(k8s_ldflags)"
  build k8s kwok sigs.k8s.io/kwok/cmd/kwok
  # kwok exits with "no stages found" without Stage objects: take its defaults from the module.
  local stages; stages=$(cd "$ROOT/hack/tools/k8s" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
  local f out=$BIN/kwok-stages.yaml
  : >"$out.tmp"
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    { echo "---"; echo "# from sigs.k8s.io/kwok/kustomize/stage/$f"; cat "$stages/$f"; } >>"$out.tmp"
  done
  mv "$out.tmp" "$out"
}

groups=("$@")
[[ ${#groups[@]} -gt 0 ]] || groups=(gen envtest)
for g in "${groups[@]}"; do
  case $g in
    gen | envtest | cluster) "group_$g" ;;
    *) echo "unknown group $g (want gen, envtest or cluster)" >&2; exit 2 ;;
  esac
done
