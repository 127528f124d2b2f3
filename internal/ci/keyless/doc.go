// Package keyless holds what the Actions' keyless signing and
// verification decide without a job (docs/adr/0010-keyless-signing.md):
// which Sigstore service URLs the job's OIDC token may go to
// (CheckServiceURL), which signer the verify inputs pin (Pins.Identity),
// and which identity a Sigstore bundle's certificate names
// (CertificateIdentity). Reading the inputs, fetching the OIDC token and
// signing stay in internal/ci/action.
package keyless
