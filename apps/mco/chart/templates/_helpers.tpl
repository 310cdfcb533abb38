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

{{/*
An integer value, as digits, or a failure naming it: (list "configsync.workers" .Values.configsync.workers).
Helm's own `int` reads "four" as 0, which would reach the command as a valid-looking number, and a values
file's 1048576 is a float64 that prints as 1.048576e+06.
*/}}
{{- define "mco.int" -}}
{{- $name := index . 0 }}
{{- $v := index . 1 }}
{{- $ok := or (kindIs "int" $v) (kindIs "int64" $v) }}
{{- if kindIs "float64" $v }}
{{- $ok = eq $v (float64 (int64 $v)) }}
{{- else if kindIs "string" $v }}
{{- $ok = regexMatch "^-?[0-9]{1,16}$" $v }}
{{- end }}
{{- if not $ok }}
{{- fail (printf "%s: expected an integer, got %s" $name (toJson $v)) }}
{{- end }}
{{- int64 $v }}
{{- end }}

{{/* Every Lease name the controller reads and writes, as a JSON array: the shards', the members' and the inventory-loss state's. */}}
{{- define "mco.leaseNames" -}}
{{- $base := include "mco.leaseName" . }}
{{- $shards := int (include "mco.int" (list "controller.leaderElection.shards" .Values.controller.leaderElection.shards)) }}
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
  "small" (dict "workers" 4 "maxSemiSpace" 1 "maxOldSpace" 64 "memoryRequest" "160Mi" "memoryLimit" "256Mi")
  "medium" (dict "workers" 4 "maxSemiSpace" 1 "maxOldSpace" 128 "memoryRequest" "256Mi" "memoryLimit" "384Mi")
  "large" (dict "workers" 8 "maxSemiSpace" 16 "maxOldSpace" 320 "memoryRequest" "512Mi" "memoryLimit" "768Mi")
  "xlarge" (dict "workers" 8 "maxSemiSpace" 16 "maxOldSpace" 640 "memoryRequest" "1Gi" "memoryLimit" "1536Mi")
-}}
{{- $preset := get $presets (toString .Values.fleetSize) -}}
{{- if not $preset -}}
{{- fail (printf "fleetSize: %q is not one of small, medium, large, xlarge" (toString .Values.fleetSize)) -}}
{{- end -}}
{{- toJson $preset -}}
{{- end }}

{{/*
A ValidatingAdmissionPolicy (and its binding) that lets one mco account write
(create, update, delete) only the Leases named: RBAC cannot limit `create` by
name, and the Leases of the controller (its shards and the inventory-loss
state) must not be written by another component's account. Needs
admissionregistration.k8s.io/v1 (Kubernetes 1.30); not rendered before.
dict: root, name (the policy's name prefix), account (user name), leases (names), labels.
*/}}
{{- define "mco.leaseWriterPolicy" -}}
{{- if semverCompare ">=1.30-0" .root.Capabilities.KubeVersion.Version }}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {{ .name }}.leases
  labels:
    {{- .labels | nindent 4 }}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [coordination.k8s.io]
        apiVersions: ['*']
        operations: [CREATE, UPDATE, DELETE]
        resources: [leases]
  matchConditions:
    - name: account
      expression: request.userInfo.username == {{ .account | quote }}
  validations:
    - expression: request.name in {{ toJson .leases }}
      messageExpression: "'the account ' + request.userInfo.username + ' may write only its own Leases, not ' + request.name"
      reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {{ .name }}.leases
  labels:
    {{- .labels | nindent 4 }}
spec:
  policyName: {{ .name }}.leases
  validationActions: [Deny]
{{- end }}
{{- end }}

