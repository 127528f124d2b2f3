// Package replay reads a run: it replays the event log of a run directory
// against the run's frozen contract into a Report, refusing what the
// lifecycle forbids, and reconciles that replay with the projection
// (run.json) and the evidence blobs. It is the verification side of the
// kernel: the bundle verifier and any third-party verifier need only this
// package, kernel/eventlog, internal/canon, internal/strictjson and
// kernel/contract. It takes no lock, runs no git and no check; the writer
// (planning, execution, decisions, locks, staleness) is internal/run, which
// replays every event it appends through the same Folder.
//
// Event types are a table (eventTypes in table.go): each row says how the
// replay reads the type's data, how it applies it to the replay state, and
// who may write it. docs/SPEC.md §4 documents every row; a test checks it.
package replay
