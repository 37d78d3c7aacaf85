// Package fsdebounce is the one loop that turns a folder's fsnotify events
// into re-reads: the config file watcher (config/reload.Watcher) and the
// Application folder source (watcher.FileSource) both re-read what they
// watch once per burst of events, and on a timer in case an event was
// missed. It knows nothing of what is read; its callers do the reading.
package fsdebounce
