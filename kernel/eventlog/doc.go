// Package eventlog is the append-only, hash-chained event log of a run
// (events.ndjson).
//
// # Format
//
// Each line is one RFC 8785 canonical JSON object terminated by '\n', with
// exactly the members contract, data, hash, prev, run, seq, source {commit,
// tree}, time, type and v (v = 1). hash is "sha256:" + hex SHA-256 of the
// canonical JSON of the object without hash; seq starts at 1 with prev
// null, and every later prev is the previous event's hash. time is what
// time.RFC3339Nano prints for a UTC time; type is 1-128 characters of
// [A-Za-z0-9._-]; seq has at most 15 digits; data is any JSON object. A line
// is at most MaxLine bytes and must be byte-identical to its canonical form.
// Readers accept at most MaxEvents events.
//
// # Refusals
//
// Readers refuse with a *ChainError naming the reason and the 1-based
// physical line. Checks run in this order, the first failure wins:
//
//   - malformed: not canonical JSON, a missing/extra/misordered member, bad
//     field form, v ≠ 1, seq 1 with a non-null prev, a line over MaxLine,
//     more than MaxEvents events;
//   - broken-link: the line's own hash does not match its content, or prev
//     is not the previous event's hash (both are a broken link);
//   - foreign-binding: run, contract or source differ from the expected
//     binding (or, without one, from the first event);
//   - unchained-after-chained: prev is null after the first event;
//   - seq-gap: seq is not the previous seq + 1 (gaps, duplicates, reorders);
//     the first event must have seq 1;
//   - torn-tail: the file's last bytes are not '\n'-terminated.
//
// Deleting final lines leaves a valid shorter log: callers that must detect
// it compare Summary.Len and Summary.Head with a checkpoint they trust.
//
// # Torn tails and recovery
//
// A crash during an append can leave a final fragment without '\n'. Open
// tolerates damage at the end of the file — a torn fragment, or malformed
// lines (never a line with a valid envelope) left by a crash during an
// earlier repair — and the next Append repairs it in one write, fsynced:
//
//  1. if the file does not end in '\n', a "\n", so the fragment becomes its
//     own line N;
//  2. an event of type log.recovered chained to the last complete event,
//     with data {"bytes": B, "line": N, "sha256": "<hex>"}, where the
//     damaged region is the bytes of line N and any malformed lines after
//     it, joined by '\n' (B bytes, digest hex);
//  3. the requested event.
//
// If the fragment is a whole valid line that lost only its '\n' (or is the
// log.recovered event of the region before it), the repair is the "\n"
// alone and the event stands.
//
// Readers accept malformed lines only when they are immediately followed by
// a log.recovered event naming their first line, length and digest; such
// regions are listed in Summary.Recovered (auditors see every repair). A
// damaged end without recovery is refused: torn-tail when the region is a
// final fragment, malformed otherwise.
//
// # Segments
//
// A log may span several files beside its active file (events.ndjson):
// sealed segments events.00000001.ndjson, events.00000002.ndjson, ...
// (SegmentName), each ending in a complete line, never written again. The
// writer seals the active file under its lock once a flush leaves it at
// least SegmentSize bytes long (PROOFGATE_SEGMENT_SIZE, default 10 MiB), by
// link, head index, fresh file, rename (Log.sealLocked); the chain goes on:
// the next event has the next seq and links to the sealed one's last. The
// files concatenated in order (OpenChain) are a valid single-file log, so
// log.recovered line numbers count physical lines across all files.
// ReadFile, VerifyPath and the readers built on them read the segments in
// order, then the active file; a refusal names the file (ChainError.File)
// and the line in it, with these reasons besides the ones above:
//
//   - segment-gap: a hole in the numbering (File is the missing name), or a
//     file whose first event does not follow the previous file's last;
//   - segment-order: a file's first seq is not after the previous file's;
//   - segment-torn: a sealed segment is empty or ends in damage.
//
// An active file that is the last segment itself (or a byte-identical
// copy) is an interrupted seal: readers read it once, Open finishes it.
//
// # The head index
//
// events.head.json (HeadFile) is a cache the writer rewrites (rename, no
// fsync) when it closes, suspends or seals: where the last event is and
// how long the active file was. Open trusts it only as far as the files
// agree (see headIndex) and then reads neither the sealed segments nor the
// active file's known prefix: appends are O(1) in the log's length. No
// verifier reads it. Log.Load reads and verifies what Open skipped.
//
// # Performance
//
// Verify never canonicalises: a zero-allocation validator checks in one
// pass that each line is already canonical (sorted keys by UTF-16 code
// units, minimal escapes, ES6 numbers, no whitespace), extracts the
// envelope, and hashes the line with its hash member cut out (two writes to
// SHA-256). Hash is the slow reference built on full canonicalisation.
package eventlog
