package git

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ProtonMail/go-crypto/openpgp"
)

// ReadSignKey reads an ASCII-armored OpenPGP private key (as exported by
// gpg --export-secret-keys --armor) for signing commits, decrypting it
// with passphrase when it is protected.
func ReadSignKey(armored, passphrase []byte) (*openpgp.Entity, error) {
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("reading signing key: %w", err)
	}
	if len(ring) == 0 || ring[0].PrivateKey == nil {
		return nil, errors.New("reading signing key: no private key")
	}
	e := ring[0]
	if e.PrivateKey.Encrypted {
		if err := e.DecryptPrivateKeys(passphrase); err != nil {
			return nil, fmt.Errorf("decrypting signing key: %w", err)
		}
	}
	return e, nil
}
