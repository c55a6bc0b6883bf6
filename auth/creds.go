package auth

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/holdover-dev/holdover"
)

// DefaultTenant is the tenant `holdover dev` and a bare `holdover auth
// init` provision.
const DefaultTenant = "default"

// systemAccount names the account nats-server keeps its own events in; no
// Holdover user is issued in it.
const systemAccount = "SYS"

// roleTag is the user JWT tag that names a user's role, so a process can
// pick its inbox prefix from its credentials alone.
const roleTag = "holdover-role:"

// ServerConfigFile is the nats-server configuration fragment Init writes:
// the trusted operator and every account, for `include` in a server's
// own configuration.
const ServerConfigFile = "nats-auth.conf"

// MaxControlLine is the protocol line a server must accept: a client's
// CONNECT carries its user JWT, and a role's permissions make that JWT
// longer than nats-server's default 4 KiB line.
const MaxControlLine = 16 << 10

var plainName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Setup is a folder of NATS credentials: one operator, a system account,
// and for each tenant a data account and a clients account with one user
// per role (accounts.go). Keys are kept (the data account's public key
// names its JetStream data); user credentials are issued anew by every
// [Init], so they always carry this build's permissions.
type Setup struct {
	dir      string
	limits   Limits
	operator *entity
	system   *entity
	// tenants and clients hold each tenant's data and clients accounts.
	tenants map[string]*entity
	clients map[string]*entity
}

// entity is a signed identity: an operator or an account.
type entity struct {
	kp  nkeys.KeyPair
	pub string
	jwt string
}

// Limits are the bounds Init signs into every tenant's data account.
type Limits struct {
	// MaxConsumers bounds the consumers of each stream of the tenant:
	// nats-server applies an account's consumer limit to every stream
	// alone (and refuses a stream whose own max_consumers is higher),
	// never to the account's total, so a tenant holds at most this many
	// on each of its streams. 0 means DefaultMaxConsumers.
	MaxConsumers int
}

// DefaultMaxConsumers is the consumers each stream of a tenant may hold:
// room for 10,000 Sessions run by runtimes that read each one's inbox
// with a consumer of its own and watched by two gateways, with claims and
// leases to match.
const DefaultMaxConsumers = 50_000

// Init loads or creates the credentials in dir for tenants (none means
// [DefaultTenant]) and writes, for each tenant, `tenants/<t>/<role>.creds`
// for every role, and the server fragment [ServerConfigFile]. It is
// idempotent: keys that exist are kept, tenants already there stay. Each
// tenant's data account carries the default [Limits].
func Init(dir string, tenants ...string) (*Setup, error) {
	return InitWith(dir, Limits{}, tenants...)
}

// InitWith is [Init] with limits on every tenant's data account.
func InitWith(dir string, limits Limits, tenants ...string) (*Setup, error) {
	if len(tenants) == 0 {
		tenants = []string{DefaultTenant}
	}
	if limits.MaxConsumers <= 0 {
		limits.MaxConsumers = DefaultMaxConsumers
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "create credentials folder")
	}
	s := &Setup{dir: dir, limits: limits, tenants: map[string]*entity{}, clients: map[string]*entity{}}
	opKP, err := loadOrCreateKey(filepath.Join(dir, "operator.nk"), nkeys.CreateOperator)
	if err != nil {
		return nil, err
	}
	s.operator = &entity{kp: opKP}
	s.operator.pub, _ = opKP.PublicKey()
	if s.system, err = s.account(filepath.Join(dir, "accounts", systemAccount), "account.nk", systemAccount, nil); err != nil {
		return nil, err
	}
	op := jwt.NewOperatorClaims(s.operator.pub)
	op.Name = "holdover"
	op.SystemAccount = s.system.pub
	if s.operator.jwt, err = op.Encode(opKP); err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "sign the operator")
	}
	if err := writeFile(filepath.Join(dir, "operator.jwt"), s.operator.jwt, 0o644); err != nil {
		return nil, err
	}
	existing, _ := os.ReadDir(filepath.Join(dir, "tenants"))
	for _, e := range existing {
		if e.IsDir() {
			tenants = append(tenants, e.Name())
		}
	}
	for _, t := range tenants {
		if !plainName.MatchString(t) || t == systemAccount {
			return nil, holdover.Newf(holdover.CodeBadRequest, "tenant %q must be 1 to 64 letters, digits, '-' or '_', and not %s", t, systemAccount)
		}
		if s.tenants[t] != nil {
			continue
		}
		folder := filepath.Join(dir, "tenants", t)
		data, clients, err := s.tenant(folder, t)
		if err != nil {
			return nil, err
		}
		s.tenants[t] = data
		s.clients[t] = clients
		for _, r := range Roles {
			if err := s.issue(clients, t, r, filepath.Join(folder, string(r)+".creds")); err != nil {
				return nil, err
			}
		}
	}
	if err := writeFile(filepath.Join(dir, ServerConfigFile), s.serverConfig(), 0o644); err != nil {
		return nil, err
	}
	return s, nil
}

