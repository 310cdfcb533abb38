{{- define "mco.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mco.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "mco.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "mco.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "mco.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mco.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end }}

{{- define "mco.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "mco.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "mco.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mco.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "mco.leaseName" -}}
{{- .Values.controller.leaderElection.lockName }}
{{- end }}

{{/* Every Lease name the controller reads and writes, as a JSON array: the shards', the members' and the inventory-loss state's. */}}
{{- define "mco.leaseNames" -}}
{{- $base := include "mco.leaseName" . }}
{{- $shards := int .Values.controller.leaderElection.shards }}
{{- if lt $shards 1 }}
{{- fail "controller.leaderElection.shards must be at least 1" }}
{{- end }}
{{- $names := list $base }}
{{- range $i := untilStep 1 $shards 1 }}
{{- $names = append $names (printf "%s-%d" $base $i) }}
{{- end }}
{{- $names = append $names (printf "%s-members" $base) }}
{{- $names = append $names (printf "%s-inventory-loss" $base) }}
{{- toJson $names }}
{{- end }}

{{/* The Role and RoleBinding in the lock namespace: one per release, since every release puts them there. */}}
{{- define "mco.lockRoleName" -}}
{{- printf "%s.%s.leader-election" (include "mco.fullname" .) .Release.Namespace }}
{{- end }}

{{/*
`--cluster-profile-namespaces` of every Deployment that reads ClusterProfiles:
profiles outside clusterProfileNamespaces are ignored (empty: every namespace).
*/}}
{{- define "mco.clusterProfileNamespaces" -}}
{{- join "," .Values.clusterProfileNamespaces }}
{{- end }}

{{/*
ClusterProfile read access of one reader (controller, Argo CD jobs, Flux, Config
Sync) when clusterProfileNamespaces is set: a Role and RoleBinding in each of
those namespaces, since the reader lists and watches each on its own. Empty:
nothing here, the reader's ClusterRole has the rule (see mco.clusterProfileRule).
Takes a dict: root ($), name, account, labels (rendered), verbs (a list).
*/}}
{{- define "mco.clusterProfileReaderRoles" -}}
{{- range .root.Values.clusterProfileNamespaces }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $.name }}-clusterprofiles
  namespace: {{ . }}
  labels:
    {{- $.labels | nindent 4 }}
rules:
  - apiGroups: [multicluster.x-k8s.io]
    resources: [clusterprofiles]
    verbs: [{{ join ", " $.verbs }}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $.name }}-clusterprofiles
  namespace: {{ . }}
  labels:
    {{- $.labels | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $.name }}-clusterprofiles
subjects:
  - kind: ServiceAccount
    name: {{ $.account }}
    namespace: {{ $.root.Release.Namespace }}
{{- end }}
{{- end }}

{{/* A reader's ClusterRole rule for ClusterProfiles, only when every namespace is read. Takes a dict: root ($), verbs. */}}
{{- define "mco.clusterProfileRule" -}}
{{- if not .root.Values.clusterProfileNamespaces }}
  - apiGroups: [multicluster.x-k8s.io]
    resources: [clusterprofiles]
    verbs: [{{ join ", " .verbs }}]
{{- end }}
{{- end }}

{{/*
Namespaces the inventory providers write ClusterProfiles in: inventory.namespaces,
else clusterProfileNamespaces. Non-empty: Roles there instead of a ClusterRole.
*/}}
{{- define "mco.inventory.namespaces" -}}
{{- join "," (default .Values.clusterProfileNamespaces .Values.inventory.namespaces) }}
{{- end }}

{{/*
The controller's sizing for .Values.fleetSize, as JSON (docs/install.md has
the table; docs/performance.md the measurements behind it).
*/}}
{{- define "mco.fleetPreset" -}}
{{- $presets := dict
  "small" (dict "workers" 4 "maxOldSpace" 64 "memoryRequest" "160Mi" "memoryLimit" "256Mi")
  "medium" (dict "workers" 4 "maxOldSpace" 128 "memoryRequest" "256Mi" "memoryLimit" "384Mi")
  "large" (dict "workers" 8 "maxOldSpace" 320 "memoryRequest" "512Mi" "memoryLimit" "768Mi")
  "xlarge" (dict "workers" 8 "maxOldSpace" 640 "memoryRequest" "1Gi" "memoryLimit" "1536Mi")
-}}
{{- $preset := get $presets (toString .Values.fleetSize) -}}
{{- if not $preset -}}
{{- fail (printf "fleetSize: %q is not one of small, medium, large, xlarge" (toString .Values.fleetSize)) -}}
{{- end -}}
{{- toJson $preset -}}
{{- end }}
