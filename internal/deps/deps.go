//go:build tools

// Package deps pins the project's module dependencies while packages are
// being written in parallel. It is removed once every import is real.
package deps

import (
	_ "github.com/google/go-github/v62/github"
	_ "github.com/gowebpki/jcs"
	_ "github.com/in-toto/attestation/go/v1"
	_ "github.com/moby/moby/api/types/container"
	_ "github.com/moby/moby/api/types/mount"
	_ "github.com/moby/moby/client"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/sethvargo/go-githubactions"
	_ "github.com/sigstore/sigstore/pkg/cryptoutils"
	_ "github.com/sigstore/sigstore/pkg/signature"
	_ "github.com/sigstore/sigstore/pkg/signature/dsse"
	_ "github.com/spf13/cobra"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/oauth2"
	_ "golang.org/x/sys/unix"
)
