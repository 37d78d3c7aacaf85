package outbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/crowsnest-dev/crowsnest/internal/cmbatch"
)

// logSuffix names a shard's log ConfigMap: <Prefix>-log-<shard>.
const logSuffix = "-log"

// Compactor is a Store that moves finished records out of the way of the
// pending ones; the running Outbox calls Compact after deliveries settle.
type Compactor interface {
	Compact(ctx context.Context) error
}

// loadLogIDs reads the IDs of shard's log once, before the first Create
// of the shard relies on them.
func (s *ConfigMapStore) loadLogIDs(ctx context.Context, shard int) error {
	s.init()
	s.logMu.Lock()
	loaded := s.logIDs[shard] != nil
	s.logMu.Unlock()
	if loaded {
		return nil
	}
	cm, err := s.read(ctx, s.logs.Name(shard))
	if err != nil {
		return err
	}
	ids := map[string]bool{}
	for k := range cm.Data {
		if id, ok := strings.CutPrefix(k, recordKeyPrefix); ok {
			ids[id] = true
		}
	}
	s.logMu.Lock()
	if s.logIDs[shard] == nil {
		s.logIDs[shard] = ids
	}
	s.logMu.Unlock()
	return nil
}

func (s *ConfigMapStore) inLog(shard int, id string) bool {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.logIDs[shard][id]
}

// Compact implements Compactor: each shard's finished records are moved
// into its log ConfigMap (<Prefix>-log-<shard>), where each app keeps its
// newest Keep and the log its newest LogBytes. The shards then hold
// little more than the pending records, so the write each delivery waits
// for stays small however long the log; the log is written once per
// compaction, not once per delivery. A record is added to the log before
// it leaves the shard, and leaves only if unchanged meanwhile (a
// redelivery may have made it pending again): a crash in between leaves it
// in both, which List and Create read as one.
func (s *ConfigMapStore) Compact(ctx context.Context) error {
	s.init()
	var errs []error
	for shard := range s.shards() {
		if err := s.compact(ctx, shard); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("compacting the outbox: %w", errs[0])
	}
	return nil
}

func (s *ConfigMapStore) compact(ctx context.Context, shard int) error {
	if err := s.loadLogIDs(ctx, shard); err != nil {
		return err
	}
	cm, err := s.get(ctx, shard)
	if err != nil {
		return err
	}
	moved := map[string]string{}
	for k, v := range cm.Data {
		if !strings.HasPrefix(k, recordKeyPrefix) {
			continue
		}
		var h recordHead
		if decodeHead(v, &h) && (h.State == StateDelivered || h.State == StateDead) {
			moved[k] = v
		}
	}
	if len(moved) == 0 {
		return nil
	}
	var dropped []string
	err = s.logs.Writer(shard).Apply(ctx, func(b *cmbatch.Batch) (bool, error) {
		dropped = nil
		for k, v := range moved {
			b.Data[k] = v
		}
		b.Finally("trim", func(data map[string]string) {
			before := make(map[string]bool, len(data))
			for k := range data {
				before[k] = true
			}
			s.trim(data)
			for k := range before {
				if _, ok := data[k]; !ok {
					dropped = append(dropped, k)
				}
			}
		})
		return true, nil
	})
	if err != nil {
		return err
	}
	s.logMu.Lock()
	ids := s.logIDs[shard]
	for k := range moved {
		ids[strings.TrimPrefix(k, recordKeyPrefix)] = true
	}
	for _, k := range dropped {
		delete(ids, strings.TrimPrefix(k, recordKeyPrefix))
	}
	s.logMu.Unlock()
	return s.mutate(ctx, shard, func(b *cmbatch.Batch) (bool, error) {
		changed := false
		for k, v := range moved {
			if b.Data[k] == v {
				delete(b.Data, k)
				changed = true
			}
		}
		return changed, nil
	})
}
