package replay

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Bounds on one check's products (ADR 0039): the harness stops collecting
// past them, and a log that records more is malformed.
const (
	MaxProducts     = 256
	MaxProductBytes = 4 << 30
	maxProductPath  = 4096
)

// productsInconsistency says why d's products cannot be what the harness
// recorded for check c, or "": only a passed check has products, each a
// clean relative path its globs match, sorted without duplicates, within
// the bounds, with a well-formed digest; and a passed check that declares
// globs has at least one product for each.
func productsInconsistency(c contract.Check, d CheckFinishedData) string {
	if len(d.Products) > 0 && d.Outcome != runtime.Passed {
		return fmt.Sprintf("products recorded for a check that %s", d.Outcome)
	}
	if len(d.Products) > MaxProducts {
		return fmt.Sprintf("%d products, more than %d", len(d.Products), MaxProducts)
	}
	var total int64
	for i, p := range d.Products {
		switch {
		case !ValidProductPath(p.Path):
			return fmt.Sprintf("product path %q is not a clean relative path", clipText(p.Path))
		case !runtime.Produced(c.Produces, p.Path):
			return fmt.Sprintf("product %s is matched by none of the check's produces globs", p.Path)
		case i > 0 && p.Path <= d.Products[i-1].Path:
			return fmt.Sprintf("product %s is out of order or repeated", p.Path)
		case !digestRE.MatchString(p.Digest):
			return fmt.Sprintf("product %s: digest %q is not sha256:<64 hex>", p.Path, clipText(p.Digest))
		case p.Size < 0 || p.Size > MaxProductBytes-total:
			return fmt.Sprintf("product %s: size %d is outside the %d bytes the products may hold in all", p.Path, p.Size, int64(MaxProductBytes))
		}
		total += p.Size
	}
	if d.Outcome != runtime.Passed {
		return ""
	}
	for _, g := range c.Produces {
		if !matchedAny(g, d.Products) {
			return fmt.Sprintf("no product matches its produces glob %q", g)
		}
	}
	return ""
}

func matchedAny(glob string, ps []Product) bool {
	for _, p := range ps {
		if runtime.Produced([]string{glob}, p.Path) {
			return true
		}
	}
	return false
}

// ValidProductPath reports whether p can name a product: a slash-separated
// relative path of valid UTF-8 without empty, "." or ".." elements,
// backslashes or control characters, at most 4096 bytes.
func ValidProductPath(p string) bool {
	if p == "" || len(p) > maxProductPath || strings.ContainsRune(p, '\\') || !utf8.ValidString(p) {
		return false
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	for _, s := range strings.Split(p, "/") {
		if s == "" || s == "." || s == ".." {
			return false
		}
	}
	return true
}

// Referenced is every blob digest the run needs kept in its store: the
// blobs of the log (r.Blobs, what a bundle carries) and its checks'
// products (ADR 0039), which stay in the store but not in the bundle.
// Sorted, without duplicates.
func (r *Report) Referenced() []string {
	out := slices.Clone(r.Blobs)
	for _, c := range r.Checks {
		for _, p := range c.Products {
			out = append(out, p.Digest)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
