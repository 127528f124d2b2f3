// Package evidence runs one exact, pre-reviewed command from an allowlist
// to collect runtime evidence for a claim, and records a verdict on it
// (issue 16 item 1; docs/SPEC.md "Runtime evidence"; ADR 0024).
//
// # Allowlist
//
// The allowlist is a JSON file the user controls, outside the repository
// (it is refused when it resolves inside it), owned by the invoking user
// or root and writable by no one else (POSIX). It is strictly decoded
// (internal/strictjson: unknown fields, duplicate or case-variant names are
// refused) and bounded (MaxAllowlistSize bytes, MaxEntries commands):
//
//	{"version": 1,
//	 "commands": {
//	   "health-503": {
//	     "argv": ["/usr/bin/curl", "-sS", "-o", "/dev/stdout", "http://127.0.0.1:8080/health"],
//	     "cwd": "/srv/app",
//	     "env": {"LANG": "C"},
//	     "timeout_seconds": 30,
//	     "output_limit_bytes": 65536}}}
//
// Every field is required. argv[0] is an absolute path (no PATH search);
// cwd is absolute and an existing directory; env is the complete
// environment (nothing is inherited; {} for none); timeout_seconds is
// 1..300 and output_limit_bytes 1..1048576 (per stream). An id is
// [a-z0-9][a-z0-9._-]{0,62}, not "verdict". Any other value is refused
// with an *AllowlistError naming the field.
//
// # Collection
//
// Collect runs the entry's argv directly (no shell, no interpolation, no
// appended arguments) through a runtime.Runtime, the process provider
// (which runs it in its own process group and kills the group on timeout
// or overflow). Each collection gets a fresh directory <root>/<collection
// id> holding <id>.stdout, <id>.stderr and <id>.json (the report, the
// canonical JSON of a replay.EvidenceReport, so its SHA-256 is the
// report's digest), all created exclusively: nothing is ever overwritten.
//
// # Verdict
//
// Verdict records verdict.json (a replay.EvidenceVerdict) in the
// collection directory, once. A collection whose command hit a timeout,
// its output limit or could not start admits only unable-to-check, which
// names the limitation. An observation (an approved optional tool's
// finding about a target) is recorded only with at least one artifact,
// copied into the collection directory first.
package evidence
