package bundle

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/replay"
)

// backdateShard rewrites dir's shard.json with finished at, and re-signs
// it with k: what a holder of a revoked shard key can produce.
func backdateShard(t *testing.T, dir string, k *signingKey, at time.Time) {
	t.Helper()
	p := filepath.Join(dir, replay.ShardManifestFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m replay.ShardManifest
	if err := strictjson.Decode(b, &m); err != nil {
		t.Fatal(err)
	}
	m.Finished = at.UTC().Format(time.RFC3339Nano)
	if b, err = canon.Marshal(&m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, replay.ShardSignatureFile)); err != nil {
		t.Fatal(err)
	}
	if err := SignShard(dir, k.s); err != nil {
		t.Fatal(err)
	}
}

// A shard key revoked an hour ago re-signs a manifest whose finished
// time is set before the revocation, and before the run was planned:
// the merge refuses it whatever finished says.
func TestShardBackdatedByRevokedKeyRefusedAtMerge(t *testing.T) {
	sr := planShards(t, 4)
	k := newKey(t)
	sr.execShards(t, 2, k)
	revoked := time.Now().Add(-time.Hour)
	for _, d := range sr.dirs {
		backdateShard(t, d, k, revoked.Add(-time.Hour))
	}
	st := storeWith(t, k)
	if err := st.Revoke(k.s.KeyID(), &revoked); err != nil {
		t.Fatal(err)
	}
	_, err := shard.Merge(context.Background(), sr.state, sr.id, sr.dirs, shard.MergeOptions{Verifier: &ShardVerifier{Keys: st}})
	var me *shard.MergeError
	if !errors.As(err, &me) {
		t.Fatalf("a shard backdated by a revoked key merged: %v", err)
	}
	r, err := run.Open(sr.state, sr.id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if s := r.State(); s != replay.Planned {
		t.Fatalf("after the refused merge the run is %s, want PLANNED", s)
	}
}

// The key's status at merge is judged at the merge (the verifier's own
// clock): a shard signed by a key revoked or retired before it is
// refused whatever its finished time; a finished time after the merge is
// implausible.
func TestShardKeyJudgedAtMergeTime(t *testing.T) {
	sr := planShards(t, 4)
	k := newKey(t)
	sr.execShards(t, 2, k)
	now := time.Now()
	hourAgo := now.Add(-time.Hour)
	cases := []struct {
		name     string
		finished time.Time
		store    func(st *trust.Store) error
		want     Reason
	}{
		{"revoked an hour ago, finished before", hourAgo.Add(-time.Minute), func(st *trust.Store) error {
			return st.Revoke(k.s.KeyID(), &hourAgo)
		}, KeyRevoked},
		{"retired an hour ago, finished before", hourAgo.Add(-time.Minute), func(st *trust.Store) error {
			return st.Retire(k.s.KeyID(), hourAgo)
		}, KeyNotValid},
		{"finished in the future", now.Add(time.Hour), nil, SigningTimeImplausible},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			backdateShard(t, sr.dirs[0], k, c.finished)
			m, _ := os.ReadFile(filepath.Join(sr.dirs[0], replay.ShardManifestFile))
			sig, _ := os.ReadFile(filepath.Join(sr.dirs[0], replay.ShardSignatureFile))
			st := storeWith(t, k)
			if c.store != nil {
				if err := c.store(st); err != nil {
					t.Fatal(err)
				}
			}
			wantShardSig(t, (&ShardVerifier{Keys: st}).VerifyShard(m, sig, nil), c.want)
		})
	}
}

// acceptAnyShard is a lax merger's verifier (an older release, a hand
// edit): it lets a backdated shard into the run's log.
type acceptAnyShard struct{}

func (acceptAnyShard) VerifyShard([]byte, []byte, []byte) error { return nil }

// A shard manifest finished before the run was planned is refused by the
// merge itself, from the run's own log, whatever verifier vouched for its
// signature: no merged run, so no bundle to verify.
func TestMergeRefusesShardFinishedBeforePlan(t *testing.T) {
	sr := planShards(t, 4)
	k, gate := newKey(t), newKey(t)
	sr.execShards(t, 2, k)
	backdateShard(t, sr.dirs[0], k, time.Now().Add(-2*time.Hour))
	_, err := shard.Merge(context.Background(), sr.state, sr.id, sr.dirs, shard.MergeOptions{Verifier: acceptAnyShard{}})
	var me *shard.MergeError
	if !errors.As(err, &me) || me.Reason != shard.SigningTime {
		t.Fatalf("merge of a shard finished before the plan: %v, want %s", err, shard.SigningTime)
	}
	var buf bytes.Buffer
	if _, err := Export(sr.dir, gate.s, &buf, ExportOptions{}); err == nil {
		t.Fatal("a run whose merge was refused exported a bundle")
	}
}
