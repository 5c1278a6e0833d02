{{- define "a01gym.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "a01gym.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "a01gym.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "a01gym.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: a01gym
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "a01gym.selector" -}}
app.kubernetes.io/name: {{ include "a01gym.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "a01gym.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "a01gym.sandboxImage" -}}
{{- printf "%s:%s" .Values.sandbox.image.repository (default .Chart.AppVersion .Values.sandbox.image.tag) -}}
{{- end -}}

{{- define "a01gym.cacheClaim" -}}
{{- default (printf "%s-scenarios" (include "a01gym.fullname" .)) .Values.scenarioCache.existingClaim -}}
{{- end -}}

{{- /* Namespace of Episodes, SandboxPools, sandbox pods and their token Secrets. */ -}}
{{- define "a01gym.sandboxNamespace" -}}
{{- default (printf "%s-sandboxes" .Release.Namespace) .Values.sandbox.namespace.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "a01gym.gatewayTokenSecret" -}}
{{- default (printf "%s-gateway-token" (include "a01gym.fullname" .)) .Values.gateway.tokenSecret -}}
{{- end -}}
