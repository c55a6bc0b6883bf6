package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/clientwire"
)

const patience = 10 * time.Second

// client is one WebSocket to a test gateway.
type client struct {
	t  *testing.T
	ws *websocket.Conn
}

// dial opens a WebSocket and says hello with token (in the frame, as the
// web Client does, so no address carries it).
func dial(t *testing.T, base, token string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, strings.Replace(base, "http", "ws", 1)+"/ws", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.CloseNow() })
	c := &client{t: t, ws: ws}
	hello, _ := json.Marshal(map[string]any{"type": "hello", "protocol": 1, "client": "test", "token": token})
	c.send(string(hello))
	return c
}

func (c *client) send(frame string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	require.NoError(c.t, c.ws.Write(ctx, websocket.MessageText, []byte(frame)))
}

// next reads the next frame, or the close status once the gateway closed.
func (c *client) next() (map[string]any, websocket.StatusCode) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, data, err := c.ws.Read(ctx)
	if err != nil {
		status := websocket.CloseStatus(err)
		require.NotEqual(c.t, websocket.StatusCode(-1), status, "read: %v", err)
		return nil, status
	}
	var f map[string]any
	require.NoError(c.t, json.Unmarshal(data, &f))
	return f, 0
}

// refused reads the error frame and the close that end a refused hello.
func (c *client) refused(code string, status websocket.StatusCode) string {
	c.t.Helper()
	f, _ := c.next()
	require.Equal(c.t, "error", f["type"], "%v", f)
	require.Equal(c.t, code, f["code"], "%v", f)
	_, got := c.next()
	require.Equal(c.t, status, got)
	return f["message"].(string)
}

// The UI and every other response carry the browser hardening headers: no
// inline script or foreign origin, no framing, no referrer, no sniffing.
func TestServerSendsSecurityHeaders(t *testing.T) {
	base, _, _ := serve(t)
	resp, err := http.Get(base + "/")
	require.NoError(t, err)
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'", "connect-src 'self'"} {
		assert.Contains(t, csp, want)
	}
	assert.NotContains(t, csp, "unsafe-inline")
	assert.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"))
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
}

// One token holds at most MaxConnsPerToken connections: one more is
// refused with TOO_MANY_CONNECTIONS and close 4429, and is admitted again
// once another of the token's connections is gone.
func TestTokenConnectionLimit(t *testing.T) {
	base, _, _ := serveWith(t, func(c *Config) { c.Limits.MaxConnsPerToken = 2 })
	first, second := dial(t, base, "t"), dial(t, base, "t")
	for _, c := range []*client{first, second} {
		f, _ := c.next()
		require.Equal(t, "welcome", f["type"])
	}
	msg := dial(t, base, "t").refused(string(clientwire.CodeTooManyConnections), clientwire.CloseTooMany)
	assert.Contains(t, msg, "2 connections")
	require.NoError(t, first.ws.Close(websocket.StatusNormalClosure, ""))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		f, _ := dial(t, base, "t").next()
		assert.Equal(ct, "welcome", f["type"])
	}, patience, 20*time.Millisecond, "a closed connection gives its place back")
}

// The frames of all of a token's connections share one budget: two
// connections that each stay under the per-connection rate still get
// RATE_LIMITED together, and frames that only end something pass.
func TestTokenFrameRateIsShared(t *testing.T) {
	base, _, _ := serveWith(t, func(c *Config) {
		c.Limits.TokenFramesPerSecond, c.Limits.TokenBurst = 0.01, 2 // hello is not counted: it comes before the token is known
	})
	a, b := dial(t, base, "t"), dial(t, base, "t")
	for _, c := range []*client{a, b} {
		f, _ := c.next()
		require.Equal(t, "welcome", f["type"])
	}
	a.send(`{"type":"call","id":"c1","method":"nothing.here","params":{"session":"s1"}}`)
	b.send(`{"type":"call","id":"c2","method":"nothing.here","params":{"session":"s1"}}`)
	for _, c := range []*client{a, b} {
		f, _ := c.next()
		require.Equal(t, "NOT_FOUND", f["code"], "within the token's budget: %v", f)
	}
	b.send(`{"type":"unwatch","id":"w9"}`) // ends something: it waits for the token's next share, never dropped
	a.send(`{"type":"call","id":"c3","method":"nothing.here","params":{"session":"s1"}}`)
	f, _ := a.next()
	require.Equal(t, string(clientwire.CodeRateLimited), f["code"], "%v", f)
	assert.Equal(t, "c3", f["id"])
	assert.Contains(t, f["message"], "this token's connections")
}

// issuer signs access tokens as an application would.
type issuer struct {
	t      *testing.T
	kid    string
	key    ed25519.PrivateKey
	signer jose.Signer
}

func newIssuer(t *testing.T, kid string) *issuer {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	_ = pub
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: priv, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	require.NoError(t, err)
	return &issuer{t: t, kid: kid, key: priv, signer: signer}
}

