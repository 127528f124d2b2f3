// Package release holds the tests of ProofGate's release machinery, which
// is not Go: .goreleaser.yaml, .github/workflows/release.yml and
// scripts/release-pin.sh (docs/release.md). The pin script is run here as
// the release workflow runs it, on temporary copies of action.yml,
// verify/action.yml and the reusable workflow. The package has no API.
package release
