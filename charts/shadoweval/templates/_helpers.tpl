{{/*
Named templates of the shadoweval chart.

The templates a parent chart includes for sidecar mode (shadoweval.sidecarContainer,
shadoweval.sidecarVolumes, shadoweval.sidecarPodAnnotations) and everything they
call use only .Values and .Release, never .Chart or .Files, so that a parent chart
can call them with
  (dict "Values" .Values.shadoweval "Release" .Release)
where .Values.shadoweval holds this chart's values (Helm merges the subchart's
defaults in).
*/}}

{{/* The image's tag when image.tag is empty; kept equal to Chart.yaml's appVersion
(chartcheck tests it), so that the sidecar templates need no .Chart. */}}
{{- define "shadoweval.appVersion" -}}0.1.0{{- end }}

{{/* Mount paths inside the container; the Dockerfile uses the same ones. */}}
{{- define "shadoweval.configPath" -}}/etc/shadoweval/config.yaml{{- end }}
{{- define "shadoweval.natsAuthDir" -}}/etc/shadoweval/nats{{- end }}
{{- define "shadoweval.natsTLSDir" -}}/etc/shadoweval/nats-tls{{- end }}
{{- define "shadoweval.adminTokenDir" -}}/etc/shadoweval/admin{{- end }}

{{- define "shadoweval.name" -}}
{{- default "shadoweval" .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "shadoweval.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "shadoweval.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Names of the objects the chart renders. */}}
{{- define "shadoweval.configMapName" -}}{{ include "shadoweval.fullname" . | trunc 56 | trimSuffix "-" }}-config{{- end }}
{{- define "shadoweval.goldConfigMapName" -}}{{ include "shadoweval.fullname" . | trunc 58 | trimSuffix "-" }}-gold{{- end }}
{{- define "shadoweval.secretName" -}}{{ include "shadoweval.fullname" . }}{{- end }}
{{/* The StatefulSet controller labels each pod with controller-revision-hash
"<name>-<hash of up to 10 characters>", a label value of at most 63: so at
most 52 characters for the StatefulSet's name. */}}
{{- define "shadoweval.statefulSetName" -}}{{ include "shadoweval.fullname" . | trunc 52 | trimSuffix "-" }}{{- end }}
{{- define "shadoweval.headlessServiceName" -}}{{ include "shadoweval.fullname" . | trunc 54 | trimSuffix "-" }}-headless{{- end }}

