// Package retention is `proofgate prune`: it archives old terminal runs and
// reclaims unreachable blobs without ever losing evidence a retained run or
// an archive vouches for, and it is what lets readers read archived runs
// (internal/run/archived.go hooks it into run.Open, Inspect, Audit, ReadLog,
// VerifyLog and ReadDir).
//
// # Settings
//
// Resolve computes archive_after, blob_min_age and settle from a flag, an
// environment variable, the contract's retention: section or the default,
// in that order, and refuses a flag or variable shorter than the base (the
// contract's value, else the default) with a ReasonLooser error naming
// both. A run is archived only past max(archive_after, 1 day).
//
// # Archive
//
// <state>/archive/<RUN>.tar.gz: gzip (no name, mtime 0, OS 255, level 1)
// of a PAX tar of every regular file of the run directory but events.lock,
// sorted by slash path, each entry mode 0444, uid/gid 0, mtime 0, so the
// same files give the same bytes. Written to .<RUN>.tar.gz.tmp, fsynced,
// read back and proven byte-identical to the directory, renamed into place.
//
// # Placeholder
//
// <state>/runs/<RUN>/archived.json, the only file left of an archived run:
//
//	{"v":1,"run":"<RUN>","archive":"archive/<RUN>.tar.gz","digest":"sha256:<hex>",
//	 "size":N,"state":"COMPLETE","head":"sha256:<hex>","length":N,"archived":"<RFC 3339>"}
//
// It is a pointer: readers check it against the prune log.
//
// # Prune log
//
// <state>/prune-log.ndjson is an event log (kernel/eventlog) bound to run
// "prune-log", an empty source and contract sha256("proofgate prune log
// v1"). Lines: prune.checkpoint (with --key: the signed list of the chains
// about to be archived), prune.archived (one run: archive, digest, size,
// files, state, head, length, the blob digests it names), prune.applied
// (who, settings with sources, archived runs with digests, counts).
//
// # Apply and crash safety
//
// Apply holds <state>/prune.lock; per run, under the run's lock: archive,
// prove, record, placeholder, clear. Then blobs: rename to .pruning,
// settle, rescan, restore or delete. Recover (called at every store open)
// sees a dead prune's lock and restores its leftovers; a rerun completes.
// Readers' refusals are *Error with a Reason: archive-missing,
// archive-unrecorded, archive-tampered, archive-malformed,
// placeholder-mismatch, prune-log (docs/SPEC.md section 13).
package retention
