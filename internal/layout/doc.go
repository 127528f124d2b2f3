// Package layout holds the tests of the tree's and the docs' layout: every
// package in one tier of docs/ARCHITECTURE.md and no import against the
// tiers (TestTiers), SPEC.md's sections numbered without gaps, and every
// relative link of the docs resolving to a file and heading
// (TestDocLinks). It has no code.
package layout
