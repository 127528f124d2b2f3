// Package app is the application layer: the work of a verb, with plain
// options in and results out, shared by the command line (cmd/proofgate)
// and the GitHub Action (internal/ci/action), which only parse their
// inputs, call it and render what it returns. It holds what both, or a
// verb's several spellings, would otherwise assemble each in its own code:
// connecting the runtimes a contract needs (Connect), listing the runs of
// a state directory (List), reading a check's recorded output
// (OpenOutput), exporting a run's signed bundle with its companion
// Sigstore bundle (Export), writing a signed verification summary with its
// policy document (WriteSummary) and the doctor's findings (Doctor). The errors a caller acts on carry their exit
// class (kernel/exit); a failed write is the caller's to word.
package app
