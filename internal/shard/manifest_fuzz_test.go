package shard

import (
	"bytes"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

func hostileManifests() (good []byte, hostile [][]byte) {
	d := "sha256:" + strings.Repeat("d", 64)
	m := replay.ShardManifest{V: 1, Run: "20261201T120000Z-abc123", Contract: "sha256:" + strings.Repeat("c", 64),
		Source: eventlog.Source{Commit: strings.Repeat("a", 40), Tree: strings.Repeat("b", 40)}, Shard: 2, Of: 3,
		Checks: []string{"build", "test.unit"}, Planned: replay.ChainRef{Length: 4, Head: d}, Log: replay.ChainRef{Length: 9, Head: d},
		Events: strings.Repeat("e", 64), Blobs: []string{d}, Finished: "2026-12-01T12:00:00.123Z"}
	good, _ = canon.Marshal(&m)
	for _, r := range [][2]string{{`"shard":2`, `"shard":0`}, {`"shard":2`, `"shard":4`}, {`"of":3`, `"of":99999999999999999999`},
		{`"v":1`, `"v":1,"v":1`}, {`"v":1`, `"V":1`}, {`"build"`, `"../x"`}, {`"build"`, `"test.unit"`},
		{`"blobs":["`, `"blobs":["../`}, {`"checks":[`, `"checks":[` + strings.Repeat("[", 2000)}, {`"of":3`, `"of":3e0`}} {
		hostile = append(hostile, bytes.Replace(good, []byte(r[0]), []byte(r[1]), 1))
	}
	return good, append(hostile, good[:len(good)-1], append([]byte(" "), good...))
}

// Each hostile variant of a valid manifest is refused.
func TestDecodeManifestRefuses(t *testing.T) {
	good, hostile := hostileManifests()
	if _, err := decodeManifest(good); err != nil {
		t.Fatalf("a valid manifest: %v", err)
	}
	for _, b := range hostile {
		if _, err := decodeManifest(b); err == nil {
			t.Errorf("accepted %s", b)
		}
	}
}

// FuzzDecodeManifest: shard.json bytes never panic; an accepted manifest
// is within the bounds Merge relies on.
func FuzzDecodeManifest(f *testing.F) {
	good, hostile := hostileManifests()
	f.Add(good)
	for _, b := range hostile {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeManifest(b)
		if err != nil {
			return
		}
		if m.V != 1 || m.Of < 1 || m.Of > MaxShards || m.Shard < 1 || m.Shard > m.Of {
			t.Fatalf("accepted shard %d of %d v %d", m.Shard, m.Of, m.V)
		}
		seen := map[string]bool{}
		for _, id := range m.Checks {
			if !checkIDRE.MatchString(id) || seen[id] {
				t.Fatalf("accepted check id %q", id)
			}
			seen[id] = true
		}
		for _, x := range m.Blobs {
			if !blob.ValidDigest(x) {
				t.Fatalf("accepted blob %q", x)
			}
		}
		if !hexRE.MatchString(m.Events) || !blob.ValidDigest(m.Log.Head) || !blob.ValidDigest(m.Planned.Head) {
			t.Fatalf("accepted digests %q %q %q", m.Events, m.Log.Head, m.Planned.Head)
		}
		if c, _ := canon.Marshal(&m); !bytes.Equal(c, b) {
			t.Fatal("accepted non-canonical bytes")
		}
	})
}
