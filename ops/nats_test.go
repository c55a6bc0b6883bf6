package ops_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/embedded"
	"github.com/holdover-dev/holdover/embedded/embeddedtest"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/streams"
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

// --tls-ca makes the connection verify the server's certificate against
// that authority: a server whose certificate it signed is reached over TLS,
// and without the flag the same server's certificate is refused.
func TestNATSConfigTLS(t *testing.T) {
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	srvDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, ca, &srvKey.PublicKey, caKey)
	require.NoError(t, err)
	caFile := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600))

	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	require.NoError(t, err)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true,
		TLS: true, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second))
	t.Cleanup(ns.Shutdown)
	url := "tls://" + ns.Addr().String()

	nc, _, err := ops.NATSConfig{URL: url, TLSCA: caFile}.Connect("tls-test", slog.New(slog.DiscardHandler), nats.MaxReconnects(0))
	require.NoError(t, err)
	require.True(t, nc.TLSRequired())
	nc.Close()
	_, _, err = ops.NATSConfig{URL: url}.Connect("tls-test", slog.New(slog.DiscardHandler), nats.MaxReconnects(0))
	require.ErrorContains(t, err, "certificate", "an unknown authority is refused")
}

// Issue 25: a process's NATS connection is a component that fails when
// the connection closes for good, and stops cleanly when asked to.
func TestNATSConnectionFailsWhenTheConnectionCloses(t *testing.T) {
	env := embeddedtest.Start(t, streams.Config{Memory: true})
	nc, err := nats.Connect(env.Server.ClientURL(), nats.Name("test"))
	require.NoError(t, err)
	running, err := ops.Start(context.Background(), ops.NATSConnection(nc))
	require.NoError(t, err)
	nc.Close()
	<-running.Done()
	require.ErrorContains(t, running.Stop(), "nats test: the NATS connection closed for good")

	nc, err = nats.Connect(env.Server.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	running, err = ops.Start(context.Background(), ops.NATSConnection(nc))
	require.NoError(t, err)
	require.NoError(t, running.Stop())
}
