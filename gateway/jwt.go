package gateway

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
)

// JWTConfig says how the gateway checks signed access tokens: short-lived
// JWTs an application issues per user, naming the user (sub) and the
// Sessions they may use (the "sessions" claim, like a static grant's), so
// granting a Session takes no file edit. Exactly one of Key and JWKSURL.
type JWTConfig struct {
	// Key is a PEM public key (RSA, ECDSA or Ed25519) or a JSON Web Key Set.
	Key []byte
	// JWKSURL is where the issuer publishes its key set; it is fetched at
	// start, every JWKSRefresh, and when a token names a key it lacks
	// (at most once a minute).
	JWKSURL     string
	JWKSRefresh time.Duration
	// Issuer and Audience, when set, must match the iss and aud claims.
	Issuer, Audience string
	// MaxLifetime bounds how long a token may live: exp - iat, or exp -
	// now for a token without iat. A longer-lived one is refused, so a
	// leaked token is not good for years. 0 means DefaultMaxTokenLifetime.
	MaxLifetime time.Duration
	// Client fetches JWKSURL; nil is a client with a 10 s timeout.
	Client *http.Client
	Logger *slog.Logger
}

// signatureAlgorithms are the asymmetric algorithms accepted: a shared
// secret would let every gateway mint tokens.
var signatureAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// leeway is the clock skew allowed between issuer and gateway.
const leeway = 30 * time.Second

// DefaultMaxTokenLifetime is the longest a signed token may live unless
// JWTConfig.MaxLifetime says otherwise.
const DefaultMaxTokenLifetime = 24 * time.Hour

// jwtVerifier checks signed tokens against its keys.
type jwtVerifier struct {
	cfg JWTConfig
	now func() time.Time

	mu        sync.Mutex
	keys      any // a public key or *jose.JSONWebKeySet
	fetchedAt time.Time
}

// newJWTVerifier loads cfg's key, or fetches its key set once.
func newJWTVerifier(ctx context.Context, cfg JWTConfig) (*jwtVerifier, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.JWKSRefresh <= 0 {
		cfg.JWKSRefresh = 5 * time.Minute
	}
	if cfg.MaxLifetime <= 0 {
		cfg.MaxLifetime = DefaultMaxTokenLifetime
	}
	v := &jwtVerifier{cfg: cfg, now: time.Now}
	switch {
	case (len(cfg.Key) == 0) == (cfg.JWKSURL == ""):
		return nil, holdover.New(holdover.CodeBadRequest, "jwt: give either a key or a JWKS URL")
	case len(cfg.Key) > 0:
		keys, err := parseKeys(cfg.Key)
		if err != nil {
			return nil, err
		}
		v.keys = keys
	default:
		if err := v.fetch(ctx); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// parseKeys reads a PEM public key or a JSON Web Key Set.
func parseKeys(data []byte) (any, error) {
	if block, _ := pem.Decode(data); block != nil {
		key, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, holdover.Wrap(err, holdover.CodeBadRequest, "jwt: the PEM block is not a public key")
		}
		return key, nil
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil || len(set.Keys) == 0 {
		return nil, holdover.New(holdover.CodeBadRequest, "jwt: the key is neither a PEM public key nor a JSON Web Key Set")
	}
	for _, k := range set.Keys {
		if !k.IsPublic() {
			return nil, holdover.Newf(holdover.CodeBadRequest, "jwt: key %q is private; give the gateway public keys only", k.KeyID)
		}
	}
	return &set, nil
}

// fetch reads the key set at JWKSURL.
func (v *jwtVerifier) fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, nil)
	if err != nil {
		return holdover.Wrap(err, holdover.CodeBadRequest, "jwt: JWKS URL")
	}
	resp, err := v.cfg.Client.Do(req)
	if err != nil {
		return holdover.Wrap(err, clientwire.CodeUnavailable, "jwt: fetch the key set")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return holdover.Newf(clientwire.CodeUnavailable, "jwt: fetch the key set: %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return holdover.Wrap(err, clientwire.CodeUnavailable, "jwt: read the key set")
	}
	keys, err := parseKeys(data)
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.keys, v.fetchedAt = keys, v.now()
	v.mu.Unlock()
	return nil
}

// currentKeys returns the keys, fetching the set again when it is due or
// when the token names a key it lacks (at most once a minute).
func (v *jwtVerifier) currentKeys(kid string) any {
	v.mu.Lock()
	keys, age := v.keys, v.now().Sub(v.fetchedAt)
	v.mu.Unlock()
	set, isSet := keys.(*jose.JSONWebKeySet)
	if v.cfg.JWKSURL == "" || !isSet {
		return keys
	}
	if age > v.cfg.JWKSRefresh || (len(set.Key(kid)) == 0 && age > time.Minute) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := v.fetch(ctx); err != nil {
			v.cfg.Logger.Warn("could not refresh the JWT key set; using the one fetched before", "age", age, "err", err)
		}
		v.mu.Lock()
		keys = v.keys
		v.mu.Unlock()
	}
	return keys
}

