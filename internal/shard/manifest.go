package shard

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/replay"
)

var (
	checkIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	hexRE     = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// decodeManifest parses shard.json bytes (already bounded by MaxManifest)
// and checks what needs no run: strict canonical JSON, v 1, shard in
// 1..of <= MaxShards, unique check ids of the contract id syntax, the
// shard log's sha256 hex, "sha256:<hex>" heads and blob digests.
func decodeManifest(b []byte) (replay.ShardManifest, error) {
	var m replay.ShardManifest
	if err := strictjson.Decode(b, &m); err != nil {
		return m, err
	}
	if c, err := canon.Marshal(&m); err != nil || !bytes.Equal(c, b) {
		return m, errors.New("not the canonical JSON of a manifest")
	}
	switch {
	case m.V != 1:
		return m, fmt.Errorf("v %d", m.V)
	case m.Of < 1 || m.Of > MaxShards || m.Shard < 1 || m.Shard > m.Of:
		return m, fmt.Errorf("shard %d of %d", m.Shard, m.Of)
	case !hexRE.MatchString(m.Events):
		return m, fmt.Errorf("events %q is not a sha256 hex digest", m.Events)
	case !blob.ValidDigest(m.Planned.Head) || !blob.ValidDigest(m.Log.Head):
		return m, errors.New("a chain head is not a sha256 digest")
	}
	seen := map[string]bool{}
	for _, id := range m.Checks {
		if !checkIDRE.MatchString(id) || seen[id] {
			return m, fmt.Errorf("check id %q is invalid or repeated", id)
		}
		seen[id] = true
	}
	for _, d := range m.Blobs {
		if !blob.ValidDigest(d) || seen[d] {
			return m, fmt.Errorf("blob %q is invalid or repeated", d)
		}
		seen[d] = true
	}
	return m, nil
}
