#!/usr/bin/env bash
# Fails when code is not gofmt-clean, go vet complains, or any generated file (deepcopy, CRD YAML,
# RBAC, the chart's copies) differs from what `make generate manifests` produces from the sources
# in the work tree — committed or not. The work tree is left exactly as it was.
set -euo pipefail
cd "$(dirname "$0")/.."

fail=0
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [[ -n $unformatted ]]; then
  echo "gofmt: these files need formatting:"; echo "$unformatted"; fail=1
fi
go vet ./... || fail=1

generated=(api/v1alpha1/zz_generated.deepcopy.go config/crd config/rbac charts/sluice/templates/crds charts/sluice/files)
snapshot=$(mktemp -d)
trap 'rm -rf "$snapshot"' EXIT
for p in "${generated[@]}"; do
  mkdir -p "$snapshot/before/$(dirname "$p")"
  cp -a "$p" "$snapshot/before/$p"
done
restore() {
  for p in "${generated[@]}"; do
    rm -rf "$p"
    cp -a "$snapshot/before/$p" "$p"
  done
}
if ! make -s generate manifests >"$snapshot/gen.log" 2>&1; then
  cat "$snapshot/gen.log"; restore; exit 1
fi
for p in "${generated[@]}"; do
  mkdir -p "$snapshot/after/$(dirname "$p")"
  cp -a "$p" "$snapshot/after/$p"
done
restore
if ! diff -ru "$snapshot/before" "$snapshot/after"; then
  echo "generated files differ from what 'make generate manifests' produces (above: before -> regenerated);"
  echo "do not edit them by hand: run 'make generate manifests' and commit the result"
  fail=1
fi
untracked=$(git ls-files --others --exclude-standard -- "${generated[@]}")
if [[ -n $untracked ]]; then
  echo "generated files not committed:"; echo "$untracked"; fail=1
fi
exit $fail