{{/*
RBAC cannot limit a patch to fields. A ValidatingAdmissionPolicy (and its
binding) that lets a delivery adapter's account change, on a placement, only
what is its own: never the spec (what a tenant asked for is the tenant's) or
the labels; of the annotations and finalizers only its own (the others are
other components'); of the status only its own condition (status.clusters is
what every adapter delivers from). A status update ignores metadata and a
main-resource update ignores status, so each rule holds for both. The status
fields are those of the CRD (a chart test compares them).
dict: root, name, account (user name), who (for messages), annotation,
finalizer, condition (its own; '' when none), labels.
*/}}
{{- define "mco.placementWritesPolicy" -}}
{{- $status := list "clusters" "failBack" "lastAdditionTime" "lastClusterRemovalTime" "observedGeneration" }}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {{ .name }}
  labels:
    {{- .labels | nindent 4 }}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [orchestra.multicluster.x-k8s.io]
        apiVersions: ['*']
        operations: [UPDATE]
        resources: [multikubernetesclusterplacements, multikubernetesclusterplacements/status]
  matchConditions:
    - name: account
      expression: request.userInfo.username == {{ .account | quote }}
  variables:
    - name: ownAnnotation
      expression: {{ .annotation | squote | quote }}
    - name: ownFinalizer
      expression: {{ .finalizer | squote | quote }}
    - name: ownCondition
      expression: {{ .condition | squote | quote }}
    - name: annotations
      expression: "has(object.metadata.annotations) ? object.metadata.annotations : {}"
    - name: oldAnnotations
      expression: "has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}"
    - name: labels
      expression: "has(object.metadata.labels) ? object.metadata.labels : {}"
    - name: oldLabels
      expression: "has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}"
  validations:
    - expression: has(object.spec) == has(oldObject.spec) && (!has(object.spec) || object.spec == oldObject.spec)
      message: {{ .who }} may not change a placement's spec
      reason: Forbidden
    - expression: >-
        variables.labels.all(k, k in variables.oldLabels && variables.oldLabels[k] == variables.labels[k]) &&
        variables.oldLabels.all(k, k in variables.labels)
      message: {{ .who }} may not change a placement's labels
      reason: Forbidden
    - expression: >-
        variables.annotations.all(k, k == variables.ownAnnotation || (k in variables.oldAnnotations && variables.oldAnnotations[k] == variables.annotations[k])) &&
        variables.oldAnnotations.all(k, k == variables.ownAnnotation || k in variables.annotations)
      message: {{ .who }} may not change a placement's annotations but its own ({{ .annotation | default "none" }})
      reason: Forbidden
    - expression: >-
        (has(object.metadata.finalizers) ? object.metadata.finalizers.filter(f, f != variables.ownFinalizer) : []) ==
        (has(oldObject.metadata.finalizers) ? oldObject.metadata.finalizers.filter(f, f != variables.ownFinalizer) : [])
      message: {{ .who }} may not add or remove a placement's finalizers but its own ({{ .finalizer | default "none" }})
      reason: Forbidden
    - expression: >-
        {{- range $i, $field := $status }}
        {{ if $i }}&& {{ end }}(has(object.status) && has(object.status.{{ $field }})) == (has(oldObject.status) && has(oldObject.status.{{ $field }})) &&
        (!(has(object.status) && has(object.status.{{ $field }})) || object.status.{{ $field }} == oldObject.status.{{ $field }})
        {{- end }}
      message: {{ .who }} may not change a placement's status but its own condition ({{ .condition }})
      reason: Forbidden
    - expression: >-
        (has(object.status) && has(object.status.conditions) ? object.status.conditions.filter(c, c.type != variables.ownCondition) : []) ==
        (has(oldObject.status) && has(oldObject.status.conditions) ? oldObject.status.conditions.filter(c, c.type != variables.ownCondition) : [])
      message: {{ .who }} may not change a placement's conditions but its own ({{ .condition }})
      reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {{ .name }}
  labels:
    {{- .labels | nindent 4 }}
spec:
  policyName: {{ .name }}
  validationActions: [Deny]
{{- end }}
