package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// referencePath is the CLI reference generated from the command tree.
const referencePath = "../../docs/cli-reference.md"

// cliReference renders every command a person runs (not the hidden action
// entrypoints, help or completion), depth first in name order: its
// synopsis, help text and flags as --help prints them.
func cliReference(root *cobra.Command) []byte {
	var b bytes.Buffer
	b.WriteString("# CLI reference\n\nGenerated from the command tree: `go test ./cmd/proofgate -run TestCLIReference` fails when it differs, and `PROOFGATE_WRITE_REFERENCE=1` rewrites it. [cli.md](cli.md) explains the commands; this page lists each one with its flags. Every command also takes `--state DIR` (default `.proofgate`) and `--contract FILE` (default `.proofgate/contract.yaml`).\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c != root {
			referenceEntry(&b, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return b.Bytes()
}

// referenceEntry writes one command's section.
func referenceEntry(w io.Writer, c *cobra.Command) {
	fmt.Fprintf(w, "\n## %s\n\n%s.\n\n```\n%s\n```\n", c.CommandPath(), strings.TrimSuffix(c.Short, "."), c.UseLine())
	if c.Long != "" {
		fmt.Fprintf(w, "\n```text\n%s\n```\n", strings.TrimSpace(c.Long))
	}
	var local []string
	c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			local = append(local, f.Name)
		}
	})
	if len(local) > 0 {
		fmt.Fprintf(w, "\nFlags:\n\n```text\n%s```\n", c.LocalNonPersistentFlags().FlagUsagesWrapped(100))
	}
}

// TestCLIReference: docs/cli-reference.md is what the command tree says.
func TestCLIReference(t *testing.T) {
	var out, errw bytes.Buffer
	got := cliReference(newRoot(&globals{stdout: &out, stderr: &errw}, &out, &errw))
	if os.Getenv("PROOFGATE_WRITE_REFERENCE") == "1" {
		if err := os.WriteFile(referencePath, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what the command tree says: run PROOFGATE_WRITE_REFERENCE=1 go test ./cmd/proofgate -run TestCLIReference", referencePath)
	}
	for _, verb := range []string{"## proofgate bundle verify", "## proofgate vsa verify", "## proofgate run", "--vsa-keyless"} {
		if !bytes.Contains(got, []byte(verb)) {
			t.Errorf("the reference has no %q", verb)
		}
	}
	if bytes.Contains(got, []byte("## proofgate action")) {
		t.Error("the reference lists the hidden action entrypoints")
	}
}
