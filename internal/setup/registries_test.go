package setup

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/crowsnest-dev/crowsnest/config"
)

// Whoever writes annotations names pull secrets: the clients kept for one
// namespace's references stay within MaxPullSecretClients, the least
// recently asked for going first; one asked for again is the same client
// (its caches); and many references in one namespace drop no other
// namespace's client.
func TestPullSecretClientsAreBoundedPerNamespace(t *testing.T) {
	r := NewRegistriesFor(&config.Config{}, config.RegistryList{}, nil, nil, slog.New(slog.DiscardHandler))
	ref := func(ns string, i int) string { return fmt.Sprintf("pullsecret:%s/s%d", ns, i) }
	teamA := r.ForPullSecret(ref("team-a", 0))
	first := r.ForPullSecret(ref("team-b", 0))
	for i := 1; i < MaxPullSecretClients; i++ {
		r.ForPullSecret(ref("team-b", i))
	}
	if r.ForPullSecret(ref("team-b", 0)) != first {
		t.Fatal("a reference asked for again got a new client")
	}
	// team-b/s0 was asked for last: the next new reference drops s1.
	r.ForPullSecret(ref("team-b", MaxPullSecretClients))
	if n := len(r.secretOrder["team-b"]); n != MaxPullSecretClients {
		t.Fatalf("%d clients kept for team-b, want %d", n, MaxPullSecretClients)
	}
	if _, kept := r.bySecret[ref("team-b", 1)]; kept {
		t.Error("the least recently asked for client was kept")
	}
	if r.ForPullSecret(ref("team-b", 0)) != first {
		t.Error("the most recently asked for client was dropped")
	}
	for i := range 10 * MaxPullSecretClients {
		r.ForPullSecret(ref("team-b", 1000+i))
	}
	if n, m := len(r.bySecret), len(r.secretOrder["team-b"]); n != MaxPullSecretClients+1 || m != MaxPullSecretClients {
		t.Errorf("after many team-b references: %d clients, %d in team-b's order; want %d and %d", n, m, MaxPullSecretClients+1, MaxPullSecretClients)
	}
	if r.ForPullSecret(ref("team-a", 0)) != teamA {
		t.Error("team-b's references dropped team-a's client")
	}
}
