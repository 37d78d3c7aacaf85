package setup

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/crowsnest-dev/crowsnest/config"
)

// Whoever writes annotations names pull secrets: the clients kept for
// them stay within MaxPullSecretClients, the least recently asked for
// going first, and one asked for again is the same client (its caches).
func TestPullSecretClientsAreBounded(t *testing.T) {
	r := NewRegistriesFor(&config.Config{}, config.RegistryList{}, nil, nil, slog.New(slog.DiscardHandler))
	ref := func(i int) string { return fmt.Sprintf("pullsecret:team-b/s%d", i) }
	first := r.ForPullSecret(ref(0))
	for i := 1; i < MaxPullSecretClients; i++ {
		r.ForPullSecret(ref(i))
	}
	if r.ForPullSecret(ref(0)) != first {
		t.Fatal("a reference asked for again got a new client")
	}
	// ref(0) was asked for last: the next new reference drops ref(1).
	r.ForPullSecret(ref(MaxPullSecretClients))
	if n := len(r.bySecret); n != MaxPullSecretClients {
		t.Fatalf("%d clients kept, want %d", n, MaxPullSecretClients)
	}
	if _, kept := r.bySecret[ref(1)]; kept {
		t.Error("the least recently asked for client was kept")
	}
	if r.ForPullSecret(ref(0)) != first {
		t.Error("the most recently asked for client was dropped")
	}
	for i := range 10 * MaxPullSecretClients {
		r.ForPullSecret(ref(1000 + i))
	}
	if n, m := len(r.bySecret), len(r.secretOrder); n != MaxPullSecretClients || m != n {
		t.Errorf("after many references: %d clients, %d in order; want %d", n, m, MaxPullSecretClients)
	}
}
