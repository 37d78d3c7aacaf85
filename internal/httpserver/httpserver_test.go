package httpserver

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

func TestServeAnswersAndStopsOnCancel(t *testing.T) {
	s := &Server{Name: "test", Addr: "127.0.0.1:0", Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "pong")
	})}
	addr, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr.String(), http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "pong" {
		t.Errorf("body = %q, want pong", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve() = %v, want nil after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

func TestDisabledAndBadAddresses(t *testing.T) {
	for _, addr := range []string{Disabled, ""} {
		s := &Server{Name: "off", Addr: addr}
		got, err := s.Listen()
		if err != nil || got != nil {
			t.Errorf("Listen(%q) = %v, %v; want disabled", addr, got, err)
		}
		// A disabled endpoint serves nothing but runs until cancelled, so
		// it does not end the daemon (every task ending ends the process).
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx) }()
		select {
		case err := <-done:
			t.Fatalf("Serve on a disabled endpoint returned before cancel: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve on a disabled endpoint = %v", err)
		}
	}
	if _, err := (&Server{Name: "bad", Addr: "127.0.0.1:notaport"}).Listen(); err == nil {
		t.Error("Listen on a bad address succeeded")
	}
}
