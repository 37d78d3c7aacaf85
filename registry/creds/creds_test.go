package creds_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crowsnest-dev/crowsnest/registry/creds"
)

// secretMap is a SecretGetter for tests that need no apiserver.
type secretMap map[string]*corev1.Secret

func (m secretMap) Get(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	if s, ok := m[namespace+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func dockerConfigJSON(entries map[string]string) []byte {
	var b strings.Builder
	b.WriteString(`{"auths":{`)
	first := true
	for host, userPass := range entries {
		if !first {
			b.WriteString(",")
		}
		first = false
		fmt.Fprintf(&b, "%q:{%q:%q}", host, "auth", base64.StdEncoding.EncodeToString([]byte(userPass)))
	}
	b.WriteString("}}")
	return []byte(b.String())
}

// writeScript writes an executable shell script; tests that run scripts
// are not parallel, since a fork elsewhere while the file is open for
// writing makes exec fail with "text file busy".
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustParse(t *testing.T, s string) creds.Ref {
	t.Helper()
	ref, err := creds.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestResolveForms(t *testing.T) {
	dir := t.TempDir()
	dockerCfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(dockerCfg, dockerConfigJSON(map[string]string{
		"https://index.docker.io/v1/": "hubuser:hubpass", "ghcr.io": "gh:ghpass",
	}), 0o600); err != nil {
		t.Fatal(err)
	}
	tokenCfg := filepath.Join(dir, "token.json")
	if err := os.WriteFile(tokenCfg, []byte(`{"auths":{"quay.io":{"identitytoken":"idtok"}},"credsStore":"desktop"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "ok.sh", `echo "extuser:ext:pass:with:colons"`)
	secrets := secretMap{
		"argocd/hub": {Type: corev1.SecretTypeDockercfg, Data: map[string][]byte{
			corev1.DockerConfigKey: []byte(`{"docker.io":{"username":"cfguser","password":"cfgpass"}}`),
		}},
		"argocd/plain": {Data: map[string][]byte{"creds": []byte("plainuser:plainpass\n")}},
	}
	r := &creds.Resolver{Secrets: secrets, LookupEnv: func(k string) (string, bool) {
		v, ok := map[string]string{"REG": "envuser:envpass"}[k]
		return v, ok
	}}
	tests := []struct {
		ref, host string
		want      authn.AuthConfig
	}{
		{ref: "env:REG", host: "a.io", want: authn.AuthConfig{Username: "envuser", Password: "envpass"}},
		{ref: "ext:" + script, host: "a.io", want: authn.AuthConfig{Username: "extuser", Password: "ext:pass:with:colons"}},
		{ref: "dockerconfig:" + dockerCfg, host: "docker.io", want: authn.AuthConfig{Username: "hubuser", Password: "hubpass"}},
		{ref: "dockerconfig:" + dockerCfg, host: "index.docker.io", want: authn.AuthConfig{Username: "hubuser", Password: "hubpass"}},
		{ref: "dockerconfig:" + dockerCfg, host: "ghcr.io", want: authn.AuthConfig{Username: "gh", Password: "ghpass"}},
		{ref: "dockerconfig:" + tokenCfg, host: "quay.io", want: authn.AuthConfig{IdentityToken: "idtok"}},
		{ref: "pullsecret:argocd/hub", host: "registry-1.docker.io", want: authn.AuthConfig{Username: "cfguser", Password: "cfgpass"}},
		{ref: "secret:argocd/plain#creds", host: "a.io", want: authn.AuthConfig{Username: "plainuser", Password: "plainpass"}},
	}
	for _, tt := range tests {
		t.Run(tt.ref+"@"+tt.host, func(t *testing.T) {
			a, err := r.Authenticator(t.Context(), mustParse(t, tt.ref), tt.host, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := authn.Authorization(t.Context(), a)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("credentials (-want +got):\n%s", diff)
			}
		})
	}
	a, err := r.Authenticator(t.Context(), creds.Ref{}, "a.io", 0)
	if err != nil || a != authn.Anonymous {
		t.Errorf("zero Ref: Authenticator() = %v, %v; want authn.Anonymous", a, err)
	}
}

func TestResolveErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const secret = "TOPSECRET-value"
	badJSON := writeFile("bad.json", `{"auths":{"a.io":{"auth":"`+secret+`"}`)
	badAuth := writeFile("badauth.json", `{"auths":{"a.io":{"auth":"`+secret+`"}}}`)
	typeErr := writeFile("type.json", `{"auths":{"a.io":"`+secret+`"}}`)
	noCreds := writeFile("nocreds.json", `{"auths":{"a.io":{"email":"x@y"}},"credHelpers":{"a.io":"ecr"}}`)
	huge := writeFile("huge.json", strings.Repeat(" ", 2<<20))
	failing := writeScript(t, dir, "fail.sh", `echo "`+secret+`" >&2; echo "`+secret+`"; exit 3`)
	noColon := writeScript(t, dir, "nocolon.sh", `echo "`+secret+`"`)
	twoLines := writeScript(t, dir, "twolines.sh", `echo "a:`+secret+`"; echo "b:c"`)
	chatty := writeScript(t, dir, "chatty.sh", `head -c 100000 /dev/zero | tr '\0' x`)
	secrets := secretMap{
		"ns/opaque":   {Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"x": []byte(secret)}},
		"ns/nocolon":  {Data: map[string][]byte{"creds": []byte(secret)}},
		"ns/nouser":   {Data: map[string][]byte{"creds": []byte(":" + secret)}},
		"ns/nopass":   {Data: map[string][]byte{"creds": []byte(secret + ":")}},
		"ns/badjson":  {Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": ` + secret)}},
		"ns/otherreg": {Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: dockerConfigJSON(map[string]string{"ghcr.io": "u:" + secret})}},
	}
	env := map[string]string{"NOCOLON": secret, "EMPTY": ""}
	r := &creds.Resolver{Secrets: secrets, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	tests := []struct {
		ref, host, wantErr string
	}{
		{ref: "env:UNSET", wantErr: "environment variable UNSET is not set"},
		{ref: "env:EMPTY", wantErr: "environment variable EMPTY is not set"},
		{ref: "env:NOCOLON", wantErr: "environment variable NOCOLON: want user:password, got no colon"},
		{ref: "secret:ns/missing#creds", wantErr: `secrets "missing" not found`},
		{ref: "secret:ns/opaque#creds", wantErr: `secret ns/opaque has no field "creds"`},
		{ref: "secret:ns/nocolon#creds", wantErr: "secret ns/nocolon field creds: want user:password, got no colon"},
		{ref: "secret:ns/nouser#creds", wantErr: "got an empty user name"},
		{ref: "secret:ns/nopass#creds", wantErr: "got an empty password"},
		{ref: "pullsecret:ns/opaque", wantErr: "has neither .dockerconfigjson nor .dockercfg"},
		{ref: "pullsecret:ns/badjson", wantErr: "not valid JSON (at byte"},
		{ref: "pullsecret:ns/otherreg", host: "docker.io", wantErr: "has no entry for registry docker.io (entries: ghcr.io)"},
		{ref: "dockerconfig:" + badJSON, wantErr: "not valid JSON"},
		{ref: "dockerconfig:" + badAuth, wantErr: "entry a.io: auth is not base64 of user:password"},
		{ref: "dockerconfig:" + typeErr, wantErr: "unexpected JSON string at auths"},
		{ref: "dockerconfig:" + noCreds, wantErr: "no user name and password, identitytoken or registrytoken"},
		{ref: "dockerconfig:" + noCreds, host: "b.io", wantErr: "credential helpers (credsStore, credHelpers) are not run"},
		{ref: "dockerconfig:" + huge, wantErr: "larger than 1048576 bytes"},
		{ref: "dockerconfig:" + filepath.Join(dir, "missing.json"), wantErr: "no such file"},
		{ref: "ext:" + failing, wantErr: "exit status 3 (stderr: 16 bytes, not shown as it may hold secrets)"},
		{ref: "ext:" + noColon, wantErr: "want user:password, got no colon"},
		{ref: "ext:" + twoLines, wantErr: "want one line user:password, got several lines"},
		{ref: "ext:" + chatty, wantErr: "printed more than 65536 bytes"},
		{ref: "ext:" + filepath.Join(dir, "missing.sh"), wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.ref+"@"+tt.host, func(t *testing.T) {
			var logs bytes.Buffer
			r.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			host := tt.host
			if host == "" {
				host = "a.io"
			}
			a, err := r.Authenticator(t.Context(), mustParse(t, tt.ref), host, 0)
			if err == nil {
				t.Fatalf("Authenticator() = %v, want an error", a)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
				t.Errorf("the secret leaked:\nerror: %v\nlogs: %s", err, logs.String())
			}
		})
	}
	if _, err := (&creds.Resolver{}).Authenticator(t.Context(), mustParse(t, "secret:a/b#c"), "a.io", 0); err == nil ||
		!strings.Contains(err.Error(), "no Kubernetes access configured") {
		t.Errorf("without Secrets: error = %v, want ErrNoKubernetes", err)
	}
}

// TestCredentialsNeverPrinted resolves every form and prints the result
// in every way a careless caller might.
func TestCredentialsNeverPrinted(t *testing.T) {
	dir := t.TempDir()
	const pass = "pa55-W0RD-never-shown"
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, dockerConfigJSON(map[string]string{"a.io": "user:" + pass}), 0o600); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "creds.sh", `echo "user:`+pass+`"`)
	secrets := secretMap{
		"ns/pull":  {Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: dockerConfigJSON(map[string]string{"a.io": "user:" + pass})}},
		"ns/plain": {ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Data: map[string][]byte{"creds": []byte("user:" + pass)}},
	}
	var logs bytes.Buffer
	r := &creds.Resolver{
		Secrets:   secrets,
		LookupEnv: func(string) (string, bool) { return "user:" + pass, true },
		Log:       slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, ref := range []string{"env:X", "ext:" + script, "dockerconfig:" + cfgPath, "pullsecret:ns/pull", "secret:ns/plain#creds"} {
		t.Run(ref, func(t *testing.T) {
			a, err := r.Authenticator(t.Context(), mustParse(t, ref), "a.io", 0)
			if err != nil {
				t.Fatal(err)
			}
			if cfg, _ := a.Authorization(); cfg.Password != pass {
				t.Fatalf("password = %q, want the configured one", cfg.Password)
			}
			printed := fmt.Sprintf("%v %+v %#v %s %q %d %x %t %T", a, a, a, a, a, a, a, a, a)
			r.Log.Info("resolved", "auth", a, "ref", mustParse(t, ref))
			r.Invalidate(mustParse(t, ref), "a.io")
			for _, out := range []string{printed, logs.String(), mustParse(t, ref).String()} {
				if strings.Contains(out, pass) {
					t.Errorf("the password leaked: %s", out)
				}
			}
			if !strings.Contains(printed, "credentials from "+ref+" (redacted)") {
				t.Errorf("printed %q, want it to name the reference", printed)
			}
		})
	}
}
