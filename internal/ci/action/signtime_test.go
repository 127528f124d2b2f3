package action

import (
	"bytes"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/ci/shardjob"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// backdatePlan re-signs a plan artifact with the job's key after moving
// its signed_at back by d: what a holder of the key can make.
func backdatePlan(t *testing.T, fx *fixture, zipData []byte, d time.Duration) []byte {
	t.Helper()
	priv, err := key.ParsePrivate([]byte(fx.keyPEM), "signing-key")
	if err != nil {
		t.Fatal(err)
	}
	s, err := key.NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	return rezip(t, zipData, func(zf map[string][]byte) {
		for n, tgz := range zf {
			list, err := archive.Read(bytes.NewReader(tgz), archive.DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			var entries []archive.Entry
			for _, f := range list {
				data := f.Data
				if f.Name == bundle.AttestationFile {
					_, p, err := envelope.Parse(data, bundle.PayloadType, f.Name)
					if err != nil {
						t.Fatal(err)
					}
					var st shardjob.PlanStatement
					if err := strictjson.Decode(p, &st); err != nil {
						t.Fatal(err)
					}
					at, err := time.Parse(time.RFC3339Nano, st.Predicate.SignedAt)
					if err != nil {
						t.Fatal(err)
					}
					st.Predicate.SignedAt = at.Add(-d).UTC().Format(time.RFC3339Nano)
					if p, err = canon.Marshal(&st); err != nil {
						t.Fatal(err)
					}
					if data, err = envelope.Sign(s, bundle.PayloadType, p); err != nil {
						t.Fatal(err)
					}
				}
				entries = append(entries, archive.BytesEntry(f.Name, data))
			}
			var buf bytes.Buffer
			if err := archive.Write(&buf, entries); err != nil {
				t.Fatal(err)
			}
			zf[n] = buf.Bytes()
		}
	})
}

// A plan re-signed with signed_at before the planned run's last event is
// refused before anything in it is trusted: the log says it was signed
// later.
func TestShardPlanBackdated(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.prEvent()
	fx.shardEnv(runID, 1, "plan", ModePlan, "")
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	plan, ok := fx.gh.Uploaded(shardjob.PlanArtifactName(runID, 1))
	if !ok {
		t.Fatal("no plan uploaded")
	}
	forged := backdatePlan(t, fx, plan, time.Hour)
	fx.gh.AddArtifact(owner, repo, githubtest.Artifact{Name: shardjob.PlanArtifactName(runID+7, 1), HeadSHA: fx.head, RunID: runID + 7, Data: forged})
	fx.shardEnv(runID+7, 1, "shard", "", "1/2")
	res, err = fx.run()
	wantShardRefusal(t, fx, res, err, ExitRefused, shardjob.PlanInvalid, "signing-time-implausible")
}