// account loads or creates the account key file in folder and signs the
// account's JWT, named name, with what edit (when not nil) adds to it.
func (s *Setup) account(folder, file, name string, edit func(kp nkeys.KeyPair, ac *jwt.AccountClaims) error) (*entity, error) {
	if err := os.MkdirAll(folder, 0o700); err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "create account folder")
	}
	kp, err := loadOrCreateKey(filepath.Join(folder, file), nkeys.CreateAccount)
	if err != nil {
		return nil, err
	}
	pub, _ := kp.PublicKey()
	ac := jwt.NewAccountClaims(pub)
	ac.Name = name
	if edit != nil {
		if err := edit(kp, ac); err != nil {
			return nil, err
		}
	}
	token, err := ac.Encode(s.operator.kp)
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeInternal, "sign account %s", ac.Name)
	}
	if err := writeFile(filepath.Join(folder, strings.TrimSuffix(file, ".nk")+".jwt"), token, 0o644); err != nil {
		return nil, err
	}
	return &entity{kp: kp, pub: pub, jwt: token}, nil
}

// issue writes a credentials file for role r in account acc.
func (s *Setup) issue(acc *entity, tenant string, r Role, path string) error {
	user, err := nkeys.CreateUser()
	if err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "create user key")
	}
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = string(r) + "@" + tenant
	uc.Tags.Add(roleTag + string(r))
	uc.Permissions = Of(r).jwt()
	token, err := uc.Encode(acc.kp)
	if err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "sign %s credentials", r)
	}
	seed, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(token, seed)
	if err != nil {
		return holdover.Wrapf(err, holdover.CodeInternal, "format %s credentials", r)
	}
	return writeFile(path, string(creds), 0o600)
}

// jwt turns p into a user JWT's permissions.
func (p Permissions) jwt() jwt.Permissions {
	subjects := func(rules []Rule) jwt.StringList {
		var out jwt.StringList
		for _, r := range rules {
			out.Add(r.Subject)
		}
		return out
	}
	out := jwt.Permissions{
		Pub: jwt.Permission{Allow: subjects(p.Pub), Deny: subjects(p.DenyPub)},
		Sub: jwt.Permission{Allow: subjects(p.Sub)},
	}
	if p.Replies != "" {
		out.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: ReplyWindow}
	}
	return out
}

// Dir is the folder the credentials are in.
func (s *Setup) Dir() string { return s.dir }

