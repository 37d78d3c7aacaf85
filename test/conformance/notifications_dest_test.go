package conformance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/argoproj/notifications-engine/pkg/services"
	"github.com/argoproj/notifications-engine/pkg/subscriptions"
	"github.com/google/go-cmp/cmp"

	cntriggers "github.com/crowsnest-dev/crowsnest/triggers"
)

// genSubscriptionsCM adds generated subscriptions, defaultTriggers and
// defaultTriggers.<service> to the catalog's ConfigMap data.
func genSubscriptionsCM(r *rand.Rand) map[string]string {
	data := map[string]string{}
	trig := func() string { return pick(r, "on-deployed", "on-sync-failed", "on-health-degraded", "on-created") }
	if r.IntN(2) == 0 {
		data["defaultTriggers"] = fmt.Sprintf("[%s, %s]", trig(), trig())
	}
	if r.IntN(2) == 0 {
		data["defaultTriggers.email"] = fmt.Sprintf("[%s]", trig())
	}
	var subs []string
	for i := r.IntN(3); i > 0; i-- {
		s := fmt.Sprintf("- recipients: [%s]\n", pick(r, "slack:ops", "email:a@example.com", "slack:ops, webhook:github", "slack"))
		if r.IntN(2) == 0 {
			s += fmt.Sprintf("  triggers: [%s]\n", trig())
		}
		if r.IntN(2) == 0 {
			s += "  selector: " + pick(r, "env=prod", "env!=prod", "team in (a,b)", "team") + "\n"
		}
		subs = append(subs, s)
	}
	if len(subs) > 0 {
		data["subscriptions"] = strings.Join(subs, "")
	}
	return data
}

func genSubscriptionAnnotations(r *rand.Rand) map[string]string {
	ann := map[string]string{}
	for i := r.IntN(4); i > 0; i-- {
		svc := pick(r, "slack", "email", "github")
		rcpt := pick(r, "ops", "ops;dev", "a@example.com", " ops ; ")
		switch r.IntN(3) {
		case 0:
			ann["notifications.argoproj.io/subscribe."+svc] = rcpt
		case 1:
			ann["notifications.argoproj.io/subscribe."+pick(r, "on-deployed", "on-sync-failed")+"."+svc] = rcpt
		default:
			ann["notifications.argoproj.io/subscriptions"] = fmt.Sprintf("- trigger: [%s]\n  destinations:\n  - service: %s\n    recipients: [%s]\n",
				pick(r, "on-deployed", "on-created"), svc, strings.TrimSpace(rcpt))
		}
	}
	return ann
}

// TestSubscriptionsMatchNotificationsEngine compares, for generated
// annotation subscriptions (subscribe.<trigger>.<service>,
// subscribe.<service>, the subscriptions YAML), global subscriptions
// (with and without triggers and selectors), defaultTriggers and
// defaultTriggers.<service>, the destinations crowsnest resolves for each
// catalog trigger with those of notifications-engine (annotations'
// GetDestinations and Config.GetGlobalDestinations).
func TestSubscriptionsMatchNotificationsEngine(t *testing.T) {
	seed := propertySeed(t)
	reportSeed(t, seed)
	r := rand.New(rand.NewPCG(seed, 0xde57))
	cases := 0
	for i := 0; i < 400; i++ {
		extra := genSubscriptionsCM(r)
		set, cfg, _ := catalogSides(t, extra)
		res, err := cntriggers.NewResolver(&set.Config)
		if err != nil {
			t.Fatalf("crowsnest: %v\nconfig: %v", err, extra)
		}
		for j := 0; j < 25; j++ {
			ann := genSubscriptionAnnotations(r)
			labels := map[string]string{}
			if r.IntN(2) == 0 {
				labels["env"] = "prod"
			}
			if r.IntN(2) == 0 {
				labels["team"] = pick(r, "a", "c")
			}
			engine := subscriptions.NewAnnotations(ann).GetDestinations(cfg.DefaultTriggers, cfg.ServiceDefaultTriggers)
			engine.Merge(cfg.GetGlobalDestinations(labels))
			for trigger := range cfg.Triggers {
				cases++
				want := normDests(engine[trigger])
				got, err := res.DestinationsFor(trigger, labels, ann, nil)
				if err != nil {
					t.Fatalf("crowsnest: %v\nannotations: %v", err, ann)
				}
				var gotN []string
				for _, d := range got {
					gotN = append(gotN, d.Service+":"+d.Recipient)
				}
				if diff := cmp.Diff(want, gotN); diff != "" {
					t.Fatalf("%s (-notifications-engine +crowsnest):\n%s\nconfig: %v\nannotations: %v\nlabels: %v", trigger, diff, extra, ann, labels)
				}
			}
		}
	}
	t.Logf("seed %d: %d (trigger, Application, config) cases", seed, cases)
}

func normDests(ds []services.Destination) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Service+":"+d.Recipient)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