// sessionClaims are the claims a token carries beyond the registered ones.
type sessionClaims struct {
	Sessions []string `json:"sessions"`
}

// verify checks a signed token and returns its grant, which ends when the
// token does.
func (v *jwtVerifier) verify(raw string) (Grant, error) {
	tok, err := jwt.ParseSigned(raw, signatureAlgorithms)
	if err != nil {
		return Grant{}, holdover.Wrap(err, clientwire.CodeUnauthorized, "the access token is not a signed JWT")
	}
	kid := ""
	if len(tok.Headers) > 0 {
		kid = tok.Headers[0].KeyID
	}
	var claims jwt.Claims
	var extra sessionClaims
	if err := tok.Claims(v.currentKeys(kid), &claims, &extra); err != nil {
		return Grant{}, holdover.Wrap(err, clientwire.CodeUnauthorized, "the access token's signature does not verify")
	}
	if claims.Expiry == nil {
		return Grant{}, holdover.New(clientwire.CodeUnauthorized, "the access token has no expiry (exp); only short-lived tokens are accepted")
	}
	expected := jwt.Expected{Issuer: v.cfg.Issuer, Time: v.now()}
	if v.cfg.Audience != "" {
		expected.AnyAudience = jwt.Audience{v.cfg.Audience}
	}
	if err := claims.ValidateWithLeeway(expected, leeway); err != nil {
		return Grant{}, holdover.Wrap(err, clientwire.CodeUnauthorized, "the access token is not valid now or not for this gateway")
	}
	if err := v.checkLifetime(claims); err != nil {
		return Grant{}, err
	}
	g := Grant{User: claims.Subject, Sessions: extra.Sessions}
	if err := g.check(); err != nil {
		return Grant{}, holdover.Wrap(err, clientwire.CodeUnauthorized, "the access token's claims")
	}
	g.Expires = claims.Expiry.Time()
	return g, nil
}

// checkLifetime refuses a token that lives longer than MaxLifetime: from
// its iat, or from now when it has none, to its exp. (A token issued in
// the future was refused before, by Validate.)
func (v *jwtVerifier) checkLifetime(claims jwt.Claims) error {
	from, since := v.now(), "now"
	if claims.IssuedAt != nil {
		from, since = claims.IssuedAt.Time(), "its iat"
	}
	life := claims.Expiry.Time().Sub(from)
	if life > v.cfg.MaxLifetime+leeway {
		return holdover.Newf(clientwire.CodeUnauthorized, "the access token lives %s from %s to its exp, longer than the %s this gateway accepts (--jwt-max-lifetime); issue shorter-lived tokens",
			life.Round(time.Second), since, v.cfg.MaxLifetime)
	}
	return nil
}

// looksSigned reports whether token has a JWT's three parts; a static
// token never needs dots.
func looksSigned(token string) bool { return strings.Count(token, ".") == 2 }
