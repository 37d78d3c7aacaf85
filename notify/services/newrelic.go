package services

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// NewrelicSettings are the keys of `service.newrelic`.
type NewrelicSettings struct {
	APIKey string `yaml:"apiKey" json:"apiKey,omitempty"`
	// APIURL is https://api.newrelic.com by default
	// (https://api.eu.newrelic.com in the EU).
	APIURL             string `yaml:"apiURL" json:"apiURL,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecureSkipVerify" json:"insecureSkipVerify,omitempty"`
}

// NewrelicBlock is a template's `newrelic:` block: a deployment marker.
type NewrelicBlock struct {
	// Revision is the synced revision unless set.
	Revision string `yaml:"revision" json:"revision,omitempty"`
	// Changelog and User are the revision's commit message and author
	// unless set (repo.GetCommitMetadata).
	Changelog string `yaml:"changelog" json:"changelog,omitempty"`
	// Description is the message unless set.
	Description string `yaml:"description" json:"description,omitempty"`
	User        string `yaml:"user" json:"user,omitempty"`
}

// Argo CD's defaults.
const (
	newrelicAPI       = "https://api.newrelic.com"
	newrelicRevision  = "{{.app.status.operationState.syncResult.revision}}"
	newrelicChangelog = "{{(call .repo.GetCommitMetadata .app.status.sync.revision).Message}}"
	newrelicUser      = "{{(call .repo.GetCommitMetadata .app.status.sync.revision).Author}}"
)

// newrelicKind describes service type newrelic (listed in services.go).
var newrelicKind = &svc.Kind{
	Type:     "newrelic",
	Settings: func() any { return &NewrelicSettings{} },
	Block:    func() any { return &NewrelicBlock{} },
	Validate: func(s any) error {
		n := s.(*NewrelicSettings)
		if err := svc.Require("apiKey", n.APIKey); err != nil {
			return err
		}
		return svc.CheckURL("apiURL", n.APIURL)
	},
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		st := *s.(*NewrelicSettings)
		if st.APIURL == "" {
			st.APIURL = newrelicAPI
		}
		st.APIURL = strings.TrimSuffix(st.APIURL, "/")
		return &newrelic{c: svc.NewClient(name, st.InsecureSkipVerify, o), s: st}, nil
	},
	BlockDefaults: func(_ string, b any) any {
		out := *b.(*NewrelicBlock)
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
	s NewrelicSettings
}

type newrelicDeployment struct {
	Revision    string `json:"revision"`
	Changelog   string `json:"changelog,omitempty"`
	Description string `json:"description,omitempty"`
	User        string `json:"user,omitempty"`
}

func (r *newrelic) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	var b NewrelicBlock
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
