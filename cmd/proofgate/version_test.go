package main

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFillFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		Main: debug.Module{Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-30T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	t.Run("link-time values win", func(t *testing.T) {
		b := buildInfo{Version: "2.0.0", Commit: "feed", Date: "2026-12-01T00:00:00Z"}
		fillFromBuildInfo(&b, bi)
		if b.Version != "2.0.0" || b.Commit != "feed" || b.Date != "2026-12-01T00:00:00Z" {
			t.Fatalf("ldflags overridden by build info: %+v", b)
		}
		if b.Modified {
			t.Fatal("vcs.modified applied to a commit set at link time")
		}
	})
	t.Run("build info fills the gaps", func(t *testing.T) {
		var b buildInfo
		fillFromBuildInfo(&b, bi)
		if b.Version != "v1.4.0" || b.Commit != bi.Settings[0].Value || b.Date != "2026-11-30T10:00:00Z" || !b.Modified {
			t.Fatalf("got %+v", b)
		}
		if !strings.Contains(b.String(), "(modified)") {
			t.Fatalf("a modified build does not say so: %s", b)
		}
	})
	t.Run("devel is not a version", func(t *testing.T) {
		var b buildInfo
		fillFromBuildInfo(&b, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}})
		if b.Version != "" {
			t.Fatalf("version %q from a (devel) build", b.Version)
		}
	})
}

func TestVersionJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"version", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	var b buildInfo
	if err := dec.Decode(&b); err != nil {
		t.Fatal(err)
	}
	if b.Version == "" || b.Commit == "" || b.Date == "" || !strings.HasPrefix(b.GoVersion, "go1.") || !strings.Contains(b.Platform, "/") {
		t.Fatalf("incomplete: %+v", b)
	}
	for _, args := range [][]string{{"version", "extra"}, {"version", "--jsn"}} {
		if code := Main(args, &out, &errb); code != exitUsage {
			t.Fatalf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
