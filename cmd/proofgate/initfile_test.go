package main

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/kernel/exit"
)

// A file that appears between init's check and its write is not
// replaced, and the error says what init wrote before it; init has no
// --force to suggest.
func TestInitFileErr(t *testing.T) {
	exists := fmt.Errorf("open .github/workflows/proofgate.yml: %w", fs.ErrExist)
	err := initFileErr(&app.InitFileError{Err: exists, Written: []string{".proofgate/contract.yaml"}})
	if c, _ := exit.Of(err); c != exit.Usage {
		t.Fatalf("class %v: %v", c, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "init never overwrites; written before it: .proofgate/contract.yaml") || strings.Contains(msg, "--force") {
		t.Fatalf("%q", msg)
	}
	if err := initFileErr(&app.InitFileError{Err: exists}); !strings.HasSuffix(err.Error(), "written before it: nothing") {
		t.Fatalf("%q", err)
	}
	if c, _ := exit.Of(initFileErr(&app.InitFileError{Err: fs.ErrPermission})); c != exit.Environment {
		t.Fatalf("permission: class %v", c)
	}
}
