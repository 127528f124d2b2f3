package main

import (
	"encoding/json"
	"io"

	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/kernel/actor"
)

// esc escapes untrusted text for the terminal.
func esc(s string) string { return printable.Escape(s) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// checkNames refuses an --actor that is not a printable one-line name and
// a --reason that is not printable one-line text (exit 2): a newline or an
// escape sequence in either would forge lines in status and audit.
func checkNames(name, reason string) error {
	if err := actor.Check("--actor", name); err != nil {
		return usageErr(err)
	}
	if err := printable.CheckText("--reason", reason); err != nil {
		return usageErr(err)
	}
	return nil
}
