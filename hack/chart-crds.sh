#!/usr/bin/env bash
# Copies the generated manifests into the Helm chart (run after `make manifests`):
#   config/crd/*.yaml     -> CHART/templates/crds/*.yaml, each wrapped in `crds.enabled`, with
#                            `helm.sh/resource-policy: keep` when `crds.keep`, the chart's labels,
#                            and every literal "{{" / "}}" escaped so Helm prints it as written.
#   config/rbac/role.yaml -> CHART/files/manager-rules.yaml: the ClusterRole's rules, less the
#                            coordination.k8s.io leases rule (the chart grants leases only in the
#                            release namespace, through the leader-election Role); likewise
#                            config/rbac/canary -> canary-rules.yaml for installs without the
#                            data-plane controller (namespace-scoped ones among them).
# CRDs live under templates/ rather than crds/ because Helm never upgrades files in crds/.
#
# Usage: hack/chart-crds.sh [CHART_DIR]   (default charts/sluice; tests pass a scratch folder)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
chart="${1:-$root/charts/sluice}"

mkdir -p "$chart/templates/crds" "$chart/files"
rm -f "$chart"/templates/crds/*.yaml

for src in "$root"/config/crd/*.yaml; do
  dst="$chart/templates/crds/$(basename "$src")"
  perl -e '
    my ($inserted, $top) = (0, 0);
    print "{{- if .Values.crds.enabled }}\n";
    while (my $line = <STDIN>) {
      # One pass, so the braces of the inserted escapes are not escaped again.
      $line =~ s/(\{\{|\}\})/{{ "$1" }}/g;
      $top = 1 if $line =~ /^metadata:\s*$/;
      $top = 0 if $line =~ /^spec:\s*$/;
      if ($top && $line =~ /^  name: /) {
        print "  labels:\n    {{- include \"sluice.labels\" . | nindent 4 }}\n";
      }
      print $line;
      if ($top && $line =~ /^  annotations:\s*$/) {
        print "    {{- if .Values.crds.keep }}\n    helm.sh/resource-policy: keep\n    {{- end }}\n";
        $inserted++;
      }
    }
    print "{{- end }}\n";
    die "no metadata.annotations in CRD: cannot add the keep policy\n" unless $inserted == 1;
  ' <"$src" >"$dst"
done

# Rules of the generated ClusterRoles (controller-gen writes one "- apiGroups:" item per rule),
# without the leases rule: manager-rules.yaml (every controller) and canary-rules.yaml (the Canary
# and MetricTemplate controllers).
rules() {
  awk '
    function flush() { if (item != "" && item !~ /- coordination\.k8s\.io\n/) printf "%s", item; item = "" }
    /^rules:/ { inrules = 1; next }
    !inrules  { next }
    /^- /     { flush() }
    { item = item $0 "\n" }
    END { flush() }
  ' "$1" >"$2"
}
rules "$root/config/rbac/role.yaml" "$chart/files/manager-rules.yaml"
rules "$root/config/rbac/canary/role.yaml" "$chart/files/canary-rules.yaml"
