// Package reload keeps crowsnest's config file in force while it runs:
// Watcher loads the file once, then watches its folder (in-place writes,
// editors' rename-over, a mounted ConfigMap's symlink swap) and swaps in
// each new version that config.Parse and the caller's Applier accept,
// keeping the old one when a new one is invalid. It is the I/O around
// package config, which only reads and checks the format.
package reload
