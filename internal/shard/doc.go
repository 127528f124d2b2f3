// Package shard executes a planned run's checks in N shards (matrix jobs,
// processes, machines) and merges the shards back into the run.
//
// # Signature changes against API4.md
//
//   - Verifier.VerifyShard takes the keyless verification material too:
//     VerifyShard(manifest, signature, material []byte) error, where
//     material is the bytes of shard.sigstore.json (nil when the shard is
//     key-signed).
//   - bundle side: bundle.SignShard(dir, envelope.Signer) (key),
//     bundle.SignShardContext(ctx, dir, envelope.Signer) and
//     bundle.SignShardWith(ctx, dir, envelope.MaterialSigner) (keyless);
//     the Verifier is *bundle.ShardVerifier{Keys: trust store,
//     Keyless: sigstore verifiers}.
//   - Merge also accepts a run a killed merge left VERIFYING with nothing
//     recorded (run.Run.CanMerge); Exec requires a PLANNED run and leaves
//     it PLANNED.
//
// Everything else is as API4.md fixes it. Shard directory files:
// ManifestFile (shard.json), SignatureFile (shard.sig), MaterialFile
// (shard.sigstore.json, keyless), LogFile (events.ndjson), BlobDir
// (blobs/), LockFile (shard.lock, while Exec writes).
//
// # Who plans: plan once, the planned run travels (API4.md choice (a))
//
// `proofgate plan` runs once (a plan job, or the first step on one
// machine). The planned run directory (runs/<id>: contract.json,
// events.ndjson, run.json, blobs/) is then copied into the state
// directory of every shard job and of the merge job (in the action: an
// artifact the plan job uploads and the other jobs download). A copy is
// never trusted for what it claims: Exec opens it with run.Open (chain,
// binding, projection, contract) and binds its shard log to the run id,
// the contract hash, the source and the head and length of the planned
// log it executed; Merge, in the merge job's state directory, checks each
// shard against its own copy of the run and refuses a shard bound to
// another run, contract, source or planned prefix (foreign). Re-planning
// in each job would give each job another run id (ids are time-based and
// random), so a plan is never repeated.
//
// The details (assignment, the shard directory, the shard log, the merge
// event) are specified in docs/SPEC.md "Shards".
package shard
