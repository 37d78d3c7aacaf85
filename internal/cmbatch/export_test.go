package cmbatch

// Queued is how many changes wait for the next write, for tests that
// must know a change joined a batch.
func (w *Writer) Queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}
