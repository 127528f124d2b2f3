package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/spf13/cobra"
)

// loadSigner returns the signer --key names: an Ed25519 PKCS#8 key from a
// file or env:VAR.
func loadSigner(ref string) (envelope.Signer, error) {
	if ref == "" {
		return nil, usageErr(errors.New("--key is required (a PKCS#8 PEM file, or env:VAR)"))
	}
	s, err := key.Load(ref)
	if err != nil {
		return nil, usageErr(err)
	}
	return s, nil
}

func keygenCmd(g *globals) *cobra.Command {
	var out string
	var asJSON, force bool
	c := &cobra.Command{
		Use:   "keygen [-o key.pem] [--force]",
		Short: "Generate an Ed25519 signing key",
		Long: `Write a new Ed25519 private key as PKCS#8 PEM (mode 0600) and its public key
next to it (key.pem → key.pub.pem), and print the key id: the lowercase hex
SHA-256 of the public key's DER SubjectPublicKeyInfo. Existing files are never
overwritten unless --force is given. Keys made by "openssl genpkey -algorithm
ed25519" work as well.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, p := range []string{out, key.PublicPath(out)} {
				if err := g.checkOutput("-o", p); err != nil {
					return err
				}
			}
			generate := key.Generate
			if force {
				generate = key.GenerateReplacing
			}
			id, err := generate(out)
			if err != nil {
				return outputErr(err)
			}
			pub, err := os.ReadFile(key.PublicPath(out))
			if err != nil {
				return envErr(err)
			}
			if asJSON {
				return writeJSON(g.stdout, map[string]string{"key_id": id, "private_key": out,
					"public_key": key.PublicPath(out), "public_key_pem": string(pub)})
			}
			fmt.Fprintf(g.stdout, "%s\n%s", id, pub)
			fmt.Fprintf(g.stderr, "wrote %s (private, 0600) and %s\n", out, key.PublicPath(out))
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "key.pem", "private key file to create")
	c.Flags().BoolVar(&force, "force", false, "replace existing key files")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
