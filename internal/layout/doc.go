// Package layout holds the test of the tree's tiers: docs/ARCHITECTURE.md
// places every package of the module in one tier, and TestTiers checks
// every import of every package against that page. It has no code.
package layout