// Tenants lists the tenants, sorted.
func (s *Setup) Tenants() []string {
	out := make([]string, 0, len(s.tenants))
	for t := range s.tenants {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Creds is the credentials file of role r in tenant.
func (s *Setup) Creds(tenant string, r Role) string {
	return filepath.Join(s.dir, "tenants", tenant, string(r)+".creds")
}

// Account is the public key of tenant's data account, the name
// nats-server gives it (and its JetStream files).
func (s *Setup) Account(tenant string) string {
	if a := s.tenants[tenant]; a != nil {
		return a.pub
	}
	return ""
}

// Trust is what a server must know to enforce a Setup: the operator it
// trusts, the system account and every account's JWT by public key.
type Trust struct {
	Operator      *jwt.OperatorClaims
	SystemAccount string
	Accounts      map[string]string
}

// Trust returns what a server needs to admit only users of these
// credentials, each with its role's permissions in its tenant's account
// (package embedded applies it).
func (s *Setup) Trust() (Trust, error) {
	op, err := jwt.DecodeOperatorClaims(s.operator.jwt)
	if err != nil {
		return Trust{}, holdover.Wrap(err, holdover.CodeInternal, "decode the operator")
	}
	t := Trust{Operator: op, SystemAccount: s.system.pub, Accounts: map[string]string{s.system.pub: s.system.jwt}}
	for tenant, a := range s.tenants {
		t.Accounts[a.pub] = a.jwt
		t.Accounts[s.clients[tenant].pub] = s.clients[tenant].jwt
	}
	return t, nil
}

// serverConfig is the nats-server configuration of the same trust as
// Configure, for a server run on its own.
func (s *Setup) serverConfig() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Holdover's NATS accounts, written by `holdover auth init`.\n")
	fmt.Fprintf(&b, "# Include it in the server's configuration: include %s\n", ServerConfigFile)
	fmt.Fprintf(&b, "operator: %q\n", filepath.Join(s.dir, "operator.jwt"))
	fmt.Fprintf(&b, "system_account: %s\n", s.system.pub)
	fmt.Fprintf(&b, "# A CONNECT carries the user JWT, longer than the default 4 KiB line.\nmax_control_line: %d\n", MaxControlLine)
	fmt.Fprintf(&b, "resolver: MEMORY\nresolver_preload: {\n")
	fmt.Fprintf(&b, "  # %s\n  %s: %q\n", systemAccount, s.system.pub, s.system.jwt)
	for _, t := range s.Tenants() {
		fmt.Fprintf(&b, "  # tenant %s: its data\n  %s: %q\n", t, s.tenants[t].pub, s.tenants[t].jwt)
		fmt.Fprintf(&b, "  # tenant %s: its clients\n  %s: %q\n", t, s.clients[t].pub, s.clients[t].jwt)
	}
	b.WriteString("}\n")
	return b.String()
}

// RoleOf reads the role a credentials file was issued for; a file
// without one (not written by Init) is no error and names no role.
func RoleOf(creds string) (Role, error) {
	data, err := os.ReadFile(creds)
	if err != nil {
		return "", holdover.Wrap(err, holdover.CodeBadRequest, "read NATS credentials")
	}
	token, err := jwt.ParseDecoratedJWT(data)
	if err != nil {
		return "", holdover.Wrapf(err, holdover.CodeBadRequest, "%s is not a NATS credentials file", creds)
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return "", holdover.Wrapf(err, holdover.CodeBadRequest, "%s holds no user JWT", creds)
	}
	for _, tag := range uc.Tags {
		if r, ok := strings.CutPrefix(tag, roleTag); ok && Role(r).Known() {
			return Role(r), nil
		}
	}
	return "", nil
}

func loadOrCreateKey(path string, create func() (nkeys.KeyPair, error)) (nkeys.KeyPair, error) {
	seed, err := os.ReadFile(path)
	switch {
	case err == nil:
		kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
		if err != nil {
			return nil, holdover.Wrapf(err, holdover.CodeBadRequest, "%s is not an nkey seed", path)
		}
		return kp, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, holdover.Wrap(err, holdover.CodeInternal, "read a key")
	}
	kp, err := create()
	if err != nil {
		return nil, holdover.Wrap(err, holdover.CodeInternal, "create a key")
	}
	seed, _ = kp.Seed()
	if err := writeFile(path, string(seed)+"\n", 0o600); err != nil {
		return nil, err
	}
	return kp, nil
}

// writeFile replaces path's content atomically, so a reader never sees
// half a key or half a credentials file.
func writeFile(path, content string, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "write "+filepath.Base(path))
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return holdover.Wrap(err, holdover.CodeInternal, "write "+filepath.Base(path))
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return holdover.Wrap(err, holdover.CodeInternal, "write "+filepath.Base(path))
	}
	if err := tmp.Close(); err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "write "+filepath.Base(path))
	}
	return holdover.Wrap(os.Rename(tmp.Name(), path), holdover.CodeInternal, "write "+filepath.Base(path))
}

