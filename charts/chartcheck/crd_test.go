package chartcheck

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Local copies of the Prometheus Operator kinds (monitoring.coreos.com/v1)
// with the fields of the upstream CRDs that a chart may set; decoding with
// unknown fields refused catches a misspelt or misplaced key, as the API
// server's structural schema would.

type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              serviceMonitorSpec `json:"spec"`
}

type serviceMonitorSpec struct {
	JobLabel          string               `json:"jobLabel,omitempty"`
	TargetLabels      []string             `json:"targetLabels,omitempty"`
	PodTargetLabels   []string             `json:"podTargetLabels,omitempty"`
	Endpoints         []endpoint           `json:"endpoints"`
	Selector          metav1.LabelSelector `json:"selector"`
	NamespaceSelector namespaceSelector    `json:"namespaceSelector,omitempty"`
	SampleLimit       *uint64              `json:"sampleLimit,omitempty"`
}

type namespaceSelector struct {
	Any        bool     `json:"any,omitempty"`
	MatchNames []string `json:"matchNames,omitempty"`
}

type endpoint struct {
	Port                 string          `json:"port,omitempty"`
	TargetPort           *string         `json:"targetPort,omitempty"`
	Path                 string          `json:"path,omitempty"`
	Scheme               string          `json:"scheme,omitempty"`
	Params               map[string]any  `json:"params,omitempty"`
	Interval             string          `json:"interval,omitempty"`
	ScrapeTimeout        string          `json:"scrapeTimeout,omitempty"`
	HonorLabels          bool            `json:"honorLabels,omitempty"`
	HonorTimestamps      *bool           `json:"honorTimestamps,omitempty"`
	MetricRelabelConfigs []relabelConfig `json:"metricRelabelings,omitempty"`
	RelabelConfigs       []relabelConfig `json:"relabelings,omitempty"`
}

type relabelConfig struct {
	SourceLabels []string `json:"sourceLabels,omitempty"`
	Separator    *string  `json:"separator,omitempty"`
	TargetLabel  string   `json:"targetLabel,omitempty"`
	Regex        string   `json:"regex,omitempty"`
	Modulus      uint64   `json:"modulus,omitempty"`
	Replacement  *string  `json:"replacement,omitempty"`
	Action       string   `json:"action,omitempty"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              prometheusRuleSpec `json:"spec"`
}

type prometheusRuleSpec struct {
	Groups []ruleGroup `json:"groups,omitempty"`
}

type ruleGroup struct {
	Name                    string            `json:"name"`
	Labels                  map[string]string `json:"labels,omitempty"`
	Interval                string            `json:"interval,omitempty"`
	QueryOffset             string            `json:"query_offset,omitempty"`
	Rules                   []rule            `json:"rules"`
	PartialResponseStrategy string            `json:"partial_response_strategy,omitempty"`
	Limit                   *int              `json:"limit,omitempty"`
}

type rule struct {
	Record        string            `json:"record,omitempty"`
	Alert         string            `json:"alert,omitempty"`
	Expr          string            `json:"expr"`
	For           string            `json:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}