{{- define "shadoweval.selectorLabels" -}}
app.kubernetes.io/name: {{ include "shadoweval.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of the chart's own objects (these may use .Chart). */}}
{{- define "shadoweval.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "shadoweval.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: shadoweval
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "shadoweval.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default (include "shadoweval.appVersion" .) }}
{{- end -}}
{{- end }}

{{- define "shadoweval.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "shadoweval.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret each group of credentials comes from. */}}
{{- define "shadoweval.natsAuthSecretName" -}}{{ .Values.nats.auth.existingSecret | default (include "shadoweval.secretName" .) }}{{- end }}
{{- define "shadoweval.natsTLSSecretName" -}}{{ .Values.nats.tls.existingSecret | default (include "shadoweval.secretName" .) }}{{- end }}
{{- define "shadoweval.adminTokenSecretName" -}}{{ .Values.adminToken.existingSecret | default (include "shadoweval.secretName" .) }}{{- end }}

{{/* Passwords and tokens reach NATS inside the --nats-url flag, so the chart
stores them percent-encoded (url.QueryEscape, with a space as %20). */}}
{{- define "shadoweval.urlEscape" -}}{{ . | urlquery | replace "+" "%20" }}{{- end }}

{{/* "true" when the chart creates its own Secret. */}}
{{- define "shadoweval.createSecret" -}}
{{- $v := .Values -}}
{{- if or (and (ne $v.nats.auth.method "none") (not $v.nats.auth.existingSecret)) (and $v.nats.tls.enabled (not $v.nats.tls.existingSecret)) (and $v.adminToken.enabled (not $v.adminToken.existingSecret)) -}}
true
{{- end -}}
{{- end }}

{{/* The configured NATS URL (values.config.nats.url), "" for the embedded server. */}}
{{- define "shadoweval.natsURL" -}}
{{- $cfg := .Values.config | default dict -}}
{{- $nats := get $cfg "nats" | default dict -}}
{{- get $nats "url" | default "" -}}
{{- end }}

{{/*
The --nats-url flag value for user/password and token authentication: each
comma-separated server of config.nats.url with the credentials spliced in as
$(VAR) references, which the kubelet expands from the Secret-backed environment.
*/}}
{{- define "shadoweval.natsAuthURL" -}}
{{- $method := .Values.nats.auth.method -}}
{{- $cred := "$(SHADOWEVAL_NATS_TOKEN)" -}}
{{- if eq $method "userPassword" -}}
{{- $cred = "$(SHADOWEVAL_NATS_USER):$(SHADOWEVAL_NATS_PASSWORD)" -}}
{{- end -}}
{{- $servers := list -}}
{{- range $s := splitList "," (include "shadoweval.natsURL" .) -}}
{{- $s = trim $s -}}
{{- if not (contains "://" $s) -}}
{{- $s = printf "nats://%s" $s -}}
{{- end -}}
{{- $u := urlParse $s -}}
{{- $servers = append $servers (printf "%s://%s@%s" $u.scheme $cred $u.host) -}}
{{- end -}}
{{- join "," $servers -}}
{{- end }}

{{/*
Checks of the values that the schema cannot express; each fails the render with
a message naming the value. Called by shadoweval.configYAML, which every mode
renders.
*/}}
{{- define "shadoweval.validate" -}}
{{- $v := .Values -}}
{{- $cfg := $v.config | default dict -}}
{{- $nats := get $cfg "nats" | default dict -}}
{{- $url := include "shadoweval.natsURL" . -}}
{{- range $k := list "user" "password" "token" -}}
{{- if get $nats $k -}}
{{- fail (printf "config.nats.%s: secrets never go in the configuration (a ConfigMap); use nats.auth (method userPassword or token) with a Secret" $k) -}}
{{- end -}}
{{- end -}}
{{- if contains "@" $url -}}
{{- fail "config.nats.url: holds credentials (user@host); they would end up in a ConfigMap: use nats.auth instead" -}}
{{- end -}}
{{- if and (ne $v.nats.auth.method "none") (not $url) -}}
{{- fail (printf "nats.auth.method %s needs config.nats.url: the embedded NATS server has no authentication" $v.nats.auth.method) -}}
{{- end -}}
{{- if and $v.nats.tls.enabled (not $url) -}}
{{- fail "nats.tls.enabled needs config.nats.url: the embedded NATS server has no TLS" -}}
{{- end -}}
{{- if and (has $v.nats.auth.method (list "nkey" "creds")) (or (get $nats "creds_file") (get $nats "nkey_seed_file")) -}}
{{- fail "config.nats.creds_file / nkey_seed_file: set by the chart from nats.auth; leave them out" -}}
{{- end -}}
{{- if and $v.nats.tls.enabled (get $nats "tls") -}}
{{- fail "config.nats.tls: set by the chart from nats.tls; leave it out" -}}
{{- end -}}
{{- $http := get $cfg "http" | default dict -}}
{{- if and $v.adminToken.enabled (get $http "admin_token_file") -}}
{{- fail "config.http.admin_token_file: set by the chart from adminToken; leave it out" -}}
{{- end -}}
{{- $a := $v.nats.auth -}}
{{- if not $a.existingSecret -}}
{{- if eq $a.method "userPassword" -}}
{{- if or (not $a.user) (not $a.password) -}}
{{- fail "nats.auth.method userPassword: set nats.auth.user and nats.auth.password, or nats.auth.existingSecret" -}}
{{- end -}}
{{- else if eq $a.method "token" -}}
{{- if not $a.token -}}{{- fail "nats.auth.method token: set nats.auth.token, or nats.auth.existingSecret" -}}{{- end -}}
{{- else if eq $a.method "nkey" -}}
{{- if not $a.nkeySeed -}}{{- fail "nats.auth.method nkey: set nats.auth.nkeySeed, or nats.auth.existingSecret" -}}{{- end -}}
{{- else if eq $a.method "creds" -}}
{{- if not $a.creds -}}{{- fail "nats.auth.method creds: set nats.auth.creds, or nats.auth.existingSecret" -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- $t := $v.nats.tls -}}
{{- if and $t.enabled (not $t.existingSecret) -}}
{{- if not $t.ca -}}{{- fail "nats.tls.enabled: set nats.tls.ca, or nats.tls.existingSecret" -}}{{- end -}}
{{- if and $t.clientCertificate (or (not $t.cert) (not $t.key)) -}}{{- fail "nats.tls.clientCertificate: set nats.tls.cert and nats.tls.key, or nats.tls.existingSecret" -}}{{- end -}}
{{- end -}}
{{- if and $v.adminToken.enabled (not $v.adminToken.existingSecret) (not $v.adminToken.value) -}}
{{- fail "adminToken.enabled: set adminToken.value, or adminToken.existingSecret" -}}
{{- end -}}
{{- $sources := 0 -}}
{{- range $s := list $v.gold.inline $v.gold.configMap $v.gold.existingClaim -}}
{{- if $s }}{{ $sources = add1 $sources }}{{ end -}}
{{- end -}}
{{- if $v.gold.volume }}{{ $sources = add1 $sources }}{{ end -}}
{{- if gt $sources 1 -}}
{{- fail "gold: set one of gold.inline, gold.configMap, gold.existingClaim and gold.volume, not several" -}}
{{- end -}}
{{- if and (eq $v.mode "deployment") (gt (int $v.replicaCount) 1) (not $url) -}}
{{- fail "replicaCount > 1 needs an external NATS (config.nats.url): each replica would start its own embedded server and see no events" -}}
{{- end -}}
{{- $cluster := get $cfg "cluster" | default dict -}}
{{- $partitions := int (get $cluster "partitions" | default 0) -}}
{{- if eq $v.mode "cluster" -}}
{{- if not $url -}}
{{- fail "mode cluster needs config.nats.url (an external NATS with JetStream): each pod would start its own embedded server and the pods would share nothing" -}}
{{- end -}}
{{- if not (get $nats "jetstream") -}}
{{- fail "mode cluster needs config.nats.jetstream: true (the partitions are JetStream consumer groups)" -}}
{{- end -}}
{{- if le $partitions 0 -}}
{{- fail "mode cluster needs config.cluster.partitions > 0: the pods split the input by partition" -}}
{{- end -}}
{{- if get $cluster "member" -}}
{{- fail "config.cluster.member: leave it out in mode cluster; every pod shares the ConfigMap, and each takes its member from the ordinal of its pod name" -}}
{{- end -}}
{{- $members := int (get $cluster "members" | default $partitions) -}}
{{- if lt (int $v.replicaCount) $members -}}
{{- fail (printf "replicaCount (%d) is below config.cluster.members (%d, default config.cluster.partitions): the members without a pod would leave their partitions unread" (int $v.replicaCount) $members) -}}
{{- end -}}
{{- else if and (eq $v.mode "deployment") (gt $partitions 0) (not (get $cluster "member")) -}}
{{- fail "config.cluster.partitions in mode deployment needs config.cluster.member: a Deployment's pod names carry no ordinal to take the member from; use mode cluster (a StatefulSet)" -}}
{{- end -}}
{{- $paths := list (include "shadoweval.configPath" .) $v.gold.mountPath $v.data.mountPath "/tmp" (include "shadoweval.natsAuthDir" .) (include "shadoweval.natsTLSDir" .) (include "shadoweval.adminTokenDir" .) -}}
{{- if ne (len $paths) (len (uniq $paths)) -}}
{{- fail (printf "gold.mountPath and data.mountPath must differ from each other and from the chart's own mount paths %v" $paths) -}}
{{- end -}}
{{- range $i, $a := $paths -}}
{{- range $j, $b := $paths -}}
{{- if and (ne $i $j) (hasPrefix (printf "%s/" (trimSuffix "/" $a)) $b) -}}
{{- fail (printf "mount path %s is inside %s: gold.mountPath and data.mountPath must not hold, nor lie inside, each other or the chart's own mount paths %v" $b $a $paths) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/*
The configuration file: values.config with the chart-owned keys filled in (see
values.yaml), as YAML.
*/}}
{{- define "shadoweval.configYAML" -}}
{{- include "shadoweval.validate" . -}}
{{- $v := .Values -}}
{{- $cfg := deepCopy ($v.config | default dict) -}}
{{- $nats := get $cfg "nats" | default dict -}}
{{- $url := include "shadoweval.natsURL" . -}}
{{- if and (not $url) (not (get $nats "store_dir")) -}}
{{- $_ := set $nats "store_dir" (printf "%s/jetstream" (trimSuffix "/" $v.data.mountPath)) -}}
{{- end -}}
{{- if and (eq $v.mode "cluster") (not (hasKey $nats "replicas")) -}}
{{- /* A scaled-out fleet runs on a NATS cluster: its stream and buckets survive a lost server. */ -}}
{{- $_ := set $nats "replicas" 3 -}}
{{- end -}}
{{- if eq $v.nats.auth.method "nkey" -}}
{{- $_ := set $nats "nkey_seed_file" (printf "%s/%s" (include "shadoweval.natsAuthDir" .) $v.nats.auth.secretKeys.nkeySeed) -}}
{{- else if eq $v.nats.auth.method "creds" -}}
{{- $_ := set $nats "creds_file" (printf "%s/%s" (include "shadoweval.natsAuthDir" .) $v.nats.auth.secretKeys.creds) -}}
{{- end -}}
{{- if $v.nats.tls.enabled -}}
{{- $dir := include "shadoweval.natsTLSDir" . -}}
{{- $tls := dict "ca_file" (printf "%s/%s" $dir $v.nats.tls.secretKeys.ca) -}}
{{- if $v.nats.tls.clientCertificate -}}
{{- $_ := set $tls "cert_file" (printf "%s/%s" $dir $v.nats.tls.secretKeys.cert) -}}
{{- $_ := set $tls "key_file" (printf "%s/%s" $dir $v.nats.tls.secretKeys.key) -}}
{{- end -}}
{{- $_ := set $nats "tls" $tls -}}
{{- end -}}
{{- if $nats }}{{ $_ := set $cfg "nats" $nats }}{{ end -}}
{{- $gold := get $cfg "gold" | default dict -}}
{{- $_ := set $gold "file" (printf "%s/%s" (trimSuffix "/" $v.gold.mountPath) $v.gold.fileName) -}}
{{- $_ := set $cfg "gold" $gold -}}
{{- $http := get $cfg "http" | default dict -}}
{{- $_ := set $http "listen" (printf ":%d" (int $v.containerPort)) -}}
{{- if $v.adminToken.enabled -}}
{{- $_ := set $http "admin_token_file" (printf "%s/%s" (include "shadoweval.adminTokenDir" .) $v.adminToken.secretKey) -}}
{{- end -}}
{{- $_ := set $cfg "http" $http -}}
# shadoweval configuration rendered by the shadoweval Helm chart from
# values.config; `shadoweval config defaults` lists every key.
{{ toYaml $cfg }}
{{- end }}

{{/* Volumes of the shadoweval container, as list items. */}}
{{- define "shadoweval.volumes" -}}
{{- $v := .Values -}}
- name: shadoweval-config
  configMap:
    name: {{ include "shadoweval.configMapName" . }}
    items:
      - key: config.yaml
        path: config.yaml
- name: shadoweval-gold
{{- if $v.gold.configMap }}
  configMap:
    name: {{ $v.gold.configMap }}
    items:
      - key: {{ $v.gold.fileName }}
        path: {{ $v.gold.fileName }}
{{- else if $v.gold.existingClaim }}
  persistentVolumeClaim:
    claimName: {{ $v.gold.existingClaim }}
    readOnly: true
{{- else if $v.gold.volume }}
  {{- toYaml $v.gold.volume | nindent 2 }}
{{- else }}
  configMap:
    name: {{ include "shadoweval.goldConfigMapName" . }}
    items:
      - key: {{ $v.gold.fileName }}
        path: {{ $v.gold.fileName }}
{{- end }}
- name: shadoweval-data
{{- if $v.data.existingClaim }}
  persistentVolumeClaim:
    claimName: {{ $v.data.existingClaim }}
{{- else if $v.data.sizeLimit }}
  emptyDir:
    sizeLimit: {{ $v.data.sizeLimit }}
{{- else }}
  emptyDir: {}
{{- end }}
- name: shadoweval-tmp
  emptyDir:
    sizeLimit: 64Mi
{{- if has $v.nats.auth.method (list "nkey" "creds") }}
{{- $key := ternary $v.nats.auth.secretKeys.nkeySeed $v.nats.auth.secretKeys.creds (eq $v.nats.auth.method "nkey") }}
- name: shadoweval-nats-auth
  secret:
    secretName: {{ include "shadoweval.natsAuthSecretName" . }}
    defaultMode: 0444
    items:
      - key: {{ $key }}
        path: {{ $key }}
{{- end }}
{{- if $v.nats.tls.enabled }}
- name: shadoweval-nats-tls
  secret:
    secretName: {{ include "shadoweval.natsTLSSecretName" . }}
    defaultMode: 0444
    items:
      - key: {{ $v.nats.tls.secretKeys.ca }}
        path: {{ $v.nats.tls.secretKeys.ca }}
      {{- if $v.nats.tls.clientCertificate }}
      - key: {{ $v.nats.tls.secretKeys.cert }}
        path: {{ $v.nats.tls.secretKeys.cert }}
      - key: {{ $v.nats.tls.secretKeys.key }}
        path: {{ $v.nats.tls.secretKeys.key }}
      {{- end }}
{{- end }}
{{- if $v.adminToken.enabled }}
- name: shadoweval-admin-token
  secret:
    secretName: {{ include "shadoweval.adminTokenSecretName" . }}
    defaultMode: 0444
    items:
      - key: {{ $v.adminToken.secretKey }}
        path: {{ $v.adminToken.secretKey }}
{{- end }}
{{- with $v.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The shadoweval container, as one list item. */}}
{{- define "shadoweval.container" -}}
{{- $v := .Values -}}
{{- $auth := $v.nats.auth -}}
- name: {{ $v.sidecar.containerName }}
  image: {{ include "shadoweval.image" . | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  args:
    - run
    - --config
    - {{ include "shadoweval.configPath" . }}
    {{- if has $auth.method (list "userPassword" "token") }}
    - --nats-url={{ include "shadoweval.natsAuthURL" . }}
    {{- end }}
    {{- range $v.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  {{- if or (has $auth.method (list "userPassword" "token")) $v.extraEnv }}
  env:
    {{- if eq $auth.method "userPassword" }}
    - name: SHADOWEVAL_NATS_USER
      valueFrom:
        secretKeyRef:
          name: {{ include "shadoweval.natsAuthSecretName" . }}
          key: {{ $auth.secretKeys.user }}
    - name: SHADOWEVAL_NATS_PASSWORD
      valueFrom:
        secretKeyRef:
          name: {{ include "shadoweval.natsAuthSecretName" . }}
          key: {{ $auth.secretKeys.password }}
    {{- else if eq $auth.method "token" }}
    - name: SHADOWEVAL_NATS_TOKEN
      valueFrom:
        secretKeyRef:
          name: {{ include "shadoweval.natsAuthSecretName" . }}
          key: {{ $auth.secretKeys.token }}
    {{- end }}
    {{- with $v.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
  ports:
    - name: http-metrics
      containerPort: {{ $v.containerPort }}
      protocol: TCP
  {{- if $v.startupProbe.enabled }}
  startupProbe:
    httpGet:
      path: /-/healthy
      port: http-metrics
    periodSeconds: {{ $v.startupProbe.periodSeconds }}
    timeoutSeconds: {{ $v.startupProbe.timeoutSeconds }}
    failureThreshold: {{ $v.startupProbe.failureThreshold }}
  {{- end }}
  livenessProbe:
    httpGet:
      path: /-/healthy
      port: http-metrics
    periodSeconds: {{ $v.livenessProbe.periodSeconds }}
    timeoutSeconds: {{ $v.livenessProbe.timeoutSeconds }}
    failureThreshold: {{ $v.livenessProbe.failureThreshold }}
  readinessProbe:
    httpGet:
      path: /-/ready
      port: http-metrics
    periodSeconds: {{ $v.readinessProbe.periodSeconds }}
    timeoutSeconds: {{ $v.readinessProbe.timeoutSeconds }}
    failureThreshold: {{ $v.readinessProbe.failureThreshold }}
    successThreshold: {{ $v.readinessProbe.successThreshold }}
  {{- with $v.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: shadoweval-config
      mountPath: {{ include "shadoweval.configPath" . }}
      subPath: config.yaml
      readOnly: true
    - name: shadoweval-gold
      mountPath: {{ $v.gold.mountPath }}
      readOnly: true
    - name: shadoweval-data
      mountPath: {{ $v.data.mountPath }}
    - name: shadoweval-tmp
      mountPath: /tmp
    {{- if has $auth.method (list "nkey" "creds") }}
    - name: shadoweval-nats-auth
      mountPath: {{ include "shadoweval.natsAuthDir" . }}
      readOnly: true
    {{- end }}
    {{- if $v.nats.tls.enabled }}
    - name: shadoweval-nats-tls
      mountPath: {{ include "shadoweval.natsTLSDir" . }}
      readOnly: true
    {{- end }}
    {{- if $v.adminToken.enabled }}
    - name: shadoweval-admin-token
      mountPath: {{ include "shadoweval.adminTokenDir" . }}
      readOnly: true
    {{- end }}
    {{- with $v.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}

{{/*
The pod template of the chart's own workload, shared by the Deployment and the
cluster mode's StatefulSet.
*/}}
{{- define "shadoweval.podTemplate" -}}
metadata:
  labels:
    {{- include "shadoweval.labels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    {{- include "shadoweval.checksumAnnotations" . | nindent 4 }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "shadoweval.serviceAccountName" . }}
  automountServiceAccountToken: {{ .Values.serviceAccount.automountServiceAccountToken }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.podSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
  containers:
    {{- include "shadoweval.container" . | nindent 4 }}
  volumes:
    {{- include "shadoweval.volumes" . | nindent 4 }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/*
Pod annotations that roll the pod when the configuration changes (the config
file is read once at start; the gold set reloads by itself).
*/}}
{{- define "shadoweval.checksumAnnotations" -}}
checksum/shadoweval-config: {{ include "shadoweval.configYAML" . | sha256sum }}
{{- end }}

{{/*
For a parent chart that runs shadoweval as a sidecar of its own pod:
  {{- $sw := dict "Values" .Values.shadoweval "Release" .Release }}
  annotations:
    {{- include "shadoweval.sidecarPodAnnotations" $sw | nindent 8 }}
  containers:
    - name: retriever
      ...
    {{- include "shadoweval.sidecarContainer" $sw | nindent 4 }}
  volumes:
    {{- include "shadoweval.sidecarVolumes" $sw | nindent 4 }}
*/}}
{{- define "shadoweval.sidecarContainer" -}}
{{- include "shadoweval.container" . }}
{{- end }}

{{- define "shadoweval.sidecarVolumes" -}}
{{- include "shadoweval.volumes" . }}
{{- end }}

{{- define "shadoweval.sidecarPodAnnotations" -}}
{{- include "shadoweval.checksumAnnotations" . }}
{{- end }}
