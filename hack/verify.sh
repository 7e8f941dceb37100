#!/usr/bin/env bash
# Fails when code is not gofmt-clean, go vet complains, or generated files (deepcopy, CRD YAML,
# RBAC) differ from what `make generate manifests` produces.
set -euo pipefail
cd "$(dirname "$0")/.."

fail=0
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [[ -n $unformatted ]]; then
  echo "gofmt: these files need formatting:"; echo "$unformatted"; fail=1
fi
go vet ./... || fail=1

# Regenerate into the work tree, then compare with the index/HEAD.
generated=(api/v1alpha1/zz_generated.deepcopy.go config/crd config/rbac charts/sluice/templates/crds charts/sluice/files)
make -s generate manifests >/dev/null
if ! git diff --exit-code --stat -- "${generated[@]}"; then
  echo "generated files are out of date: run 'make generate manifests' and commit the result"; fail=1
fi
untracked=$(git ls-files --others --exclude-standard -- "${generated[@]}")
if [[ -n $untracked ]]; then
  echo "generated files not committed:"; echo "$untracked"; fail=1
fi
exit $fail
