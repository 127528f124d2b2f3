// Package examples embeds the example workflow files so that
// `proofgate init --workflow` writes exactly what examples/workflows
// documents, placeholders included: there is one copy of each file.
package examples

import "embed"

// Workflows holds workflows/*.yml.
//
//go:embed workflows/*.yml
var Workflows embed.FS
