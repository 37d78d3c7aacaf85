package nats

import (
	"crypto/x509"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// SetRoots makes a NATS sender trust roots instead of the system's
// (tests' own certificates).
func SetRoots(s notify.Service, roots *x509.CertPool) { s.(*natsService).roots = roots }
