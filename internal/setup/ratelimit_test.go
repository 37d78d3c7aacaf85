package setup

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

func TestServiceRateLimit(t *testing.T) {
	tests := []struct {
		name string
		svc  config.Service
		want outbox.RateLimit
	}{
		{name: "slack default", svc: config.Service{Slack: &config.SlackService{}}, want: outbox.RateLimit{PerSecond: 5, Burst: 10}},
		{name: "email default", svc: config.Service{Email: &config.EmailService{}}, want: outbox.RateLimit{PerSecond: 5, Burst: 10}},
		{name: "webhook default: not paced", svc: config.Service{Webhook: &config.WebhookService{}}, want: outbox.RateLimit{PerSecond: -1}},
		{name: "configured", svc: config.Service{Webhook: &config.WebhookService{}, RateLimit: &config.ServiceRateLimit{PerSecond: 50, Burst: 7}},
			want: outbox.RateLimit{PerSecond: 50, Burst: 7}},
		{name: "burst from the rate", svc: config.Service{Slack: &config.SlackService{}, RateLimit: &config.ServiceRateLimit{PerSecond: 2.5}},
			want: outbox.RateLimit{PerSecond: 2.5, Burst: 3}},
		{name: "slow rate bursts one", svc: config.Service{Slack: &config.SlackService{}, RateLimit: &config.ServiceRateLimit{PerSecond: 0.2}},
			want: outbox.RateLimit{PerSecond: 0.2, Burst: 1}},
		{name: "slack unpaced", svc: config.Service{Slack: &config.SlackService{}, RateLimit: &config.ServiceRateLimit{}}, want: outbox.RateLimit{PerSecond: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, serviceRateLimit(tt.svc)); diff != "" {
				t.Errorf("serviceRateLimit (-want +got):\n%s", diff)
			}
		})
	}
}
