// Package config owns crowsnest's configuration file: its types, defaults,
// strict decoding (unknown keys and wrong types are errors that name the
// field path and line), validation, and the compatibility readers that
// translate argocd-image-updater's registries.conf and Argo CD's
// argocd-notifications-cm into the same model. Each section is a type with
// setDefaults and validate methods, so a new section is a new field plus
// its two methods. Beside it: config/reload keeps the file in force while
// the daemon runs (watch, reload, keep the old version when a new one is
// invalid), and config/imageupdater reads argocd-image-updater 1.x
// ImageUpdater resources into config's image-policy terms.
package config
