package run

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestAuthorizeActorVariants (issue 25 class 7): a whitespace, case or
// fullwidth variant of an authorizer is that authorizer (a repeat, or a
// reversal refused), and an actor with an invisible, space-like or
// mixed-script character is refused before anything is recorded.
func TestAuthorizeActorVariants(t *testing.T) {
	f := newFixture(t, twoChecks)
	id := filepath.Base(f.complete(t))
	if err := f.authorize(t, id, AuthorizeOptions{Target: "deploy/prod", Actor: "carol"}); err != nil {
		t.Fatal(err)
	}
	var done *DecidedError
	var re *RefusedError
	for _, v := range []string{"carol ", " CAROL", "ｃａｒｏｌ"} {
		if err := f.authorize(t, id, AuthorizeOptions{Target: "deploy/prod", Actor: v}); !errors.As(err, &done) {
			t.Errorf("repeat by %q: %v, want *DecidedError", v, err)
		}
		if err := f.authorize(t, id, AuthorizeOptions{Target: "deploy/prod", Actor: v, Reject: true, Reason: "x"}); !errors.As(err, &re) {
			t.Errorf("reversal by %q: %v, want *RefusedError", v, err)
		}
	}
	for _, v := range []string{"car\u200bol", "Carol\t", "carol\u00a0", "\u0441arol", "carol\u3164"} {
		if err := f.authorize(t, id, AuthorizeOptions{Target: "deploy/other", Actor: v}); !errors.As(err, &re) {
			t.Errorf("actor %q: %v, want *RefusedError", v, err)
		}
	}
}
