package nats

import "crypto/ed25519"

// nkeyPair is a user's signing key and its public nkey
// (servicetypes.NATSUserSeed reads it from the seed).
type nkeyPair struct {
	public  string
	private ed25519.PrivateKey
}
