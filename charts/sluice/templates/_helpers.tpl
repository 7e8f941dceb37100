{{/* Chart name, overridable. */}}
{{- define "sluice.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name of the release's objects: the release name when it already holds the chart name. */}}
{{- define "sluice.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "sluice.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "sluice.labels" -}}
helm.sh/chart: {{ include "sluice.chart" . }}
{{ include "sluice.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sluice
{{- end }}

{{/* Labels that select the manager's pods. */}}
{{- define "sluice.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sluice.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sluice.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sluice.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "sluice.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Whether the cluster-scoped data-plane controller runs: dataPlane.enabled, else on for a
cluster-wide install. Never with watchNamespaces: a manager watching some namespaces cannot see a
data plane's others, and does not start the controller (so its RBAC is not granted either). */}}
{{- define "sluice.dataPlaneEnabled" -}}
{{- if .Values.watchNamespaces }}
{{- if eq .Values.dataPlane.enabled true }}
{{- fail "dataPlane.enabled needs a cluster-wide install: with watchNamespaces the manager does not run the data-plane controller" }}
{{- end }}
{{- false }}
{{- else if kindIs "bool" .Values.dataPlane.enabled }}{{ .Values.dataPlane.enabled }}{{ else }}{{ true }}{{ end }}
{{- end }}

{{/* Whether /metrics is HTTPS with the apiserver's authentication and authorization:
metrics.secure, else on for a cluster-wide install only. TokenReviews and SubjectAccessReviews are
cluster-scoped, so asking them needs a ClusterRoleBinding, which a namespace-scoped install
(watchNamespaces) does not get unless metrics.secure says so. */}}
{{- define "sluice.metricsSecure" -}}
{{- if kindIs "bool" .Values.metrics.secure }}{{ .Values.metrics.secure }}{{ else }}{{ empty .Values.watchNamespaces }}{{ end }}
{{- end }}

{{/* The manager Deployments, one per shard, as a JSON list of {name, fullname, replicas, selector,
dataPlane}. Without .Values.shards: one unnamed shard handling every Canary, as before sharding.
With shards: each shard i > 0 selects the Canaries labelled sluice.dev/shard=<its name>; the
first shard is the default and selects every other Canary (sluice.dev/shard notin (<the other
names>)): unlabelled ones and ones naming a shard that does not exist. So every Canary is handled
by exactly one shard. The cluster-scoped DataPlane controller runs in the default shard only. */}}
{{- define "sluice.shards" -}}
{{- $root := . }}
{{- $fullname := include "sluice.fullname" . }}
{{- $dataPlane := eq (include "sluice.dataPlaneEnabled" .) "true" }}
{{- $out := list }}
{{- if not .Values.shards }}
{{- $out = append $out (dict "name" "" "fullname" $fullname "replicas" (int .Values.replicaCount) "selector" "" "dataPlane" $dataPlane) }}
{{- else }}
{{- $names := list }}
{{- range .Values.shards }}
{{- if has .name $names }}{{ fail (printf "shards: the name %q is used twice" .name) }}{{ end }}
{{- $names = append $names .name }}
{{- end }}
{{- range $i, $s := .Values.shards }}
{{- $replicas := int $root.Values.replicaCount }}
{{- if hasKey $s "replicas" }}{{ $replicas = int $s.replicas }}{{ end }}
{{- $selector := printf "sluice.dev/shard=%s" $s.name }}
{{- if eq $i 0 }}
{{- if gt (len $names) 1 }}
{{- $selector = printf "sluice.dev/shard notin (%s)" (rest $names | join ",") }}
{{- else }}
{{- $selector = "" }}
{{- end }}
{{- end }}
{{- $out = append $out (dict "name" $s.name "fullname" (printf "%s-%s" $fullname $s.name | trunc 63 | trimSuffix "-") "replicas" $replicas "selector" $selector "dataPlane" (and $dataPlane (eq $i 0))) }}
{{- end }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* Labels that select one shard's manager pods (the dict of sluice.shards, with "root"). */}}
{{- define "sluice.shardSelectorLabels" -}}
{{ include "sluice.selectorLabels" .root }}
{{- if .shard.name }}
sluice.dev/shard: {{ .shard.name }}
{{- end }}
{{- end }}
