package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/canon"
)

func docIndex(t *testing.T, dir string, n int) []byte {
	t.Helper()
	var entries []map[string]string
	for i := range n {
		entries = append(entries, map[string]string{"id": fmt.Sprintf("e%02d", i), "title": "Cache design", "path": fmt.Sprintf("docs/%d.md", i), "text": strings.Repeat("health ", i+1)})
	}
	h, err := canon.Digest(map[string]any{"version": 1, "entries": entries})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := canon.Marshal(map[string]any{"version": 1, "entries": entries, "contentHash": h})
	os.MkdirAll(filepath.Join(dir, ".doc-bridge"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, ".doc-bridge", "index.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestContextResolveIntoRun(t *testing.T) {
	dir := historyRepo(t, cleanContract, map[string]string{})
	docIndex(t, dir, 12)
	gitCommitAll(t, dir, "index")
	ctxFile := filepath.Join(t.TempDir(), "ctx.json")
	code, out, errs := hcli("context", "resolve", "--provider", "doc-bridge", "--query", "cache health", "-o", ctxFile, "--json")
	var res contextOutput
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.References != 8 || res.Matches != 12 {
		t.Fatalf("resolve: %d %s %s", code, out, errs)
	}
	first, _ := os.ReadFile(ctxFile)
	// Highest score first: e11 has the most "health".
	if !bytes.Contains(first, []byte(`"references":[{"id":"e11"`)) || bytes.Contains(first, []byte(`"e03"`)) {
		t.Fatalf("references: %s", first)
	}
	// Never overwritten without --force; with it, the same bytes again.
	if code, _, errs := hcli("context", "resolve", "--query", "cache health", "-o", ctxFile); code != exitUsage || !strings.Contains(errs, "--force") {
		t.Fatalf("overwrite: %d %s", code, errs)
	}
	if code, _, errs := hcli("context", "resolve", "--query", "cache health", "-o", ctxFile, "--force"); code != 0 {
		t.Fatalf("force: %d %s", code, errs)
	}
	if again, _ := os.ReadFile(ctxFile); !bytes.Equal(first, again) {
		t.Fatal("the snapshot changed between two resolutions")
	}
	// The file is a context file the run accepts and records.
	if code, out, errs := hcli("run", "--quiet", "--context-file", ctxFile); code != exitAwaiting {
		t.Fatalf("run --context-file: %d %s %s", code, out, errs)
	}
	ids, _ := os.ReadDir(filepath.Join(dir, ".proofgate", "runs"))
	log, _ := os.ReadFile(filepath.Join(dir, ".proofgate", "runs", ids[0].Name(), "events.ndjson"))
	if !bytes.Contains(log, []byte(`"snapshot_hash":"`+res.SnapshotHash+`"`)) {
		t.Fatalf("context.attached missing: %s", log)
	}
}

// Tampered, malformed, missing and oversized indexes fail closed (exit 2,
// nothing written), each with its reason.
func TestContextResolveHostileIndex(t *testing.T) {
	dir := historyRepo(t, cleanContract, map[string]string{})
	good := docIndex(t, dir, 3)
	idx := filepath.Join(dir, ".doc-bridge", "index.json")
	for name, c := range map[string]struct {
		body []byte
		want string
	}{
		"tampered":  {bytes.Replace(good, []byte("Cache design"), []byte("Cache desigN"), 1), "index-tampered"},
		"malformed": {good[:len(good)-1], "index-malformed"},
		"unknown":   {bytes.Replace(good, []byte(`"version":1`), []byte(`"version":1,"x":2`), 1), "index-malformed"},
		"oversized": {bytes.Repeat([]byte(" "), 16<<20+1), "index-too-large"},
		"missing":   {nil, "index-missing"},
	} {
		os.Remove(idx)
		if c.body != nil {
			os.WriteFile(idx, c.body, 0o644)
		}
		code, _, errs := hcli("context", "resolve", "--provider", "doc-bridge", "--query", "cache", "-o", "out.json")
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%s: %d %s", name, code, errs)
		}
		if _, err := os.Stat("out.json"); err == nil {
			t.Fatalf("%s: a file was written", name)
		}
	}
	if code, _, errs := hcli("context", "resolve", "--provider", "other", "--query", "q", "-o", "o.json"); code != exitUsage || !strings.Contains(errs, "unknown provider") {
		t.Errorf("unknown provider: %d %s", code, errs)
	}
}
