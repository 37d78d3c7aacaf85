package windows

import (
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
)

func TestMatches(t *testing.T) {
	inCluster := AppRef{Name: "shop-web", Namespace: "argocd", Project: "retail", DestNamespace: "shop-prod",
		DestServer: "https://kubernetes.default.svc", Labels: map[string]string{"tier": "web", "team": "a"}}
	byName := inCluster
	byName.DestServer, byName.DestName = "", "prod-eu"
	tests := []struct {
		name string
		sw   config.SyncWindow
		app  AppRef
		want bool
	}{
		{name: "application glob", sw: config.SyncWindow{Applications: []string{"shop-*"}}, app: inCluster, want: true},
		{name: "application glob misses", sw: config.SyncWindow{Applications: []string{"billing-*"}}, app: inCluster},
		{name: "namespaces match the destination, not the Application's namespace",
			sw: config.SyncWindow{Namespaces: []string{"argocd"}}, app: inCluster},
		{name: "destination namespace", sw: config.SyncWindow{Namespaces: []string{"*-prod"}}, app: inCluster, want: true},
		{name: "cluster by server URL", sw: config.SyncWindow{Clusters: []string{"https://kubernetes.*"}}, app: inCluster, want: true},
		{name: "cluster by name", sw: config.SyncWindow{Clusters: []string{"prod-*"}}, app: byName, want: true},
		{name: "empty server never matches", sw: config.SyncWindow{Clusters: []string{"*"}},
			app: AppRef{Name: "x", DestName: ""}},
		{name: "project glob", sw: config.SyncWindow{Projects: []string{"ret*"}}, app: inCluster, want: true},
		{name: "label selector", sw: config.SyncWindow{LabelSelector: "tier in (web, api), team"}, app: inCluster, want: true},
		{name: "label selector misses", sw: config.SyncWindow{LabelSelector: "tier=db"}, app: inCluster},
		{name: "OR: one selector suffices",
			sw: config.SyncWindow{Applications: []string{"billing"}, Namespaces: []string{"shop-prod"}}, app: inCluster, want: true},
		{name: "AND: every set selector must pass", sw: config.SyncWindow{AndOperator: true,
			Applications: []string{"billing"}, Namespaces: []string{"shop-prod"}}, app: inCluster},
		{name: "AND: all pass", sw: config.SyncWindow{AndOperator: true, Applications: []string{"shop-*"},
			Namespaces: []string{"shop-prod"}, Clusters: []string{"*"}, Projects: []string{"retail"}, LabelSelector: "tier=web"},
			app: inCluster, want: true},
		{name: "AND: label selector fails", sw: config.SyncWindow{AndOperator: true, Applications: []string{"shop-*"},
			LabelSelector: "tier=api"}, app: inCluster},
		{name: "no selector matches nothing", sw: config.SyncWindow{}, app: inCluster},
		{name: "no selector with AND matches nothing", sw: config.SyncWindow{AndOperator: true}, app: inCluster},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.sw.Kind, tt.sw.Schedule, tt.sw.Duration = config.WindowDeny, "@daily", config.Duration{Duration: time.Hour}
			w := mustCompile(t, "w", tt.sw)
			if got := w.Matches(tt.app); got != tt.want {
				t.Errorf("Matches(%+v) = %v, want %v", tt.app, got, tt.want)
			}
		})
	}
}
