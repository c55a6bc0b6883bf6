package ops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/ops"
)

// Credentials written by `holdover auth init` name their role, so the
// connection takes that role's inbox prefix; a half-given client
// certificate is a usage error, not a silent plain connection.
func TestNATSConfigOptions(t *testing.T) {
	setup, err := auth.Init(t.TempDir())
	require.NoError(t, err)
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), Auth: setup})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	opts, err := ops.NATSConfig{Creds: setup.Creds(auth.DefaultTenant, auth.Agent)}.Options()
	require.NoError(t, err)
	nc, err := nats.Connect(srv.ClientURL(), opts...)
	require.NoError(t, err)
	defer nc.Close()
	require.True(t, strings.HasPrefix(nc.NewInbox(), "_INBOX.agent."), nc.NewInbox())
	_, err = nc.Request("$JS.API.STREAM.INFO.SESSIONS", nil, 5*time.Second)
	require.NoError(t, err, "a request's reply comes back under the agent's own prefix")
	_, err = ops.NATSConfig{TLSCert: "cert.pem"}.Options()
	require.ErrorContains(t, err, "--tls-cert and --tls-key go together")
	_, err = ops.NATSConfig{Creds: "missing.creds"}.Options()
	require.Error(t, err)
}
