// Command proofgate plans, runs, approves, audits and exports verifiable CI
// runs. It only parses flags and calls into the kernel, bundle and ci
// packages; see the README for usage and docs/SPEC.md for the formats.
package main

import "os"

func main() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) }
