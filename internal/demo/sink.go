package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// sink is the webhook receiver the demo's notifications go to.
type sink struct {
	url   string
	srv   *http.Server
	mu    sync.Mutex
	recvd []string
}

// startSink serves the receiver on 127.0.0.1; say reports each body.
func startSink(say func(string, ...any)) (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the demo webhook receiver: %w", err)
	}
	s := &sink{url: "http://" + ln.Addr().String() + "/hook"}
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		body := string(b)
		var compact bytes.Buffer
		if json.Compact(&compact, b) == nil {
			body = compact.String()
		}
		s.mu.Lock()
		s.recvd = append(s.recvd, body)
		s.mu.Unlock()
		say("webhook   %s", body)
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *sink) bodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recvd)
}

func (s *sink) close() { _ = s.srv.Close() }