func (i *issuer) publicPEM() []byte {
	der, err := x509.MarshalPKIXPublicKey(i.key.Public())
	require.NoError(i.t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func (i *issuer) jwks() []byte {
	data, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: i.key.Public(), KeyID: i.kid, Algorithm: string(jose.EdDSA), Use: "sig"}}})
	require.NoError(i.t, err)
	return data
}

// token signs a token for user and sessions that expires in ttl.
func (i *issuer) token(user string, sessions []string, ttl time.Duration, aud string) string {
	now := time.Now()
	claims := jwt.Claims{Subject: user, Issuer: "app", IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(ttl))}
	if aud != "" {
		claims.Audience = jwt.Audience{aud}
	}
	return i.sign(claims, sessions)
}

// sign signs claims with the Sessions claim.
func (i *issuer) sign(claims jwt.Claims, sessions []string) string {
	raw, err := jwt.Signed(i.signer).Claims(claims).Claims(map[string]any{"sessions": sessions}).Serialize()
	require.NoError(i.t, err)
	return raw
}

// A signed token names its user and Sessions, which the welcome repeats;
// one expired, signed by another key, for another audience or without an
// expiry is refused with UNAUTHORIZED; the static token still works.
func TestSignedTokens(t *testing.T) {
	app := newIssuer(t, "k1")
	base, _, _ := serveWith(t, func(c *Config) {
		require.NoError(t, c.Tokens.WithJWT(context.Background(), JWTConfig{Key: app.publicPEM(), Issuer: "app", Audience: "holdover"}))
	})
	f, _ := dial(t, base, app.token("bea", []string{"s7"}, time.Minute, "holdover")).next()
	require.Equal(t, "welcome", f["type"], "%v", f)
	assert.Equal(t, "bea", f["user"])
	assert.Equal(t, []any{"s7"}, f["sessions"])

	for name, token := range map[string]string{
		"expired":        app.token("bea", []string{"s7"}, -time.Minute, "holdover"),
		"another key":    newIssuer(t, "k1").token("bea", []string{"s7"}, time.Minute, "holdover"),
		"other audience": app.token("bea", []string{"s7"}, time.Minute, "elsewhere"),
		"no Sessions":    app.token("bea", nil, time.Minute, "holdover"),
		"not a token":    "a.b.c",
	} {
		msg := dial(t, base, token).refused(string(clientwire.CodeUnauthorized), clientwire.CloseUnauthorized)
		assert.NotContains(t, msg, token, name)
	}
	f, _ = dial(t, base, "t").next()
	assert.Equal(t, "welcome", f["type"], "the static table still answers")
}

// A connection lives no longer than its token: when a signed token
// expires, the gateway closes its connection with UNAUTHORIZED.
func TestSignedTokenExpiryClosesTheConnection(t *testing.T) {
	app := newIssuer(t, "k1")
	base, _, _ := serveWith(t, func(c *Config) {
		require.NoError(t, c.Tokens.WithJWT(context.Background(), JWTConfig{Key: app.jwks()}))
	})
	c := dial(t, base, app.token("bea", []string{"s7"}, 1500*time.Millisecond, ""))
	f, _ := c.next()
	require.Equal(t, "welcome", f["type"], "%v", f)
	msg := c.refused(string(clientwire.CodeUnauthorized), clientwire.CloseUnauthorized)
	assert.Contains(t, msg, "expired")
}

// A signed token lives at most the configured lifetime (24 h unless set),
// counted from its iat, or from now when it has none: a token that expires
// in 2100 is refused, with or without iat, and says why.
func TestSignedTokenLifetimeIsCapped(t *testing.T) {
	app := newIssuer(t, "k1")
	base, _, _ := serveWith(t, func(c *Config) {
		require.NoError(t, c.Tokens.WithJWT(context.Background(), JWTConfig{Key: app.publicPEM()}))
	})
	now := time.Now()
	in2100 := jwt.NewNumericDate(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	for name, claims := range map[string]jwt.Claims{
		"iat now, exp in 2100":  {Subject: "bea", IssuedAt: jwt.NewNumericDate(now), Expiry: in2100},
		"no iat, exp in 2100":   {Subject: "bea", Expiry: in2100},
		"iat now, exp in 25 h":  {Subject: "bea", IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(25 * time.Hour))},
		"iat in 2099, exp 2100": {Subject: "bea", IssuedAt: jwt.NewNumericDate(time.Date(2099, 12, 31, 12, 0, 0, 0, time.UTC)), Expiry: in2100},
	} {
		msg := dial(t, base, app.sign(claims, []string{"s7"})).refused(string(clientwire.CodeUnauthorized), clientwire.CloseUnauthorized)
		if name != "iat in 2099, exp 2100" { // refused as issued in the future
			assert.Contains(t, msg, "longer than the 24h0m0s this gateway accepts", name)
		}
	}
	for name, claims := range map[string]jwt.Claims{
		"iat an hour ago, exp in 23 h": {Subject: "bea", IssuedAt: jwt.NewNumericDate(now.Add(-time.Hour)), Expiry: jwt.NewNumericDate(now.Add(23 * time.Hour))},
		"no iat, exp in 24 h":          {Subject: "bea", Expiry: jwt.NewNumericDate(now.Add(24 * time.Hour))},
	} {
		f, _ := dial(t, base, app.sign(claims, []string{"s7"})).next()
		assert.Equal(t, "welcome", f["type"], "%s: %v", name, f)
	}

	short := time.Hour
	base, _, _ = serveWith(t, func(c *Config) {
		require.NoError(t, c.Tokens.WithJWT(context.Background(), JWTConfig{Key: app.publicPEM(), MaxLifetime: short}))
	})
	msg := dial(t, base, app.token("bea", []string{"s7"}, 2*time.Hour, "")).refused(string(clientwire.CodeUnauthorized), clientwire.CloseUnauthorized)
	assert.Contains(t, msg, "longer than the 1h0m0s this gateway accepts")
}

