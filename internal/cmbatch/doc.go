// Package cmbatch keeps small state in ConfigMaps that many goroutines
// change at once: the notification outbox, the notification trigger state
// and the write journal. A Writer batches the changes that arrive while a
// write is in flight into the next write (group commit) and keeps the
// object it wrote, so a burst costs a few requests instead of a read and a
// write per change; Shards spreads keys over several ConfigMaps.
package cmbatch
