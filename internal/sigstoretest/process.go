package sigstoretest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stopGrace is how long a service has to exit after SIGTERM before its
// process group is killed.
const stopGrace = 3 * time.Second

// logTail bounds how much of a service's log a failed test shows.
const logTail = 16 << 10

// proc is a running service.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done closes
}

// launch starts bin with args in its own process group (with attr's
// namespace flags, if any), a clean environment and its output in
// dir/NAME.log; t.Cleanup stops it and, when t failed, logs the log's tail.
func launch(t testing.TB, name, bin, dir string, attr *syscall.SysProcAttr, args ...string) (*proc, error) {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "TMPDIR=" + dir, "PATH=/usr/bin:/bin"}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = groupAttr(attr)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() { p.waitErr = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("sigstoretest: %s log (%s), tail:\n%s", name, logPath, tail(logPath, logTail))
		}
	})
	return p, nil
}

// stop ends the process group: SIGTERM, then SIGKILL after stopGrace. It
// returns once the process has exited; calling it again is harmless.
func (p *proc) stop() {
	pgid := p.cmd.Process.Pid
	select {
	case <-p.done:
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // any child it left behind
		return
	default:
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
}

// waitReady polls url until it answers 200, the process exits or
// ReadyTimeout passes. dial, when set, replaces TCP (a Unix socket).
func (p *proc) waitReady(url string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DialContext: dial}}
	deadline := time.Now().Add(ReadyTimeout)
	for {
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before answering %s; log:\n%s", p.name, p.waitErr, url, tail(p.logPath, logTail))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer %s within %v: %v", p.name, url, ReadyTimeout, err)
		}
	}
}

// freePorts returns n distinct free 127.0.0.1:PORT addresses.
func freePorts(n int) ([]string, error) {
	var addrs []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// tail returns at most the last n bytes of the file at path.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return strings.ToValidUTF8(string(b), "?")
}
