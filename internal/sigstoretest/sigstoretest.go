// Package sigstoretest runs real Sigstore services for tests, on 127.0.0.1:
// Fulcio v1.8.8 with an ephemeral CA and timestamp-authority v2.1.3 with its
// in-memory signer, the released binaries (built by scripts/sigstore-up.sh),
// and a fake GitHub Actions OIDC issuer (githubtest.OIDC) that Fulcio
// trusts. Start builds nothing.
//
// Binaries: "fulcio" and "timestamp-server" in $PROOFGATE_SIGSTORE_BIN when
// set, else on PATH. Without them Start skips the test, unless
// PROOFGATE_REQUIRE_SIGSTORE=1, when it fails it.
//
// Fulcio runs as
//
//	fulcio serve --ca ephemeralca --ct-log-url "" --config-path DIR/fulcio.json
//	  --host 127.0.0.1 --port P --grpc-host 127.0.0.1 --grpc-port G
//	  --metrics-port 0 --legacy-unix-domain-socket SOCKDIR/legacy.sock
//	  --log_type dev
//
// with fulcio.json
//
//	{"OIDCIssuers": {"<OIDC.URL>": {"IssuerURL": "<OIDC.URL>",
//	  "ClientID": "sigstore", "Type": "github-workflow"}}}
//
// Fulcio accepts an http:// issuer (go-oidc fetches discovery and JWKS over
// whatever scheme the URL names), so the issuer is plain HTTP. No CT log: its
// certificates carry no SCT. The HTTP and gRPC ports differ because Fulcio
// v1.8.8 panics in its single-port ("duplex") mode (a duplicate Prometheus
// registration); the metrics server takes a random port (it listens on all
// interfaces: Fulcio has no flag for its host) and the legacy gRPC socket a
// path of its own (the default is one abstract socket name per network
// namespace).
//
// The timestamp server runs as
//
//	timestamp-server serve --timestamp-signer memory --disable-ntp-monitoring
//	  --log-type dev --scheme unix --socket-path SOCKDIR/tsa.sock
//
// in a network namespace of its own (CLONE_NEWNET; with CLONE_NEWUSER when
// not root): it binds its metrics server to the fixed address :2112, which
// would collide between two instances, and inside the namespace it cannot
// reach any network. A reverse proxy on 127.0.0.1 forwards TSAURL to its
// socket. Where namespaces are refused, it runs on the host network at
// 127.0.0.1, and instances across processes take turns through an flock on
// $TMPDIR/proofgate-sigstore-tsa.lock (held from start to stop).
//
// Both run with a clean environment (HOME and TMPDIR in the test's
// directory, no proxy variables), in their own process group, with
// Pdeathsig SIGKILL on Linux; t.Cleanup sends SIGTERM to the group, then
// SIGKILL after 3s. Their output goes to DIR/fulcio.log and DIR/tsa.log
// (FulcioLog, TSALog), whose tails are logged when the test failed.
//
// In the host-network fallback a test may hold only one Services at a time
// (a second Start would wait for the first's lock).
//
// TrustedRoot is a trusted_root.json (media type
// application/vnd.dev.sigstore.trustedroot+json;version=0.1) made with
// sigstore-go's root.NewTrustedRoot from Fulcio's /api/v2/trustBundle (one
// certificate authority: the chain's last certificate as root, the others
// as intermediates, valid from the root's notBefore, open-ended) and the
// TSA's /api/v1/timestamp/certchain (leaf, intermediates, root; valid from
// the leaf's notBefore, open-ended); no transparency or CT logs.
package sigstoretest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/githubtest"
)

// Services are running Fulcio and TSA instances and what trusts them.
type Services struct {
	FulcioURL, TSAURL string // TSAURL is the full RFC 3161 endpoint (…/api/v1/timestamp)
	TrustedRoot       []byte // trusted_root.json for the running Fulcio CA and TSA
	TrustedRootPath   string
	OIDC              *githubtest.OIDC // the issuer Fulcio trusts

	// StartupTime is how long Start took to have both services answering.
	StartupTime time.Duration

	fulcioLog, tsaLog string // paths
	pids              []int  // Fulcio's, the TSA's
	tsaIsolated       bool   // the TSA runs in a network namespace of its own
}

// maxLog bounds what FulcioLog and TSALog return (their last bytes).
const maxLog = 4 << 20

// FulcioLog is Fulcio's output so far: where it says why it refused a
// token (its HTTP answer only says "There was an error processing the
// identity token").
func (s *Services) FulcioLog() string { return tail(s.fulcioLog, maxLog) }

// TSALog is the timestamp server's output so far.
func (s *Services) TSALog() string { return tail(s.tsaLog, maxLog) }

