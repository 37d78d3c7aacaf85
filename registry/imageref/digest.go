package imageref

import (
	// The digest algorithms go-digest checks for must be linked in.
	_ "crypto/sha256"
	_ "crypto/sha512"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
)

// checkDigest holds the digest after '@' to the OCI digest rules: a
// known algorithm and an encoded value of its length and alphabet. A
// second '@' is refused, so a reference has one repository.
func checkDigest(repoPart, dgst string) error {
	if strings.Contains(dgst, "@") {
		return fmt.Errorf("a digest must contain exactly one '@' separator (e.g. registry/repository@digest) saw: %s", repoPart+"@"+dgst)
	}
	if err := digest.Digest(dgst).Validate(); err != nil {
		return fmt.Errorf("%w: %s", err, dgst)
	}
	return nil
}
