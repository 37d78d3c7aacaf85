package daemon

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestApplyImageUpdaterFlags: each alias given sets what crowsnest's flag
// or field sets, a flag with no counterpart is noted with what to use
// instead, and an alias given with crowsnest's own flag is refused.
func TestApplyImageUpdaterFlags(t *testing.T) {
	type result struct {
		LogLevel, LogFormat, Selector string
		Workers                       int
		PollInterval                  time.Duration
		Namespaces                    []string
		MetricsAddr, ProbeAddr        string
		Ignored                       []IgnoredFlag
	}
	deref := func(o *Options) result {
		r := result{MetricsAddr: o.MetricsAddr, ProbeAddr: o.ProbeAddr, Ignored: o.IgnoredFlags}
		ov := &o.Overrides
		if ov.LogLevel != nil {
			r.LogLevel = *ov.LogLevel
		}
		if ov.LogFormat != nil {
			r.LogFormat = *ov.LogFormat
		}
		if ov.Selector != nil {
			r.Selector = *ov.Selector
		}
		if ov.Workers != nil {
			r.Workers = *ov.Workers
		}
		if ov.PollInterval != nil {
			r.PollInterval = *ov.PollInterval
		}
		if ov.Namespaces != nil {
			r.Namespaces = *ov.Namespaces
		}
		return r
	}
	tests := []struct {
		name    string
		flags   ImageUpdaterFlags
		want    result
		wantErr string
	}{
		{
			name: "aliases and ignored flags",
			flags: ImageUpdaterFlags{
				Given:    []string{"interval", "logformat", "loglevel", "match-application-label", "max-concurrency", "max-concurrent-apps", "metrics-port", "metrics-secure", "watch-namespaces"},
				LogLevel: "TRACE", LogFormat: "JSON", MatchLabel: "team=a", Interval: 5 * time.Minute,
				MaxConcurrency: 2, MaxConcurrentApps: 3, MetricsPort: 9090, WatchNamespaces: " a,b ",
				HealthPort: 1, // not given: no effect
			},
			want: result{LogLevel: "debug", LogFormat: "json", Selector: "team=a", Workers: 3, PollInterval: 5 * time.Minute,
				Namespaces: []string{"a", "b"}, MetricsAddr: ":9090", ProbeAddr: ":8081",
				Ignored: []IgnoredFlag{{Flag: "metrics-secure", Instead: "crowsnest serves /metrics over plain HTTP; put TLS in front of it"}}},
		},
		{
			name:  "interval 0 and port 0",
			flags: ImageUpdaterFlags{Given: []string{"health-port", "interval"}},
			want: result{MetricsAddr: ":8080", ProbeAddr: "0",
				Ignored: []IgnoredFlag{{Flag: "interval", Instead: "--interval=0 (run once): crowsnest runs one pass with --once"}}},
		},
		{
			name:    "alias with crowsnest's flag",
			flags:   ImageUpdaterFlags{Given: []string{"log-level", "loglevel"}, LogLevel: "debug"},
			want:    result{MetricsAddr: ":8080", ProbeAddr: ":8081"},
			wantErr: "--loglevel is argocd-image-updater's name for --log-level: give one of them",
		},
		{
			name:    "not a port",
			flags:   ImageUpdaterFlags{Given: []string{"webhook-port"}, WebhookPort: 70000},
			want:    result{MetricsAddr: ":8080", ProbeAddr: ":8081"},
			wantErr: "--webhook-port=70000: not a port",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Options{MetricsAddr: ":8080", ProbeAddr: ":8081"}
			err := o.ApplyImageUpdaterFlags(&tt.flags)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Errorf("error %q, want %q", gotErr, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, deref(o)); diff != "" {
				t.Errorf("applied (-want +got):\n%s", diff)
			}
		})
	}
}
