package main

import (
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/registry"
)

// The config's TLS settings reach the clients: a registry, Slack API,
// webhook and SMTP server on 127.0.0.1 with self-signed certificates are
// refused by default and accepted only with that registry's insecure or
// caData, or that service's insecureSkipVerify.
func TestConfigTLSSettingsReachTheClients(t *testing.T) {
	reg := httptest.NewTLSServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "https://")
	ref, err := name.ParseReference(host + "/team/web:1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, testreg.Image(t, time.Now(), "linux/amd64"), remote.WithTransport(reg.Client().Transport)); err != nil {
		t.Fatal(err)
	}
	ca := strings.ReplaceAll(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: reg.Certificate().Raw})), "\n", "\\n")
	for _, tt := range []struct {
		name, entry string
		wantOK      bool
	}{
		{"registry, default", "{prefix: " + host + "}", false},
		{"registry, insecure for another", "{prefix: other.example.com, insecure: true}", false},
		{"registry, caData", `{prefix: ` + host + `, caData: "` + ca + `"}`, true},
		{"registry, insecure", "{prefix: " + host + ", insecure: true}", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\nregistries:\n  list: [" + tt.entry + "]\n"))
			if err != nil {
				t.Fatal(err)
			}
			regs, err := setup.NewRegistries(cfg, t.TempDir(), nil, registry.NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			repo, err := registry.ParseRepo(host + "/team/web")
			if err != nil {
				t.Fatal(err)
			}
			tags, err := regs.Client.ListTags(t.Context(), repo)
			if tt.wantOK != (err == nil) || (err == nil && !slices.Equal(tags, []string{"1.0.0"})) || (err != nil && !strings.Contains(err.Error(), "certificate")) {
				t.Fatalf("tags %v, err %v; want ok %v, else a certificate error", tags, err, tt.wantOK)
			}
		})
	}

	var got atomic.Int32
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		got.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"channel":"C1","ts":"1.1"}`)
	}))
	t.Cleanup(api.Close)
	mail := testnotify.NewSMTPServer(t, testnotify.SMTPOptions{Password: "pw"})
	for _, tt := range []struct {
		name, service, recipient string
	}{
		{"slack", fmt.Sprintf(`{slack: {token: "env:TLS_TEST_TOKEN", apiURL: "%s/api/"%%s}}`, api.URL), "#c"},
		{"webhook", fmt.Sprintf(`{webhook: {url: "%s/hook"%%s}}`, api.URL), ""},
		{"email", fmt.Sprintf(`{email: {host: 127.0.0.1, port: %d, username: crowsnest, password: "env:TLS_TEST_TOKEN", from: a@example.com%%s}}`, mail.Port(t)), "dev@example.com"},
	} {
		for _, insecure := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, insecureSkipVerify %v", tt.name, insecure), func(t *testing.T) {
				t.Setenv("TLS_TEST_TOKEN", "pw")
				extra := ""
				if insecure {
					extra = ", insecureSkipVerify: true"
				}
				cfg, err := config.Parse([]byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\nnotifications:\n  services:\n    svc: " + fmt.Sprintf(tt.service, extra) + "\n"))
				if err != nil {
					t.Fatal(err)
				}
				svc, err := setup.BuildService("svc", cfg.Notifications.Services["svc"], nil)
				if err != nil {
					t.Fatal(err)
				}
				n := notify.Notification{Message: "m", Email: &notify.EmailTemplate{Subject: "s"}, Webhook: map[string]notify.WebhookTemplate{"svc": {Body: "b"}}}
				count := func() int { return int(got.Load()) + len(mail.Mail()) }
				before := count()
				_, err = svc.Send(t.Context(), n, notify.Destination{Service: "svc", Recipient: tt.recipient})
				delivered := count() > before
				if insecure != (err == nil) || insecure != delivered || (err != nil && !strings.Contains(err.Error(), "certificate")) {
					t.Fatalf("err %v, delivered %v; want delivered only with insecureSkipVerify, else a certificate error", err, delivered)
				}
			})
		}
	}
}
