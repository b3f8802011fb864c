{{- /* Names, labels and the rules of both Roles: each defined once, here. */}}

{{- define "sparkgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sparkgate.fullname" -}}
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

{{- define "sparkgate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /* What tells this release's objects apart: stable across upgrades, so selectors never change. */}}
{{- define "sparkgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sparkgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sparkgate.labels" -}}
helm.sh/chart: {{ include "sparkgate.chart" . }}
{{ include "sparkgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sparkgate
{{- end }}

{{- define "sparkgate.nodeSelectorLabels" -}}
{{ include "sparkgate.selectorLabels" . }}
app.kubernetes.io/component: node
{{- end }}

{{- /* Engine (driver) and executor pods. Only stable labels: a node adopts engine pods a previous
version launched, and the NetworkPolicy and the cleanup job find them by these. */}}
{{- define "sparkgate.engineSelectorLabels" -}}
{{ include "sparkgate.selectorLabels" . }}
app.kubernetes.io/component: engine
{{- end }}

{{- define "sparkgate.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "sparkgate.nodeServiceAccountName" -}}
{{- if .Values.serviceAccount.node.create }}
{{- default (include "sparkgate.fullname" .) .Values.serviceAccount.node.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.node.name }}
{{- end }}
{{- end }}

{{- define "sparkgate.engineServiceAccountName" -}}
{{- if .Values.serviceAccount.engine.create }}
{{- default (printf "%s-engine" (include "sparkgate.fullname" .)) .Values.serviceAccount.engine.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.engine.name }}
{{- end }}
{{- end }}

{{- /* The Secret of SPARKGATE_* values that stay out of pod specs (SPARKGATE_STORE_URL): nodes
and engine pods take their environment from it (SPARKGATE_KUBERNETES_ENV_SECRET). */}}
{{- define "sparkgate.envSecretName" -}}
{{- default (printf "%s-env" (include "sparkgate.fullname" .)) .Values.store.existingSecret }}
{{- end }}

{{- /* Engine pods are <prefix>-engine-<id> and their executors <that>-exec-<n>: a DNS label (63
characters) with room for both numbers. A longer name keeps its start and a hash of the whole. */}}
{{- define "sparkgate.namePrefix" -}}
{{- $name := include "sparkgate.fullname" . }}
{{- if le (len $name) 30 }}
{{- $name }}
{{- else }}
{{- printf "%s-%s" ($name | trunc 21 | trimSuffix "-") ($name | sha256sum | trunc 8) }}
{{- end }}
{{- end }}

{{- define "sparkgate.authSecretName" -}}
{{- default (printf "%s-auth" (include "sparkgate.fullname" .)) .Values.auth.existingSecret }}
{{- end }}

{{- define "sparkgate.hasStore" -}}
{{- if or .Values.store.url .Values.store.existingSecret }}true{{ end }}
{{- end }}

{{- define "sparkgate.usesPasswords" -}}
{{- if has "password" (splitList "," (nospace .Values.auth.methods)) }}true{{ end }}
{{- end }}

{{- /* Paths inside every pod of the release (nodes, engines): engines read the same files. */}}
{{- define "sparkgate.accessDir" -}}/etc/sparkgate/access{{- end }}
{{- define "sparkgate.authDir" -}}/etc/sparkgate/auth{{- end }}
{{- define "sparkgate.tlsDir" -}}/etc/sparkgate/tls{{- end }}
{{- define "sparkgate.engineTemplateDir" -}}/etc/sparkgate/engine{{- end }}

{{- /* What a node does with engine pods: launch, follow, delete, read logs (`engines logs`).
Spark's submission client also writes a driver Service and ConfigMap: if the launcher goes
through spark-submit, add them here. */}}
{{- define "sparkgate.nodeRules" -}}
- apiGroups: [""]
  resources: [pods]
  verbs: [create, get, list, watch, delete]
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
{{- end }}

{{- /* What an engine (a Spark driver) does: Spark's executor allocator creates, watches and
deletes its executor pods, all at once on stop (deletecollection). */}}
{{- define "sparkgate.engineRules" -}}
- apiGroups: [""]
  resources: [pods]
  verbs: [create, get, list, watch, delete, deletecollection]
{{- end }}

{{- /* The uninstall cleanup: stop the nodes, then delete every engine and executor pod. */}}
{{- define "sparkgate.cleanupRules" -}}
- apiGroups: [apps]
  resources: [deployments/scale]
  resourceNames: [{{ include "sparkgate.fullname" . }}]
  verbs: [patch]
- apiGroups: [""]
  resources: [pods]
  verbs: [list, deletecollection]
{{- end }}

{{- /* The shared home: a volume of nodes, engines and executors alike. */}}
{{- define "sparkgate.homeVolume" -}}
- name: home
{{- if .Values.storage.existingClaim }}
  persistentVolumeClaim:
    claimName: {{ .Values.storage.existingClaim }}
{{- else if .Values.storage.hostPath }}
  hostPath:
    path: {{ .Values.storage.hostPath }}
    type: DirectoryOrCreate
{{- else }}
  persistentVolumeClaim:
    claimName: {{ include "sparkgate.fullname" . }}-home
{{- end }}
{{- end }}

{{- /* SPARKGATE_KUBERNETES_ENGINE_PODS: the values as they are, the default level's template
being the chart's unless one is given. */}}
{{- define "sparkgate.enginePods" -}}
{{- $pods := deepCopy .Values.engines.pods }}
{{- $default := get $pods "default" }}
{{- if not (hasKey $default "template") }}
{{- $_ := set $default "template" (printf "%s/pod.yaml" (include "sparkgate.engineTemplateDir" .)) }}
{{- end }}
{{- toJson $pods }}
{{- end }}

{{- /* A label selector's text form (k=v,k=v) from a map of labels. */}}
{{- define "sparkgate.selector" -}}
{{- $pairs := list }}
{{- range $key, $value := . }}
{{- $pairs = append $pairs (printf "%s=%s" $key $value) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}
