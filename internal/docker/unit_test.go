package docker

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

func TestTranslatePath(t *testing.T) {
	gh := []MountPoint{
		{Type: "bind", Source: "/var/run/docker.sock", Destination: "/var/run/docker.sock"},
		{Type: "bind", Source: "/home/runner/work/_temp/_github_home", Destination: "/github/home"},
		{Type: "bind", Source: "/home/runner/work/repo/repo", Destination: "/github/workspace"},
		{Type: "bind", Source: "/home/runner/work/repo/repo/vendor-cache", Destination: "/github/workspace/cache"},
		{Type: "tmpfs", Source: "", Destination: "/tmp"},
		{Type: "volume", Source: "/var/lib/docker/volumes/x/_data", Destination: "/data"},
	}
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"/github/workspace", "/home/runner/work/repo/repo", true},
		{"/github/workspace/", "/home/runner/work/repo/repo", true},
		{"/github/workspace/src/a.go", "/home/runner/work/repo/repo/src/a.go", true},
		{"/github/workspace/cache/x", "/home/runner/work/repo/repo/vendor-cache/x", true},
		{"/github/workspace/../home", "/home/runner/work/_temp/_github_home", true},
		{"/github/workspace/../../etc", "", false},
		{"/github/workspacex/a", "", false},
		{"/github", "", false},
		{"/tmp/x", "", false},
		{"/data/a", "/var/lib/docker/volumes/x/_data/a", true},
		{"relative/path", "", false},
		{"", "", false},
	} {
		got, ok := TranslatePath(gh, c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("TranslatePath(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if got, ok := TranslatePath([]MountPoint{{Type: "bind", Source: "/host", Destination: "/"}}, "/a/b"); !ok || got != "/host/a/b" {
		t.Errorf("root mount: %q %v", got, ok)
	}
	if _, ok := TranslatePath(nil, "/a"); ok {
		t.Error("no mounts translated")
	}
}

func FuzzTranslatePath(f *testing.F) {
	f.Add("/github/workspace", "/host/ws", "/github/workspace/../x/./y")
	f.Add("/", "/h", "/")
	f.Fuzz(func(t *testing.T, dest, src, p string) {
		got, ok := TranslatePath([]MountPoint{{Type: "bind", Source: src, Destination: dest}}, p)
		if !ok {
			return
		}
		// The result always lies within the mount's host source.
		if !under(got, filepath.Clean(src)) {
			t.Fatalf("TranslatePath(%q→%q, %q) = %q escapes the source", dest, src, p, got)
		}
	})
}

func TestParseStatStart(t *testing.T) {
	line := "1234 (a) b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 10000 100"
	if got := parseStatStart(line); got != "987654" {
		t.Fatalf("got %q", got)
	}
	for _, bad := range []string{"", "1 (x) S 1", "no paren", "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x 20"} {
		if got := parseStatStart(bad); got != "" {
			t.Fatalf("%q → %q", bad, got)
		}
	}
	if procStart(os.Getpid()) == "" {
		t.Fatal("own start time unreadable")
	}
}

func FuzzParseOwner(f *testing.F) {
	f.Add("12/345/host")
	f.Add("x/y")
	f.Add("1//")
	f.Fuzz(func(t *testing.T, s string) {
		pid, _, _, ok := parseOwner(s)
		if ok && pid <= 0 {
			t.Fatalf("%q → pid %d", s, pid)
		}
		_ = parseStatStart(s)
	})
}

func TestOwnerDead(t *testing.T) {
	r := &Runtime{host: "h", pidNS: "pid:[1]"}
	me := ownerLabel(os.Getpid(), "h", r.pidNS)
	if r.ownerDead(me) {
		t.Fatal("self reported dead")
	}
	pid, start, _, _ := parseOwner(me)
	if !r.ownerDead(strconv.Itoa(pid) + "/" + start + "1/h") {
		t.Fatal("reused pid with another start time reported alive")
	}
	if !r.ownerDead("999999999/1/h") {
		t.Fatal("absent pid reported alive")
	}
	if r.ownerDead("999999999/1/otherhost") || r.ownerDead("garbage") {
		t.Fatal("foreign or unparsable owner reported dead (only age may remove it)")
	}
	// Another pid namespace on the same host (a second harness container
	// under --network host shares the hostname): its pids mean nothing here.
	if r.ownerDead("999999999/1/h/pid:[2]") || r.ownerDead(strconv.Itoa(pid)+"/"+start+"1/h/pid:[2]") {
		t.Fatal("owner in another pid namespace reported dead")
	}
	if !r.ownerDead("999999999/1/h/pid:[1]") || !r.ownerDead("999999999/1/h") {
		t.Fatal("absent pid in this namespace (or a label without one) reported alive")
	}
	// Without a recorded start time nothing is provable.
	if r.ownerDead("999999999//h/pid:[1]") {
		t.Fatal("owner without a start time reported dead")
	}
}

func TestLinkStaysInside(t *testing.T) {
	for _, c := range []struct {
		name, target string
		want         bool
	}{
		{"a", "b", true},
		{"d/a", "../b", true},
		{"d/a", "../../b", false},
		{"a", "/etc", false},
		{"a", "..", false},
		{"d/a", "..", true},
		{"a", "", false},
		{"a", ".", true},
	} {
		if got := linkStaysInside(c.name, c.target); got != c.want {
			t.Errorf("linkStaysInside(%q, %q) = %v", c.name, c.target, got)
		}
	}
}

func TestWorkspaceTarNeverReadsOutside(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o644)
	os.WriteFile(filepath.Join(ws, "f"), []byte("data"), 0o600)
	os.Mkdir(filepath.Join(ws, "d"), 0o700)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "abs"))
	os.Symlink("../"+filepath.Base(outside)+"/secret", filepath.Join(ws, "rel"))
	os.Symlink(outside, filepath.Join(ws, "d", "dir"))
	os.Symlink("../f", filepath.Join(ws, "d", "ok"))
	var buf bytes.Buffer
	if err := writeWorkspaceTar(&buf, ws, 65534, 65534, 1<<20); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("SECRET")) {
		t.Fatal("content outside the workspace in the tar")
	}
	tr := tar.NewReader(&buf)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 65534 || h.Gid != 65534 {
			t.Fatalf("%s owned by %d:%d", h.Name, h.Uid, h.Gid)
		}
		names = append(names, h.Name)
	}
	for _, n := range []string{"abs", "rel", "d/dir"} {
		if slices.Contains(names, n) {
			t.Fatalf("escaping link %s stored: %v", n, names)
		}
	}
	for _, n := range []string{"/", "d/", "d/ok", "f"} {
		if !slices.Contains(names, n) {
			t.Fatalf("%s missing: %v", n, names)
		}
	}
	err := writeWorkspaceTar(io.Discard, ws, 0, 0, 2)
	if !errors.Is(err, ErrCopyLimit) {
		t.Fatalf("copy limit: %v", err)
	}
}

func TestRefuseSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "d.sock")
	socks := []string{sock}
	for _, src := range []string{sock, dir, "/"} {
		if refuseSocket("f", src, socks) == nil {
			t.Errorf("%s accepted", src)
		}
	}
	if err := refuseSocket("f", t.TempDir(), socks); err != nil {
		t.Errorf("unrelated dir refused: %v", err)
	}
}
