package watcher

import "sync"

// SyncSignal tells when a source delivered its initial objects: a channel
// closed then, so that whoever waits for it starts at once rather than on
// its next poll. The zero value is ready to use.
type SyncSignal struct {
	init sync.Once
	done sync.Once
	ch   chan struct{}
}

func (s *SyncSignal) c() chan struct{} {
	s.init.Do(func() { s.ch = make(chan struct{}) })
	return s.ch
}

// Mark records that the source synced; later calls do nothing.
func (s *SyncSignal) Mark() { s.done.Do(func() { close(s.c()) }) }

// Done is closed once the source synced.
func (s *SyncSignal) Done() <-chan struct{} { return s.c() }

// IsDone reports whether the source synced.
func (s *SyncSignal) IsDone() bool {
	select {
	case <-s.c():
		return true
	default:
		return false
	}
}
