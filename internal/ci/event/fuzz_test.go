package event_test

import (
	"testing"

	"github.com/proofgate/proofgate/internal/ci/event"
)

func FuzzParse(f *testing.F) {
	f.Add("pull_request", []byte(`{"pull_request":{"number":1,"user":{"login":"a","id":1},"head":{"sha":"`+head+`","repo":{"full_name":"o/r"}},"base":{"sha":"`+base+`","repo":{"full_name":"o/r"}}}}`))
	f.Add("pull_request_review", []byte(`{"review":{"id":3,"state":"approved"},"pull_request":{"number":1,"user":{"login":"a","id":1},"head":{"sha":"`+head+`","repo":null},"base":{"sha":"`+base+`","repo":{"full_name":"o/r"}}}}`))
	f.Add("push", []byte(`{}`))
	f.Add("push", []byte(`{"ref":"refs/heads/main","after":"`+head+`","repository":{"full_name":"o/r","default_branch":"main"}}`))
	f.Add("workflow_dispatch", []byte(`{"ref":"refs/heads/main","after":"`+head+`"}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		c, err := event.Parse(name, data)
		if err != nil {
			return
		}
		if c.IsPullRequest() {
			if !event.IsHexSHA(c.HeadSHA) || !event.IsHexSHA(c.BaseSHA) || c.PR <= 0 || c.Author.ID == 0 {
				t.Fatalf("accepted incomplete PR context %+v", c)
			}
			if c.HeadRepo != c.BaseRepo && !c.Fork || c.HeadRepo == "" && !c.Fork {
				t.Fatalf("fork not flagged: %+v", c)
			}
			if name == "pull_request_review" && c.Review == nil {
				t.Fatal("review event without review accepted")
			}
		}
		// Only a push carries after, and only a push or workflow_dispatch
		// a ref: they may make a run's cache scope default.
		if name != "push" && c.After != "" || name != "push" && name != "workflow_dispatch" && c.Ref != "" {
			t.Fatalf("%s carries ref %q after %q", name, c.Ref, c.After)
		}
	})
}
