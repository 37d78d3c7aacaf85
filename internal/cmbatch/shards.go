package cmbatch

import (
	"fmt"
	"hash/fnv"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
)

// Shards spreads keys over a fixed set of ConfigMaps, <prefix>-0 to
// <prefix>-<n-1>, each with its Writer: a ConfigMap holds at most 1 MiB,
// and a write rewrites a whole one. A key's shard is FNV-1a of the key
// modulo n, so changing n moves keys: keep it fixed for an installation.
type Shards struct {
	prefix  string
	writers []*Writer
}

// NewShards returns n Writers for the ConfigMaps <prefix>-<i> in
// namespace; labels are set on those the Writers create.
func NewShards(client kubecore.ConfigMapsGetter, namespace, prefix string, n int, labels map[string]string) *Shards {
	s := &Shards{prefix: prefix, writers: make([]*Writer, max(1, n))}
	for i := range s.writers {
		s.writers[i] = &Writer{Client: client, Namespace: namespace, Name: s.Name(i), Labels: labels}
	}
	return s
}

// Len is the number of shards.
func (s *Shards) Len() int { return len(s.writers) }

// Name is shard i's ConfigMap name.
func (s *Shards) Name(i int) string { return fmt.Sprintf("%s-%d", s.prefix, i) }

// Of returns key's shard.
func (s *Shards) Of(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(s.writers))) // len is small and positive
}

// Writer returns shard i's Writer.
func (s *Shards) Writer(i int) *Writer { return s.writers[i] }