// Environment variables Start reads.
const (
	EnvBin     = "PROOFGATE_SIGSTORE_BIN"     // directory holding fulcio and timestamp-server
	EnvRequire = "PROOFGATE_REQUIRE_SIGSTORE" // "1": missing binaries fail the test
)

// ReadyTimeout bounds how long Start waits for a service to answer.
const ReadyTimeout = 60 * time.Second

// Start finds the fulcio and timestamp-server binaries, starts them on free
// 127.0.0.1 ports, waits until ready, and stops them at t.Cleanup.
func Start(t testing.TB) *Services {
	t.Helper()
	return start(t, options{})
}

type options struct {
	hostNetwork bool // run the TSA on the host network (the fallback)
}

func start(t testing.TB, opts options) *Services {
	t.Helper()
	fulcioBin, tsaBin := binaries(t)
	began := time.Now()
	dir := t.TempDir()
	// Unix socket paths are limited to 107 bytes; t.TempDir's can be longer.
	sockDir, err := os.MkdirTemp("", "pgsig")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })

	oidc := githubtest.NewOIDC(t)
	tsaURL, tsaProc, isolated := startTSA(t, tsaBin, dir, sockDir, opts)
	fulcioURL, fulcioProc := startFulcio(t, fulcioBin, dir, sockDir, oidc.URL)

	tr, err := trustedRoot(fulcioURL, tsaURL)
	if err != nil {
		t.Fatalf("sigstoretest: trusted root: %v", err)
	}
	path := filepath.Join(dir, "trusted_root.json")
	if err := os.WriteFile(path, tr, 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Services{
		FulcioURL: fulcioURL, TSAURL: tsaURL + "/api/v1/timestamp",
		TrustedRoot: tr, TrustedRootPath: path, OIDC: oidc,
		StartupTime: time.Since(began),
		fulcioLog:   fulcioProc.logPath, tsaLog: tsaProc.logPath,
		pids:        []int{fulcioProc.cmd.Process.Pid, tsaProc.cmd.Process.Pid},
		tsaIsolated: isolated,
	}
	t.Logf("sigstoretest: Fulcio %s, TSA %s, up in %d ms", s.FulcioURL, s.TSAURL, s.StartupTime.Milliseconds())
	return s
}

// binaries finds fulcio and timestamp-server, or skips (fails when
// required) the test.
func binaries(t testing.TB) (fulcio, tsa string) {
	t.Helper()
	find := func(name string) (string, error) {
		if dir := os.Getenv(EnvBin); dir != "" {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				return "", fmt.Errorf("%s: not an executable in $%s", p, EnvBin)
			}
			return p, nil
		}
		return exec.LookPath(name)
	}
	var err error
	if fulcio, err = find("fulcio"); err == nil {
		tsa, err = find("timestamp-server")
	}
	if err != nil {
		msg := fmt.Sprintf("sigstoretest: %v (build them with scripts/sigstore-up.sh and set $%s)", err, EnvBin)
		if os.Getenv(EnvRequire) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return fulcio, tsa
}

// fulcioConfig is Fulcio's configuration trusting issuer as GitHub Actions.
func fulcioConfig(issuer string) ([]byte, error) {
	type oidcIssuer struct {
		IssuerURL, ClientID, Type string
	}
	return json.Marshal(map[string]any{
		"OIDCIssuers": map[string]oidcIssuer{
			issuer: {IssuerURL: issuer, ClientID: "sigstore", Type: "github-workflow"},
		},
	})
}

func startFulcio(t testing.TB, bin, dir, sockDir, issuer string) (string, *proc) {
	t.Helper()
	cfg, err := fulcioConfig(issuer)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "fulcio.json")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(sockDir, "legacy.sock")
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port may be taken before Fulcio binds it
		// A failed attempt leaves its socket file, which the next one
		// could not bind ("address already in use").
		if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		ports, err := freePorts(2)
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ports[0]
		p, err := launch(t, "fulcio", bin, dir, nil, "serve",
			"--ca", "ephemeralca", "--ct-log-url", "", "--config-path", cfgPath,
			"--host", "127.0.0.1", "--port", portOf(ports[0]),
			"--grpc-host", "127.0.0.1", "--grpc-port", portOf(ports[1]),
			"--metrics-port", "0", "--legacy-unix-domain-socket", sock,
			"--log_type", "dev")
		if err != nil {
			t.Fatalf("sigstoretest: %v", err)
		}
		if lastErr = p.waitReady(url+"/api/v2/trustBundle", nil); lastErr == nil {
			return url, p
		}
		p.stop()
	}
	t.Fatalf("sigstoretest: fulcio: %v", lastErr)
	return "", nil
}
