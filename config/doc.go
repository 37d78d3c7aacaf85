// Package config owns crowsnest's configuration file: its types, defaults,
// strict decoding (unknown keys and wrong types are errors that name the
// field path and line), validation, and the Watcher that reloads the file
// when it changes and keeps the old version when a new one is invalid.
// Each section is a type with setDefaults and validate methods, so a new
// section is a new field plus its two methods.
package config
