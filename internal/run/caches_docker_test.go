package run

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/internal/testimage"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// dockerOrSkip connects to the daemon and builds the helper image; without
// a daemon the test is skipped, unless PROOFGATE_REQUIRE_DOCKER=1.
func dockerOrSkip(t testing.TB) (*docker.Runtime, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d, err := docker.New(ctx)
	if err == nil {
		var ref string
		if ref, err = testimage.Ensure(ctx); err == nil {
			t.Cleanup(func() { d.Close() })
			return d, ref
		}
		d.Close()
	}
	if os.Getenv("PROOFGATE_REQUIRE_DOCKER") == "1" {
		t.Fatalf("docker required (PROOFGATE_REQUIRE_DOCKER=1): %v", err)
	}
	t.Skipf("no docker daemon: %v", err)
	return nil, ""
}

// serve answers every TCP connection on 127.0.0.1 with body: the
// "registry" a fetch check downloads from.
func serve(t *testing.T, body string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(body))
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// startedCaches returns the caches each check.started event recorded.
func startedCaches(t *testing.T, r *Run) map[string][]runtime.Cache {
	t.Helper()
	out := map[string][]runtime.Cache{}
	for _, line := range readLines(t, filepath.Join(r.Dir, EventsFile)) {
		var ev struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != replay.TypeCheckStarted {
			continue
		}
		var d replay.CheckStartedData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		out[d.Check] = d.Caches
	}
	return out
}

// TestFetchPhaseThenOfflineChecks: a check with network: host fetches into
// a cache; later offline checks mount it read-only and use it; an offline
// check that writes it fails (EROFS) and its write never reaches the host;
// a fetch check without network: host fails, and its detail says the
// network was none. check.started records each check's caches, and the
// attestation which checks had the network.
func TestFetchPhaseThenOfflineChecks(t *testing.T) {
	d, ref := dockerOrSkip(t)
	addr := serve(t, "module-bytes")
	src := fmt.Sprintf(`version: 1
name: t
defaults: {image: %s, timeout: 60s, resources: {memory: 64MiB, pids: 32}}
caches:
  mods: {mount: /cache/mods}
checks:
  - {id: fetch, network: host, caches: [mods], run: [/bin/helper, fetch, %q, /cache/mods/m.txt]}
  - {id: use, depends_on: [fetch], caches: [{name: mods, readonly: true}], run: [/bin/helper, cat, /cache/mods/m.txt]}
  - {id: poison, depends_on: [fetch], caches: [{name: mods, readonly: true}], run: [/bin/helper, write, /cache/mods/m.txt, "3"]}
  - {id: offline-fetch, depends_on: [use], caches: [mods], run: [/bin/helper, fetch, %q, /cache/mods/o.txt]}
approval: {required: 0}
`, ref, addr, addr)
	f := newFixture(t, src)
	store, err := cache.Open(t.TempDir(), cache.Local(), f.repo)
	if err != nil {
		t.Fatal(err)
	}
	r := f.plan(t)
	defer r.Close()
	err = r.Exec(context.Background(), ExecOptions{RepoDir: f.repo, StateDir: f.state, Jobs: 3, Caches: store,
		Runtimes: map[string]runtime.Runtime{"docker": d}})
	if err != nil {
		t.Fatal(err)
	}
	rep := r.Report()
	got := map[string]replay.CheckReport{}
	for _, c := range rep.Checks {
		got[c.ID] = c
	}
	want := map[string]runtime.Outcome{"fetch": runtime.Passed, "use": runtime.Passed, "poison": runtime.Failed, "offline-fetch": runtime.Failed}
	for id, o := range want {
		if got[id].Outcome != o {
			t.Errorf("%s: %s (%s), want %s", id, got[id].Outcome, got[id].Detail, o)
		}
	}
	out, err := r.readBlobTail(got["use"].Stdout.Digest, 1<<10)
	if err != nil || string(out) != "module-bytes" {
		t.Fatalf("use read %q %v", out, err)
	}
	out, _ = r.readBlobTail(got["poison"].Stdout.Digest, 1<<10)
	if !strings.Contains(string(out), "read-only file system") {
		t.Errorf("poison output %q", out)
	}
	if dt := got["offline-fetch"].Detail; !strings.Contains(dt, "network: none") || !strings.Contains(dt, "needs network: host") {
		t.Errorf("offline fetch detail %q", dt)
	}
	host, err := os.ReadFile(filepath.Join(store.Root(), "local", "mods", "m.txt"))
	if err != nil || string(host) != "module-bytes" {
		t.Fatalf("host cache holds %q %v (the read-only write must not land)", host, err)
	}
	for id, net := range map[string]string{"fetch": "host", "use": "none", "offline-fetch": "none"} {
		if p := got[id].Attestation.Profile; p["network"] != net {
			t.Errorf("%s attested network %v, want %s", id, p["network"], net)
		}
	}
	sc := startedCaches(t, r)
	if c := sc["fetch"]; len(c) != 1 || c[0].Mode != "rw" || c[0].Scope != "local" || c[0].Provenance != "empty" || c[0].Generation != 0 {
		t.Errorf("fetch started with %+v", c)
	}
	u := sc["use"]
	if len(u) != 1 || u[0].Mode != "ro" || u[0].Provenance != "recorded" || u[0].Generation != 1 || u[0].WrittenBy != r.ID+"/fetch" || u[0].Entries != 1 || u[0].Bytes != 12 {
		t.Fatalf("use started with %+v", u)
	}
	caches, _ := got["use"].Attestation.Profile["caches"].([]any)
	if len(caches) != 1 || caches[0].(map[string]any)["digest"] != u[0].Digest || caches[0].(map[string]any)["mode"] != "ro" {
		t.Errorf("use attestation caches %v, started digest %s", caches, u[0].Digest)
	}
}

// TestCacheWithoutStore: a check declaring caches on a harness without a
// cache store is an error that says so, not a run without the cache.
func TestCacheWithoutStore(t *testing.T) {
	d, ref := dockerOrSkip(t)
	f := newFixture(t, fmt.Sprintf("version: 1\nname: t\ndefaults: {image: %s}\ncaches: {c: {mount: /c}}\nchecks: [{id: a, caches: [c], run: [/bin/helper, 'true']}]\n", ref))
	r := f.plan(t)
	defer r.Close()
	if err := r.Exec(context.Background(), ExecOptions{RepoDir: f.repo, StateDir: f.state, Runtimes: map[string]runtime.Runtime{"docker": d}}); err != nil {
		t.Fatal(err)
	}
	if c := r.Report().Checks[0]; c.Outcome != runtime.Error || !strings.Contains(c.Detail, "no cache store") {
		t.Fatalf("%+v", c)
	}
}
