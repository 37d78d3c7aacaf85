package services

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// Argo CD's defaults.
const (
	newrelicAPI       = "https://api.newrelic.com"
	newrelicRevision  = "{{.app.status.operationState.syncResult.revision}}"
	newrelicChangelog = "{{(call .repo.GetCommitMetadata .app.status.sync.revision).Message}}"
	newrelicUser      = "{{(call .repo.GetCommitMetadata .app.status.sync.revision).Author}}"
)

// newrelicKind describes service type newrelic (listed in services.go).
var newrelicKind = &svc.Kind{
	Name: "newrelic",
	Type: servicetypes.Newrelic,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		st := *s.(*servicetypes.NewrelicSettings)
		if st.APIURL == "" {
			st.APIURL = newrelicAPI
		}
		st.APIURL = strings.TrimSuffix(st.APIURL, "/")
		return &newrelic{c: svc.NewClient(name, st.InsecureSkipVerify, o), s: st}, nil
	},
	BlockDefaults: func(_ string, b any) any {
		out := *b.(*servicetypes.NewrelicBlock)
		if out.Revision == "" {
			out.Revision = newrelicRevision
		}
		if out.Changelog == "" {
			out.Changelog = newrelicChangelog
		}
		if out.User == "" {
			out.User = newrelicUser
		}
		return &out
	},
}

// newrelic records a deployment marker on the APM application named by
// the recipient, as Argo CD Notifications does.
type newrelic struct {
	c *svc.Client
	s servicetypes.NewrelicSettings
}

type newrelicDeployment struct {
	Revision    string `json:"revision"`
	Changelog   string `json:"changelog,omitempty"`
	Description string `json:"description,omitempty"`
	User        string `json:"user,omitempty"`
}

func (r *newrelic) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	var b servicetypes.NewrelicBlock
	has, err := svc.DecodeBlock(n, "newrelic", &b)
	if err != nil {
		return notify.Receipt{}, err
	}
	if !has {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: the template has no newrelic block", r.c.Service))
	}
	if d.Recipient == "" {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: no recipient (the New Relic application ID)", r.c.Service))
	}
	if b.Description == "" {
		b.Description = n.Message
	}
	resp, err := r.c.Do(ctx, svc.Request{
		Method: http.MethodPost,
		URL:    r.s.APIURL + "/v2/applications/" + url.PathEscape(d.Recipient) + "/deployments.json",
		Header: http.Header{"X-Api-Key": {r.s.APIKey}},
		JSON: map[string]newrelicDeployment{"deployment": {
			Revision: b.Revision, Changelog: b.Changelog, Description: b.Description, User: b.User,
		}},
	})
	if err != nil {
		return notify.Receipt{}, err
	}
	var created struct {
		Deployment struct {
			ID int64 `json:"id"`
		} `json:"deployment"`
	}
	if resp.Decode(&created) == nil && created.Deployment.ID != 0 {
		return notify.Receipt{ID: fmt.Sprint(created.Deployment.ID)}, nil
	}
	return notify.Receipt{}, nil
}
