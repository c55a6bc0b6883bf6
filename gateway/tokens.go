package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"time"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/streams"
)

// AllSessions in a grant's Sessions lets its token read and answer every
// Session.
const AllSessions = "*"

// Grant is what one token lets its holder do: read and answer the listed
// Sessions.
type Grant struct {
	// User names the person behind the token, for logs and the welcome frame.
	User string `json:"user"`
	// Sessions are the Session ids the token may watch, answer and call
	// for; ["*"] allows every Session.
	Sessions []string `json:"sessions"`
	// Expires is when a signed token's grant ends; its connections are
	// closed then. Zero for a static token, which lasts while listed.
	Expires time.Time `json:"-"`

	// key identifies the token for per-token limits: its digest, never
	// the token itself.
	key [sha256.Size]byte
}

// check refuses a grant without a user or Sessions, or with a Session id
// that is neither "*" nor valid, so a typo fails where it is made.
func (g Grant) check() error {
	if g.User == "" {
		return holdover.New(holdover.CodeBadRequest, "tokens: a token has no user")
	}
	if len(g.Sessions) == 0 {
		return holdover.Newf(holdover.CodeBadRequest, "tokens: the token of user %q lists no Sessions", g.User)
	}
	for _, sid := range g.Sessions {
		if sid == AllSessions {
			continue
		}
		if err := streams.CheckSession(sid); err != nil {
			return holdover.Newf(holdover.CodeBadRequest, "tokens: user %q: %v", g.User, err)
		}
	}
	return nil
}

// Allows reports whether the grant covers Session sid.
func (g Grant) Allows(sid string) bool {
	return slices.Contains(g.Sessions, AllSessions) || slices.Contains(g.Sessions, sid)
}

// Tokens is the gateway's token table: static tokens from a file (for dev
// and small setups), and signed short-lived tokens when a JWT key is
// configured (WithJWT). Look-ups compare every static token in constant
// time, so response timing says nothing about how close a guess came.
type Tokens struct {
	entries []tokenEntry
	jwt     *jwtVerifier
}

type tokenEntry struct {
	digest [sha256.Size]byte
	grant  Grant
}

// tokensFile is the JSON form of a token table:
//
//	{"tokens": {"<token>": {"user": "ana", "sessions": ["s1", "s2"]}}}
type tokensFile struct {
	Tokens map[string]Grant `json:"tokens"`
}

// NewTokens builds a table from token → grant. Every grant needs a user
// and at least one Session, each "*" or a valid Session id, so a typo in
// the configuration fails at start instead of locking a person out later.
func NewTokens(grants map[string]Grant) (*Tokens, error) {
	t := &Tokens{}
	for token, g := range grants {
		if token == "" {
			return nil, holdover.New(holdover.CodeBadRequest, "tokens: a token is empty")
		}
		if looksSigned(token) {
			return nil, holdover.Newf(holdover.CodeBadRequest, "tokens: the token of user %q has two dots, as a signed token has; static tokens must not", g.User)
		}
		if err := g.check(); err != nil {
			return nil, err
		}
		g.Sessions = slices.Clone(g.Sessions)
		t.entries = append(t.entries, tokenEntry{digest: sha256.Sum256([]byte(token)), grant: g})
	}
	return t, nil
}

// ParseTokens reads a token table in its JSON form. Unknown fields are an
// error: a misspelt "sessions" must not silently grant nothing.
func ParseTokens(data []byte) (*Tokens, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f tokensFile
	if err := dec.Decode(&f); err != nil {
		return nil, holdover.Newf(holdover.CodeBadRequest, "tokens: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, holdover.New(holdover.CodeBadRequest, "tokens: data after the JSON object")
	}
	return NewTokens(f.Tokens)
}

// LoadTokens reads a token table from a JSON file.
func LoadTokens(path string) (*Tokens, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, holdover.Newf(holdover.CodeBadRequest, "tokens: %v", err)
	}
	t, err := ParseTokens(data)
	if err != nil {
		return nil, holdover.Newf(holdover.CodeBadRequest, "%s: %v", path, err)
	}
	return t, nil
}

// WithJWT makes t accept signed tokens as cfg says, besides its static
// ones; with a JWKS URL it fetches the key set before it returns.
func (t *Tokens) WithJWT(ctx context.Context, cfg JWTConfig) error {
	v, err := newJWTVerifier(ctx, cfg)
	if err != nil {
		return err
	}
	t.jwt = v
	return nil
}

// Authenticate returns the grant of a static or signed token, or an
// UNAUTHORIZED error that says why not (never naming the token).
func (t *Tokens) Authenticate(token string) (Grant, error) {
	var g Grant
	if t != nil && t.jwt != nil && looksSigned(token) {
		var err error
		if g, err = t.jwt.verify(token); err != nil {
			return Grant{}, err
		}
	} else {
		var ok bool
		if g, ok = t.Lookup(token); !ok {
			return Grant{}, holdover.New(clientwire.CodeUnauthorized, "the access token is missing or unknown")
		}
	}
	g.key = sha256.Sum256([]byte(token))
	return g, nil
}

// Lookup returns the grant of a static token. It hashes the token and compares the
// digest with every entry without stopping early, so neither the position
// nor the prefix of a match shows in the time it takes.
func (t *Tokens) Lookup(token string) (Grant, bool) {
	if t == nil || token == "" {
		return Grant{}, false
	}
	digest := sha256.Sum256([]byte(token))
	found := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(digest[:], t.entries[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Grant{}, false
	}
	return t.entries[found].grant, true
}
