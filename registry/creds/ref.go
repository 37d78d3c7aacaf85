package creds

import "github.com/crowsnest-dev/crowsnest/config"

// Ref says where credentials come from; it never holds them, so it is safe
// to log. The zero Ref means anonymous. It is config's type, so a config
// file and a --credentials flag are read by one parser.
type Ref = config.CredentialRef

// Parse reads a credentials reference: pullsecret:<namespace>/<name>,
// secret:<namespace>/<name>#<field>, env:<VAR>, ext:<absolute path> or
// dockerconfig:<absolute path>. An empty string is the zero Ref. It is
// config.ParseCredentials, errors prefixed "credentials:".
func Parse(s string) (Ref, error) { return config.ParseCredentials(s) }
