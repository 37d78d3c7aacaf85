// Package faults is crowsnest's fault-injection suite: the crowsnest binary
// runs as a subprocess against the real kube-apiserver (internal/testenv),
// an OCI registry (internal/testreg), a Git server (internal/testgit) and
// notification sinks on 127.0.0.1, each made to fail in the ways production
// parts fail (429, 5xx, hanging and reset connections, truncated bodies,
// rejected pushes, outages, refused credentials, an apiserver restart,
// write conflicts, SIGKILL of crowsnest itself, leader failover). After each
// scenario the tests check that every intended image update landed exactly
// once, that every notification was delivered, how many were duplicated,
// and that the daemon is healthy, and they print a table of it all
// (`make faults`; $FAULTS_REPORT names a file for the table).
package faults
