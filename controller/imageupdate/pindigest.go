package imageupdate

import (
	"strconv"
	"strings"
)

// KeyPinDigest is the annotation key, after OwnPrefix, that asks for
// every image of the Application to be written as tag@digest, the digest
// the tag named when it was chosen ("true" or "false").
const KeyPinDigest = "pin-digest"

// readPinDigest reads the pin-digest annotation into wb. One that is not
// true or false is an error that leaves nothing written: a write without
// the digest is not what was asked.
func readPinDigest(ann map[string]string, wb *WriteBack, fail func(key, format string, args ...any)) {
	v, ok := ann[OwnPrefix+KeyPinDigest]
	if !ok {
		return
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		fail(KeyPinDigest, "%s is not true or false; nothing is written until it is (a write without the digest is not what was asked)", quote(v))
		return
	}
	wb.PinDigest = b
}

// TagMoved reports whether a change from one tag@digest to another is
// the same tag at a new digest (the tag was pushed again), and the tag.
func TagMoved(from, to string) (string, bool) {
	ft, fd, fok := strings.Cut(from, "@")
	tt, td, tok := strings.Cut(to, "@")
	return tt, fok && tok && ft == tt && ft != "" && fd != td
}
