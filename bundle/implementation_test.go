package bundle

import (
	"bytes"
	"testing"
)

func TestImplementationBundle(t *testing.T) {
	f := makeImplemented(t)
	k := newKey(t)
	st := storeWith(t, k)
	good := export(t, f.fixture, k, ExportOptions{})
	res, err := Verify(bytes.NewReader(good), st, VerifyOptions{AnyContract: true, Commit: f.commit, RequireApprovals: 1})
	if err != nil {
		t.Fatalf("bundle refused: %v", err)
	}
	ib := res.Run.ImplementedBy
	if ib == nil || ib.Run != f.implID || ib.Sessions != 1 || ib.ToolCalls != 4 {
		t.Fatalf("implemented_by %+v", ib)
	}
	if v := res.Verdict(); v.ImplementedBy == nil || *v.ImplementedBy != *ib {
		t.Fatalf("verdict implemented_by %+v", v.ImplementedBy)
	}
	if again := export(t, f.fixture, k, ExportOptions{}); !bytes.Equal(good, again) {
		t.Fatal("export is not deterministic")
	}
}
