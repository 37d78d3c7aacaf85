package webhook

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/lru"
)

// ipv6ClientBits is how much of an IPv6 address names one client: a
// single host is routinely given a whole /64, so counting failures per
// address would let it start afresh 2^64 times.
const ipv6ClientBits = 64

// failures budgets failed authentications per (source, client address),
// so a sender that cannot authenticate is slowed down without touching the
// source's own bucket. The LRU bounds memory whatever the number of
// addresses: an evicted client only starts again with a full budget, which
// a new address would have had anyway.
type failures struct {
	limit rate.Limit
	burst int
	mu    sync.Mutex // makes get-or-add atomic; lru.Cache locks each call only
	cache *lru.Cache
}

type failureKey struct{ source, client string }

func newFailures(limit rate.Limit, burst, maxClients int) *failures {
	return &failures{limit: limit, burst: burst, cache: lru.New(maxClients)}
}

// spend takes one failure from client's budget for source and returns how
// long the client should wait when the budget is already spent, 0 if not.
func (f *failures) spend(source, client string) time.Duration {
	if f.limit == rate.Inf {
		return 0 // nothing to remember
	}
	key := failureKey{source, client}
	f.mu.Lock()
	l, ok := f.cache.Get(key)
	if !ok {
		l = rate.NewLimiter(f.limit, f.burst)
		f.cache.Add(key, l)
	}
	f.mu.Unlock()
	return take(l.(*rate.Limiter))
}

// take takes a token from l, or, when none is left, returns how long until
// one is, without waiting or taking it.
func take(l *rate.Limiter) time.Duration {
	res := l.Reserve()
	if d := res.Delay(); d > 0 {
		res.Cancel()
		return d
	}
	return 0
}

// setRetryAfter writes d as a Retry-After header, in whole seconds rounded
// up so a client that waits that long finds a token.
func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
}

// clientOf names the client of a request by its remote address: the host
// without the port, an IPv4-mapped IPv6 address as IPv4, and IPv6 by its
// /64. Forwarding headers (X-Forwarded-For) are not trusted: anyone can
// set them, and a budget keyed on them could be dodged or aimed at
// someone else.
func clientOf(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr // no port (a Unix socket, a test)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	if addr.Is6() {
		p, err := addr.WithZone("").Prefix(ipv6ClientBits)
		if err == nil {
			return p.String()
		}
	}
	return addr.String()
}