// Keys can come from the issuer's JWKS URL: fetched at start, and again
// when a token names a key the set lacks (a rotation).
func TestSignedTokensFromAJWKSURL(t *testing.T) {
	old, rotated := newIssuer(t, "k1"), newIssuer(t, "k2")
	current := old
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(current.jwks()) }))
	t.Cleanup(jwks.Close)
	var verifier *jwtVerifier
	base, _, _ := serveWith(t, func(c *Config) {
		require.NoError(t, c.Tokens.WithJWT(context.Background(), JWTConfig{JWKSURL: jwks.URL}))
		verifier = c.Tokens.jwt
	})
	f, _ := dial(t, base, old.token("bea", []string{"*"}, time.Minute, "")).next()
	require.Equal(t, "welcome", f["type"], "%v", f)

	current = rotated
	verifier.mu.Lock()
	verifier.fetchedAt = verifier.fetchedAt.Add(-2 * time.Minute) // the set is old enough to fetch again for an unknown key
	verifier.mu.Unlock()
	f, _ = dial(t, base, rotated.token("bea", []string{"*"}, time.Minute, "")).next()
	require.Equal(t, "welcome", f["type"], "a token of the rotated key: %v", f)
}

// Connections that have not said hello are bounded in all and per remote
// address: one more is refused at the upgrade, 429 over the address's cap
// and 503 over the gateway's, and counted; a hello, or a socket that
// ends, makes room.
func TestConnectionsBeforeHelloAreCapped(t *testing.T) {
	base, srv, _ := serveWith(t, func(c *Config) {
		c.Limits.MaxUnauthenticated, c.Limits.MaxUnauthenticatedPerIP = 3, 2
	})
	url := strings.Replace(base, "http", "ws", 1) + "/ws"
	// Loopback takes every 127.x address: each from stands for a host.
	open := func(from string) (*websocket.Conn, int) {
		t.Helper()
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}})
		if err != nil {
			require.NotNil(t, resp, "%v", err)
			return nil, resp.StatusCode
		}
		t.Cleanup(func() { _ = ws.CloseNow() })
		return ws, http.StatusSwitchingProtocols
	}
	waiting := func() float64 { return sample(srv.m.unauthenticated).GetGauge().GetValue() }

	a1, status := open("127.0.0.1")
	require.Equal(t, http.StatusSwitchingProtocols, status)
	_, status = open("127.0.0.1")
	require.Equal(t, http.StatusSwitchingProtocols, status)
	_, status = open("127.0.0.1")
	require.Equal(t, http.StatusTooManyRequests, status, "a third from one address")
	b1, status := open("127.0.0.2")
	require.Equal(t, http.StatusSwitchingProtocols, status)
	_, status = open("127.0.0.3")
	require.Equal(t, http.StatusServiceUnavailable, status, "a fourth in all")
	require.Equal(t, 3.0, waiting())

	hello := &client{t: t, ws: a1}
	hello.send(`{"type":"hello","protocol":2,"client":"test","token":"t"}`)
	f, _ := hello.next()
	require.Equal(t, "welcome", f["type"])
	require.Equal(t, 2.0, waiting(), "a hello counts the connection out")
	_, status = open("127.0.0.1")
	require.Equal(t, http.StatusSwitchingProtocols, status, "room for one more from the address that said hello")

	_ = b1.CloseNow()
	require.Eventually(t, func() bool { return waiting() == 2 }, patience, 10*time.Millisecond, "a socket that ends makes room")
	_, status = open("127.0.0.3")
	require.Equal(t, http.StatusSwitchingProtocols, status)

	refused := srv.m.unauthRefused
	assert.Equal(t, 1.0, sample(refused.WithLabelValues("ip")).GetCounter().GetValue())
	assert.Equal(t, 1.0, sample(refused.WithLabelValues("global")).GetCounter().GetValue())
}

// sample reads one metric's value.
func sample(m prometheus.Metric) *dto.Metric {
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		panic(err)
	}
	return &out
}
