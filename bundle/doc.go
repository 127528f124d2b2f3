// Package bundle exports and verifies ProofGate evidence bundles: one
// deterministic .tar.gz holding a run's events.ndjson, run.json,
// contract.json, the evidence blobs the log references, an optional signed
// checkpoint, and attestation.dsse.json, a DSSE envelope over an in-toto
// Statement v1 whose subjects are every other file and whose predicate
// summarises the run (docs/SPEC.md section 7 specifies the bytes; the
// worked example there is testdata/vector.json, and testdata/vectors holds
// one failure vector per refusal reason).
//
// Export (ExportFile) packs a run that reconciles as COMPLETE and signs it
// with any envelope.Signer. Verification is split as sigstore-go splits it:
// a Verifier (NewVerifier, over any envelope.Verifiers such as the trust
// store) checks integrity, always, and a Policy (NewPolicy) says what the
// caller requires. A policy must name a source (WithCommit, WithTree, or
// the explicit WithoutSourceBindingUnsafe) and a contract
// (WithContractHash, or WithoutContractBindingUnsafe); VerifyOptions is the
// same policy as a struct, for callers that read flags.
//
// Verification fails closed, in this order, each refusal a *VerifyError
// with a typed Reason: the policy (a *PolicyError before anything is read);
// a bounded, safe archive read (archive-unsafe, archive-too-large); the
// envelope opened with a trusted key before a byte of the payload is used
// (malformed, unknown-key, signature-invalid); the statement, which must be
// its own canonical JSON; the key's status and window at signed_at and at
// the witness time (key-revoked, key-not-valid-at-signing-time,
// identity-mismatch); the subjects, exactly the files (missing-file,
// extra-file, subject-mismatch); a full replay of the run from the bundled
// files (chain-broken, audit-failed); the implementation run a successor
// carries under implementation/<id>/ (implementation.go, ADR 0017: replayed
// fully, then bound to the run's implemented_by: extra-file, missing-file,
// audit-failed, implementation-mismatch); the predicate against that replay
// (chain-mismatch, not-complete, predicate-mismatch); a plausible signing
// time (signing-time-implausible); the carried checkpoint; the policy's
// bindings (commit-mismatch, tree-mismatch, dirty-source, repo-mismatch,
// profile-mismatch, contract-mismatch); and the approvals
// (insufficient-approvals). Verdict is the one JSON shape of the outcome,
// printed by `proofgate bundle verify --json` and the verify action.
//
// Keyless bundles (ADR 0010; keyless.go) are exported with ExportWith and an
// envelope.MaterialSigner: the keyid and predicate key_id are
// envelope.KeylessPrefix and 64 hex, and the archive carries
// envelope.MaterialFile (attestation.sigstore.json) after the attestation.
// A Verifier given WithMaterialVerifiers opens them with the key the
// material vouches for: the member is required (missing-file), refusals of
// the material keep their reason (certificate-invalid, timestamp-invalid,
// tlog-invalid, material-mismatch, identity-mismatch,
// signing-time-implausible, malformed: any error with a
// RefusalReason() string method naming one), the witnessed time stands
// for the signing time (signed_at within MaxKeylessSigningDelay before it
// and MaxClockSkew after it; the identity's CheckWitnessed at it and at
// the policy's witness time), and Result gains Signer and Witnessed. A
// key-signed bundle carrying the member is refused (extra-file).
// Policy.Describe is a policy as a document, which bundle/vsa hashes into
// the signed verification summary (SLSA VSA) a gate gives downstream.
package bundle
