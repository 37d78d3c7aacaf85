package testenv

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// FreeAddr returns 127.0.0.1:<port> with a TCP port nothing listens on,
// for a process a test starts to bind. The port is picked below the
// kernel's ephemeral range: one picked from that range (as 127.0.0.1:0
// does) can be taken by any outgoing connection of the tests running
// beside it before the process binds it, which CI saw as "address already
// in use". A port is handed out once per test process.
func FreeAddr() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return hostPort(port), nil
}

// FreePort is FreeAddr's port.
func FreePort() (int, error) {
	lo := ephemeralLow()
	start := max(1024, lo-16384)
	for range 200 {
		port := start + rand.IntN(lo-start) // spreading picks, not security
		if !handOut(port) {
			continue
		}
		l, err := net.Listen("tcp", hostPort(port))
		if err != nil {
			continue // in use
		}
		_ = l.Close()
		return port, nil
	}
	return 0, errors.New("finding a free port: 200 picks below the ephemeral range were all in use")
}

var (
	portsMu sync.Mutex
	given   = map[int]bool{}
)

// handOut reports whether port was not handed out before, and marks it.
func handOut(port int) bool {
	portsMu.Lock()
	defer portsMu.Unlock()
	if given[port] {
		return false
	}
	given[port] = true
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 32768
	}
	lo, err := strconv.Atoi(fields[0])
	if err != nil || lo <= 2048 {
		return 32768
	}
	return lo
}
