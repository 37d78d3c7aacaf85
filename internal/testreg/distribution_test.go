package testreg

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

func TestDistributionPushAndRead(t *testing.T) {
	reg := StartDistribution(t, DistributionOptions{Users: map[string]string{"ci": "push-pass", "reader": "read-pass"}})
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	opts := []remote.Option{remote.WithAuth(reg.Auth()), remote.WithContext(t.Context())}
	for _, tag := range []string{"v1", "v2"} {
		if err := remote.Write(reg.Ref(t, "team/app:"+tag), img, opts...); err != nil {
			t.Fatalf("push %s: %v", tag, err)
		}
	}
	repo := reg.Ref(t, "team/app:v1").Context()
	tags, err := remote.List(repo, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v1", "v2"}, tags); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}

	wantDigest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(reg.Ref(t, "team/app:v2"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != wantDigest {
		t.Errorf("HEAD digest = %s, want %s", desc.Digest, wantDigest)
	}
	got, err := remote.Image(reg.Ref(t, "team/app:v1"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(layerDigests(t, img), layerDigests(t, got)); diff != "" {
		t.Errorf("layers read back (-want +got):\n%s", diff)
	}
	// Reading a layer's content proves blob GETs work, not just manifests.
	layers, err := got.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, rc)
	_ = rc.Close()
	if err != nil || n == 0 {
		t.Errorf("reading layer blob: %d bytes, %v", n, err)
	}
}

func layerDigests(t *testing.T, img v1.Image) []v1.Hash {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Hash
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func TestDistributionAuth(t *testing.T) {
	reg := StartDistribution(t, DistributionOptions{Users: map[string]string{"ci": "push-pass"}})
	if user, _ := reg.Credentials(); user != "ci" {
		t.Fatalf("Credentials user = %q, want ci", user)
	}
	tests := []struct {
		name string
		auth authn.Authenticator
	}{
		{"anonymous", authn.Anonymous},
		{"wrong password", &authn.Basic{Username: "ci", Password: "nope"}},
		{"unknown user", &authn.Basic{Username: "eve", Password: "push-pass"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := remote.List(reg.Ref(t, "team/app:v1").Context(), remote.WithAuth(tt.auth), remote.WithContext(t.Context()))
			terr, ok := errors.AsType[*transport.Error](err)
			if !ok || terr.StatusCode != http.StatusUnauthorized {
				t.Errorf("list error = %v, want a 401", err)
			}
		})
	}
}

func TestDistributionNotifies(t *testing.T) {
	type delivery struct {
		auth, contentType string
		actions           []string
	}
	got := make(chan delivery, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		var env struct {
			Events []struct {
				Action string `json:"action"`
				Target struct {
					Tag string `json:"tag"`
				} `json:"target"`
			} `json:"events"`
		}
		_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&env)
		d := delivery{auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type")}
		for _, ev := range env.Events {
			d.actions = append(d.actions, ev.Action+":"+ev.Target.Tag)
		}
		select {
		case got <- d:
		default: // the test has what it needs; never block the registry
		}
	}))
	t.Cleanup(hook.Close)
	reg := StartDistribution(t, DistributionOptions{
		NotifyURL:     hook.URL + "/events",
		NotifyHeaders: map[string]string{"Authorization": "Bearer hook-token"},
	})
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(reg.Ref(t, "app:v9"), img, remote.WithContext(t.Context())); err != nil {
		t.Fatal(err)
	}
	// Blob pushes come as separate events; wait for the tagged manifest.
	timeout := time.After(30 * time.Second)
	for {
		select {
		case d := <-got:
			if d.auth != "Bearer hook-token" || d.contentType != "application/vnd.docker.distribution.events.v1+json" {
				t.Fatalf("delivery headers: Authorization %q, Content-Type %q", d.auth, d.contentType)
			}
			if slices.Contains(d.actions, "push:v9") {
				return
			}
		case <-timeout:
			t.Fatalf("no push notification for app:v9 within 30s; registry log:\n%s", reg.Log())
		}
	}
}
