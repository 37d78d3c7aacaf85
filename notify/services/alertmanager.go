package services

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// Argo CD's defaults.
const (
	alertmanagerTimeout      = 3 * time.Second
	alertmanagerGeneratorURL = "{{.app.spec.source.repoURL}}"
	alertmanagerAlertname    = "alertname"
)

// alertmanagerKind describes service type alertmanager (listed in services.go).
var alertmanagerKind = &svc.Kind{
	Name: "alertmanager",
	Type: servicetypes.Alertmanager,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		st := s.(*servicetypes.AlertmanagerSettings)
		urls, err := st.URLs()
		if err != nil {
			return nil, err
		}
		if st.Timeout > 0 {
			o.Timeout = time.Duration(st.Timeout) * time.Second
		} else if o.Timeout <= 0 {
			o.Timeout = alertmanagerTimeout
		}
		return &alertmanager{c: svc.NewClient(name, st.InsecureSkipVerify, o), s: *st, urls: urls}, nil
	},
	BlockDefaults: func(template string, b any) any {
		in := b.(*servicetypes.AlertmanagerBlock)
		out := &servicetypes.AlertmanagerBlock{Labels: maps.Clone(in.Labels), Annotations: maps.Clone(in.Annotations), GeneratorURL: in.GeneratorURL}
		if out.GeneratorURL == "" {
			out.GeneratorURL = alertmanagerGeneratorURL
		}
		if _, ok := out.Labels[alertmanagerAlertname]; !ok && len(out.Labels) > 0 {
			out.Labels[alertmanagerAlertname] = template
		}
		return out
	},
	DefaultRecipient: true,
}

// alertmanager posts the alert to every target at once, as Argo CD
// Notifications does: the send succeeds when one target accepts it.
type alertmanager struct {
	c    *svc.Client
	s    servicetypes.AlertmanagerSettings
	urls []string
}

// alertmanagerAlert is one postable alert; annotations are null when
// the block has none, as Argo CD sends them.
type alertmanagerAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	GeneratorURL string            `json:"generatorURL"`
	StartsAt     time.Time         `json:"startsAt"`
}

func (a *alertmanager) Send(ctx context.Context, n notify.Notification, _ notify.Destination) (notify.Receipt, error) {
	var b servicetypes.AlertmanagerBlock
	has, err := svc.DecodeBlock(n, "alertmanager", &b)
	if err != nil {
		return notify.Receipt{}, err
	}
	if !has {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: the template has no alertmanager block", a.c.Service))
	}
	if len(b.Labels) == 0 {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: alertmanager.labels: at least one label is required", a.c.Service))
	}
	gen := gitURLToHTTPS(b.GeneratorURL)
	if _, err := url.Parse(gen); err != nil {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: alertmanager.generatorURL: not a URL", a.c.Service))
	}
	alert := alertmanagerAlert{Labels: b.Labels, GeneratorURL: gen, StartsAt: a.c.Now()}
	if len(b.Annotations) > 0 {
		alert.Annotations = b.Annotations
	}
	header := http.Header{}
	switch {
	case a.s.BasicAuth != nil:
		cred := a.s.BasicAuth.Username + ":" + a.s.BasicAuth.Password
		header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cred)))
	case a.s.BearerToken != "":
		header.Set("Authorization", "Bearer "+a.s.BearerToken)
	}
	errs := make([]error, len(a.urls))
	var wg sync.WaitGroup
	for i, u := range a.urls {
		wg.Go(func() {
			_, errs[i] = a.c.Do(ctx, svc.Request{Method: http.MethodPost, URL: u, Header: header, JSON: []alertmanagerAlert{alert}})
		})
	}
	wg.Wait()
	return alertmanagerResult(a.c.Service, errs)
}

// alertmanagerResult is a send's outcome from each target's error: a
// receipt when one accepted the alert; otherwise an error that is
// permanent only when every target refused it for good, and a rate limit
// only when every retryable failure is one.
func alertmanagerResult(service string, errs []error) (notify.Receipt, error) {
	var retryable, limited, all []error
	for _, err := range errs {
		if err == nil {
			continue
		}
		all = append(all, err)
		var rl *notify.RateLimitError
		switch {
		case notify.IsPermanent(err):
		case errors.As(err, &rl):
			limited = append(limited, err)
		default:
			retryable = append(retryable, err)
		}
	}
	if len(all) < len(errs) {
		detail := fmt.Sprintf("accepted by %d of %d targets", len(errs)-len(all), len(errs))
		if len(all) > 0 {
			detail += "; failed: " + errorsText(all)
		}
		return notify.Receipt{Detail: detail}, nil
	}
	// The message names every failure; the error wraps only those that
	// decide how the outbox goes on.
	cause := all
	switch {
	case len(retryable) > 0:
		cause = retryable
	case len(limited) > 0:
		cause = limited
	}
	return notify.Receipt{}, &alertmanagerError{
		msg:   service + ": no target accepted the alert: " + errorsText(all),
		cause: errors.Join(cause...),
	}
}

type alertmanagerError struct {
	msg   string
	cause error
}

func (e *alertmanagerError) Error() string { return e.msg }
func (e *alertmanagerError) Unwrap() error { return e.cause }

func errorsText(errs []error) string {
	parts := make([]string, len(errs))
	for i, err := range errs {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

// gitURLToHTTPS turns git@host:org/repo into https://host/org/repo, as
// Argo CD does for an alert's generatorURL.
func gitURLToHTTPS(u string) string {
	rest, ok := strings.CutPrefix(u, "git@")
	if !ok {
		return u
	}
	return "https://" + strings.Replace(rest, ":", "/", 1)
}
