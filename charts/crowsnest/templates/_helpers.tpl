{{/* The chart name, nameOverride applied. */}}
{{- define "crowsnest.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of every object: the release name when it contains the chart
name (release "crowsnest" gives the names of examples/install), else
<release>-<chart>.
*/}}
{{- define "crowsnest.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "crowsnest.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "crowsnest.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "crowsnest.selectorLabels" . }}
app.kubernetes.io/version: {{ include "crowsnest.tag" . | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The pods' labels that the Deployment, Service and PDB select. */}}
{{- define "crowsnest.selectorLabels" -}}
app.kubernetes.io/name: {{ include "crowsnest.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end }}

{{- define "crowsnest.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "crowsnest.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: set it to an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "crowsnest.tag" -}}
{{- .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/*
crowsnest.validate fails the render on combinations of values that would
install a misbehaving daemon; values.schema.json checks each value alone.
*/}}
{{- define "crowsnest.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail (printf "replicaCount: %v replicas need leaderElection.enabled=true, or every replica writes back" .Values.replicaCount) }}
{{- end }}
{{- end }}

{{/*
The rules of the Role in argocdNamespace (rbac.yaml): the credentials
crowsnest reads there.
*/}}
{{- define "crowsnest.argocdRules" -}}
# Git write-back lists Argo CD's repository and repo-creds Secrets by
# label; pull secrets and git:secret: references are read by name. Secrets
# in other namespaces need a Role like this one there.
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list]
# SSH host keys Argo CD trusts, and the Argo CD Notifications ConfigMap
# when notifications.argocdConfigMap names it here.
- apiGroups: [""]
  resources: [configmaps]
  resourceNames: [argocd-ssh-known-hosts-cm, argocd-notifications-cm]
  verbs: [get]
{{- end }}
