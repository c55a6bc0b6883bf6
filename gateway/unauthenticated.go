package gateway

import (
	"net"
	"net/http"
	"sync"
)

// unauthenticated bounds the connections that have not said hello yet,
// in all and per remote address, so sockets nobody has authenticated
// cannot grow the gateway without end. Each is let in at the upgrade and
// counted out at its hello, or when it ends without one.
type unauthenticated struct {
	max, perIP int

	mu    sync.Mutex
	total int
	byIP  map[string]int
}

func newUnauthenticated(l Limits) *unauthenticated {
	return &unauthenticated{max: l.MaxUnauthenticated, perIP: l.MaxUnauthenticatedPerIP, byIP: map[string]int{}}
}

// refusal is why a new connection was not let in: the HTTP status, the
// metric's scope label and the message.
type refusal struct {
	status int
	scope  string
	msg    string
}

// admit lets one more connection from ip in, or says why not.
func (u *unauthenticated) admit(ip string) *refusal {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.byIP[ip] >= u.perIP:
		return &refusal{http.StatusTooManyRequests, "ip", "too many connections from this address have not said hello yet; try again later"}
	case u.total >= u.max:
		return &refusal{http.StatusServiceUnavailable, "global", "too many connections have not said hello yet; try again later"}
	}
	u.total++
	u.byIP[ip]++
	return nil
}

// release counts a connection from ip out: it said hello, or ended.
func (u *unauthenticated) release(ip string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.total--
	if u.byIP[ip]--; u.byIP[ip] <= 0 {
		delete(u.byIP, ip)
	}
}

// remoteIP is the address a request came from, without its port. Behind
// a reverse proxy it is the proxy's.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
