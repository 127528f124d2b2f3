package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
)

// TestVSAKeylessFlags: when bundle verify has the keyless flags
// (docs/adr/0010), the trusted root is hashed as trust material and the
// identity flags given become policy; flags it lacks are skipped.
func TestVSAKeylessFlags(t *testing.T) {
	dir := t.TempDir()
	tr, root := filepath.Join(dir, "trust.json"), filepath.Join(dir, "trusted_root.json")
	os.WriteFile(tr, []byte(`{"version":1,"keys":[]}`), 0o644)
	os.WriteFile(root, []byte(`{"mediaType":"x"}`), 0o644)

	bare := &cobra.Command{}
	res, ids, err := (&vsaWrite{cmd: bare}).trustAndIdentities(tr)
	if err != nil || len(res) != 1 || res[0].Name != "trust.json" || ids != nil {
		t.Fatalf("without keyless flags: %v %v %v", res, ids, err)
	}

	c := &cobra.Command{}
	c.Flags().String("trusted-root", "", "")
	c.Flags().String("signer-workflow", "", "")
	c.Flags().String("source-ref", "", "")
	if err := c.Flags().Parse([]string{"--trusted-root", root, "--signer-workflow", "acme/widget/.github/workflows/ci.yml"}); err != nil {
		t.Fatal(err)
	}
	res, ids, err = (&vsaWrite{cmd: c}).trustAndIdentities(tr)
	if err != nil || len(res) != 2 || res[1].Name != "trusted_root.json" || len(ids) != 1 || ids["signer-workflow"] != "acme/widget/.github/workflows/ci.yml" {
		t.Fatalf("with keyless flags: %v %v %v", res, ids, err)
	}
	os.Remove(root)
	if _, _, err := (&vsaWrite{cmd: c}).trustAndIdentities(tr); err == nil {
		t.Fatal("a missing trusted root is not an error")
	}
}
