package servicetypes

import (
	"crypto/ed25519"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"strings"
)

// NATS nkeys are ed25519 keys written as base32 (no padding) of a prefix,
// the key and a CRC-16/XMODEM checksum (little-endian). A seed's two
// prefix bytes carry 'S' and the key's type; crowsnest signs as a user
// ('U'), the only type a client connects with.
const (
	nkeyPrefixSeed = 18 << 3 // 'S'
	nkeyPrefixUser = 20 << 3 // 'U'
)

var nkeyBase32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// errNKeySeed never carries the seed.
var errNKeySeed = errors.New("not a NATS user nkey seed (SU...)")

// NATSUserSeed returns the public nkey ("U...") and the private key of a
// user seed ("SU...").
func NATSUserSeed(seed string) (string, ed25519.PrivateKey, error) {
	raw, err := nkeyBase32.DecodeString(strings.TrimSpace(seed))
	if err != nil || len(raw) != 2+ed25519.SeedSize+2 {
		return "", nil, errNKeySeed
	}
	body, sum := raw[:len(raw)-2], binary.LittleEndian.Uint16(raw[len(raw)-2:])
	if crc16XMODEM(body) != sum {
		return "", nil, errNKeySeed
	}
	kind := (raw[0]&7)<<5 | (raw[1]&248)>>3
	if raw[0]&248 != nkeyPrefixSeed || kind != nkeyPrefixUser {
		return "", nil, errNKeySeed
	}
	priv := ed25519.NewKeyFromSeed(raw[2 : 2+ed25519.SeedSize])
	return encodeNKey(nkeyPrefixUser, priv.Public().(ed25519.PublicKey)), priv, nil
}

// encodeNKey writes a public key with its type's prefix.
func encodeNKey(prefix byte, key []byte) string {
	raw := append([]byte{prefix}, key...)
	raw = binary.LittleEndian.AppendUint16(raw, crc16XMODEM(raw))
	return nkeyBase32.EncodeToString(raw)
}

// crc16XMODEM is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the
// checksum of nkeys.
func crc16XMODEM(data []byte) uint16 {
	var crc uint16
	for _, b := range data {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
