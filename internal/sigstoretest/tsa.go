package sigstoretest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// tsaLockName is the flock that serializes host-network TSAs (their
// metrics server's fixed :2112) across processes.
const tsaLockName = "proofgate-sigstore-tsa.lock"

// startTSA starts the timestamp server and returns its base URL on
// 127.0.0.1, its process and whether it runs in its own network namespace.
func startTSA(t testing.TB, bin, dir, sockDir string, opts options) (string, *proc, bool) {
	t.Helper()
	base := []string{"serve", "--timestamp-signer", "memory", "--disable-ntp-monitoring", "--log-type", "dev"}
	if !opts.hostNetwork {
		sock := filepath.Join(sockDir, "tsa.sock")
		args := slices.Concat(base, []string{"--scheme", "unix", "--socket-path", sock})
		attr, err := isolated()
		var p *proc
		if err == nil {
			p, err = launch(t, "tsa", bin, dir, attr, args...)
		}
		if err == nil {
			dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			}
			if err := p.waitReady("http://tsa/api/v1/timestamp/certchain", dial); err != nil {
				t.Fatalf("sigstoretest: %v", err)
			}
			return proxy(t, dial), p, true
		}
		// Namespaces refused (EPERM without CAP_SYS_ADMIN or user
		// namespaces, ENOSPC at their limit, EACCES under AppArmor): the
		// fallback. Any other failure to start recurs there and is reported.
		t.Logf("sigstoretest: no network namespace for the TSA (%v): host network, serialized by %s", err, tsaLockName)
	}
	lockTSA(t)
	u, p := startHostTSA(t, bin, dir, base)
	return u, p, false
}

// proxy serves 127.0.0.1 in front of the TSA's socket.
func proxy(t testing.TB, dial func(ctx context.Context, network, addr string) (net.Conn, error)) string {
	target := &url.URL{Scheme: "http", Host: "tsa"}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: &http.Transport{DialContext: dial},
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// lockTSA takes the cross-process TSA lock until t's cleanup (registered
// before the TSA's, so it is released after the TSA has exited).
func lockTSA(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), tsaLockName), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("sigstoretest: tsa lock: %v", err)
	}
	began := time.Now()
	deadline := began.Add(5 * time.Minute)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			if waited := time.Since(began); waited > 100*time.Millisecond {
				t.Logf("sigstoretest: waited %d ms for another host-network TSA to stop", waited.Milliseconds())
			}
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			t.Fatalf("sigstoretest: tsa lock %s: %v", f.Name(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() { f.Close() }) // closing releases the flock
}

func startHostTSA(t testing.TB, bin, dir string, base []string) (string, *proc) {
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			t.Fatal(err)
		}
		args := slices.Concat(base, []string{"--host", "127.0.0.1", "--port", portOf(ports[0])})
		p, err := launch(t, "tsa", bin, dir, nil, args...)
		if err != nil {
			t.Fatalf("sigstoretest: %v", err)
		}
		u := "http://" + ports[0]
		if lastErr = p.waitReady(u+"/api/v1/timestamp/certchain", nil); lastErr == nil {
			return u, p
		}
		p.stop()
	}
	t.Fatalf("sigstoretest: %v", fmt.Errorf("tsa: %w", lastErr))
	return "", nil
}
