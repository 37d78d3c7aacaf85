package collect_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

// waitTimeout bounds the waits on a channel in these tests, as
// testwait.Timeout bounds the polls.
const waitTimeout = 60 * time.Second

// runner runs a Batcher as the image reconciler does (Next, then Write
// and Settled beside the other batches being written) and keeps every
// outcome.
type runner struct {
	mu       sync.Mutex
	outcomes []collect.Outcome
}

// start runs b until stop, which waits for the loop to end and returns
// every outcome.
func start(t *testing.T, b *collect.Batcher) (stop func() []collect.Outcome) {
	t.Helper()
	r := &runner{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.run(ctx, b)
	}()
	return func() []collect.Outcome {
		cancel()
		<-done
		return r.list()
	}
}

func (r *runner) run(ctx context.Context, b *collect.Batcher) {
	var writing sync.WaitGroup
	defer writing.Wait()
	for {
		batch, more := b.Next(ctx)
		if !more {
			r.write(context.WithoutCancel(ctx), b, batch)
			return
		}
		writing.Go(func() { r.write(ctx, b, batch) })
	}
}

func (r *runner) write(ctx context.Context, b *collect.Batcher, batch collect.Batch) {
	outs, _ := b.Write(ctx, batch)
	r.mu.Lock()
	r.outcomes = append(r.outcomes, outs...)
	r.mu.Unlock()
	b.Settled(batch)
}

func (r *runner) list() []collect.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.outcomes)
}

// outcomeOf is the one outcome of key.
func outcomeOf(t *testing.T, outs []collect.Outcome, key string) *collect.Outcome {
	t.Helper()
	var found *collect.Outcome
	for i := range outs {
		if outs[i].Key == key {
			if found != nil {
				t.Fatalf("two outcomes of %s: %+v", key, outs)
			}
			found = &outs[i]
		}
	}
	if found == nil {
		t.Fatalf("no outcome of %s: %+v", key, outs)
	}
	return found
}

// testGitWriter is a writer that retries fast.
func testGitWriter(t *testing.T) *gitwb.Writer {
	t.Helper()
	return &gitwb.Writer{CacheDir: t.TempDir(), Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Timeout: 30 * time.Second}
}

func kustomizationOf(image, tag string) string {
	return fmt.Sprintf("resources:\n- deployment.yaml\nimages:\n- name: %s\n  newTag: %s\n", image, tag)
}
