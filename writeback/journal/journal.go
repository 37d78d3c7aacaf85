package journal

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"

	"github.com/crowsnest-dev/crowsnest/internal/cmbatch"
)

// Intent is the image write crowsnest is about to make for one
// Application.
type Intent struct {
	// Method is "argocd" (Kubernetes mode) or "git".
	Method  string    `json:"method"`
	Changes []Change  `json:"changes"`
	At      time.Time `json:"at"`
	// Done is set once nothing is left to announce (Git write-backs,
	// which the Git batcher settles): the write was pushed and announced,
	// or a batch found it already made. A later process recovers only
	// what is not done; where the notifier's state does not outlive the
	// process (local mode) that is what keeps a rerun from announcing the
	// same write twice.
	Done bool `json:"done,omitempty"`
	// Declined are the versions of the Application a person declined
	// (their pull request closed without merging), not proposed again.
	// They outlive the intent: a new intent recorded for the key keeps
	// them (Book.Record).
	Declined []Declined `json:"declined,omitempty"`
}

// Declined is a version of one image a person declined, and the pull
// request they closed.
type Declined struct {
	Image string `json:"image"`
	To    string `json:"to"`
	URL   string `json:"url,omitempty"`
}

// Change is one image of an Intent.
type Change struct {
	Image string `json:"image"`
	From  string `json:"from,omitempty"`
	To    string `json:"to"`
}

// Store persists the last Intent of each Application key.
type Store interface {
	LoadAll(ctx context.Context) (map[string]Intent, error)
	// Save records in for key; nil deletes the key's intent.
	Save(ctx context.Context, key string, in *Intent) error
}

// ConfigMaps defaults.
const (
	DefaultPrefix = "crowsnest-write-intents"
	DefaultShards = 8
)

// ErrFull is returned when a journal shard has no room left.
var ErrFull = errors.New("write journal ConfigMap is full")

// ConfigMaps keeps Intents in ConfigMaps <Prefix>-<shard> in Namespace
// (crowsnest's own), one data key per Application.
type ConfigMaps struct {
	Client    kubecore.Interface
	Namespace string
	// Prefix names the ConfigMaps; DefaultPrefix when empty.
	Prefix string
	// Shards is the number of ConfigMaps; DefaultShards when zero. Keep
	// it fixed for an installation.
	Shards int

	shards cmbatch.LazyKV
}

var _ Store = (*ConfigMaps)(nil)

func (j *ConfigMaps) kv() *cmbatch.KV {
	return j.shards.Get(j.Client, j.Namespace, cmp.Or(j.Prefix, DefaultPrefix), cmp.Or(j.Shards, DefaultShards), ErrFull)
}

// LoadAll implements Store; undecodable entries are skipped.
func (j *ConfigMaps) LoadAll(ctx context.Context) (map[string]Intent, error) {
	data, err := j.kv().LoadAll(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Intent, len(data))
	for key, v := range data {
		var in Intent
		if json.Unmarshal([]byte(v), &in) == nil {
			out[key] = in
		}
	}
	return out, nil
}

// Save implements Store.
func (j *ConfigMaps) Save(ctx context.Context, key string, in *Intent) error {
	var val string
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		val = string(b)
	}
	return j.kv().Put(ctx, key, val)
}
