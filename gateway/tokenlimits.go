package gateway

import (
	"crypto/sha256"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
)

// tokenLimits bounds what all the connections of one token do together,
// so a leaked or shared token cannot open the gateway without end: how
// many connections it holds at once, and how many frames they send a
// second between them. A token is known by its digest only.
type tokenLimits struct {
	maxConns int
	rate     rate.Limit
	burst    int

	mu     sync.Mutex
	tokens map[[sha256.Size]byte]*tokenUse
}

// tokenUse is one token's share: its open connections and their frames.
type tokenUse struct {
	key     [sha256.Size]byte
	conns   int
	limiter *rate.Limiter
}

func newTokenLimits(l Limits) *tokenLimits {
	return &tokenLimits{maxConns: l.MaxConnsPerToken, rate: rate.Limit(l.TokenFramesPerSecond), burst: l.TokenBurst, tokens: map[[sha256.Size]byte]*tokenUse{}}
}

// admit counts one more connection of the token key, unless it holds as
// many as allowed.
func (l *tokenLimits) admit(key [sha256.Size]byte) (*tokenUse, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.tokens[key]
	if u == nil {
		u = &tokenUse{key: key, limiter: rate.NewLimiter(l.rate, l.burst)}
		l.tokens[key] = u
	}
	if u.conns >= l.maxConns {
		return nil, holdover.Newf(clientwire.CodeTooManyConnections, "this token already holds %d connections, as many as allowed; close one or try again later", l.maxConns)
	}
	u.conns++
	return u, nil
}

// release counts a connection of u gone; the last one forgets the token.
func (l *tokenLimits) release(u *tokenUse) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u.conns--; u.conns == 0 {
		delete(l.tokens, u.key)
	}
}

// admitToken applies the grant's token limits and expiry to c after its
// hello: false when the token holds too many connections already (c is
// being closed). A signed token's connection is closed when it expires.
func (c *conn) admitToken(g Grant) bool {
	use, err := c.s.tokens.admit(g.key)
	if err != nil {
		c.closeWith(clientwire.CloseTooMany, err)
		return false
	}
	c.tokenUse = use
	if !g.Expires.IsZero() {
		c.expiry = time.AfterFunc(time.Until(g.Expires), func() {
			c.closeWith(clientwire.CloseUnauthorized, holdover.Newf(clientwire.CodeUnauthorized, "the access token expired at %s", g.Expires.UTC().Format(time.RFC3339)))
		})
	}
	return true
}

// tokenAllows takes one frame from the token's shared budget.
func (c *conn) tokenAllows() bool { return c.tokenUse == nil || c.tokenUse.limiter.Allow() }

// releaseToken gives the connection's share back when it ends.
func (c *conn) releaseToken() {
	if c.expiry != nil {
		c.expiry.Stop()
	}
	if c.tokenUse != nil {
		c.s.tokens.release(c.tokenUse)
	}
}
