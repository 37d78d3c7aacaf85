// Package nats is the `nats` notification service: it publishes the
// message to a subject over the NATS client protocol on a connection of
// its own (conn.go: INFO, optional TLS, CONNECT with user/password, token
// or an nkey signature of the server's nonce, PUB or HPUB, PING/PONG as
// the acknowledgement), without a NATS client library. nkey.go reads nkey
// seeds. Package services lists its Kind.
package nats