// RestoreCreds writes credentials of a user in tenant's data account of
// the credentials folder dir (Init's), valid for ttl, to
// `tenants/<t>/restore.creds` and returns its path: what a restore needs
// (nats backup restore stream), since its chunks do not cross an import
// intact. The user may look streams up, snapshot them and restore them
// (restoreRights), and nothing else; it is no role, and in the one account
// where a reply subject can name a stream it has an admin's trust, so it
// expires. It changes nothing else in dir.
func RestoreCreds(dir, tenant string, ttl time.Duration) (string, error) {
	if !plainName.MatchString(tenant) {
		return "", holdover.Newf(holdover.CodeBadRequest, "tenant %q must be 1 to 64 letters, digits, '-' or '_'", tenant)
	}
	folder := filepath.Join(dir, "tenants", tenant)
	seed, err := os.ReadFile(filepath.Join(folder, "account.nk"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", holdover.Newf(holdover.CodeNotFound, "no tenant %q in %s (holdover auth init --dir %s %s)", tenant, dir, dir, tenant)
	}
	if err != nil {
		return "", holdover.Wrap(err, holdover.CodeInternal, "read the data account's key")
	}
	data, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
	if err != nil {
		return "", holdover.Wrapf(err, holdover.CodeBadRequest, "%s is not an nkey seed", filepath.Join(folder, "account.nk"))
	}
	if ttl <= 0 || ttl > MaxRestoreTTL {
		return "", holdover.Newf(holdover.CodeBadRequest, "restore credentials last from a second to %v, not %v", MaxRestoreTTL, ttl)
	}
	user, err := nkeys.CreateUser()
	if err != nil {
		return "", holdover.Wrap(err, holdover.CodeInternal, "create user key")
	}
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = "restore@" + tenant
	uc.Expires = time.Now().Add(ttl).Unix()
	uc.Permissions = restoreRights()
	token, err := uc.Encode(data)
	if err != nil {
		return "", holdover.Wrap(err, holdover.CodeInternal, "sign restore credentials")
	}
	seed, _ = user.Seed()
	creds, err := jwt.FormatUserConfig(token, seed)
	if err != nil {
		return "", holdover.Wrap(err, holdover.CodeInternal, "format restore credentials")
	}
	path := filepath.Join(folder, "restore.creds")
	return path, writeFile(path, string(creds), 0o600)
}

// MaxRestoreTTL bounds how long restore credentials last.
const MaxRestoreTTL = 24 * time.Hour

// restoreRights are the JetStream API of a backup and a restore in a data
// account: stream look-ups, snapshots with their acks, restores with their
// chunks, and replies under the inbox prefix of a connection with no role.
func restoreRights() jwt.Permissions {
	var pub jwt.StringList
	for _, s := range []string{jsAPI + "INFO", jsAPI + "STREAM.NAMES", jsAPI + "STREAM.LIST", jsAPI + "STREAM.INFO.*",
		jsAPI + "STREAM.SNAPSHOT.*", "$JS.SNAPSHOT.ACK.>", jsAPI + "STREAM.RESTORE.*", "$JS.SNAPSHOT.RESTORE.>"} {
		pub.Add(s)
	}
	return jwt.Permissions{Pub: jwt.Permission{Allow: pub}, Sub: jwt.Permission{Allow: jwt.StringList{inboxRoot + ">"}}}
}
