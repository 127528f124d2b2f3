package replay

import (
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// TestProductsInconsistency: a check.finished whose products the harness
// cannot have recorded is refused, each for its reason.
func TestProductsInconsistency(t *testing.T) {
	d := func(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }
	chk := contract.Check{ID: "build", Produces: []string{"dist/*", "pkg/app.tgz"}}
	ok := []Product{{Path: "dist/a", Digest: d('a'), Size: 3}, {Path: "dist/b", Digest: d('b')}, {Path: "pkg/app.tgz", Digest: d('c'), Size: 9}}
	passed := func(ps ...Product) CheckFinishedData {
		return CheckFinishedData{Check: "build", Outcome: runtime.Passed, Products: ps}
	}
	if why := productsInconsistency(chk, passed(ok...)); why != "" {
		t.Fatalf("consistent products refused: %s", why)
	}
	if why := productsInconsistency(contract.Check{ID: "unit"}, CheckFinishedData{Check: "unit", Outcome: runtime.Passed}); why != "" {
		t.Fatalf("a check without produces: %s", why)
	}
	if why := productsInconsistency(chk, CheckFinishedData{Check: "build", Outcome: runtime.Failed}); why != "" {
		t.Fatalf("a failed check without products: %s", why)
	}
	big := make([]Product, MaxProducts+1)
	for i := range big {
		big[i] = Product{Path: "dist/" + strings.Repeat("x", i+1), Digest: d('a')}
	}
	for _, c := range []struct {
		name string
		data CheckFinishedData
		want string
	}{
		{"products of a failed check", CheckFinishedData{Check: "build", Outcome: runtime.Failed, Products: ok}, "products recorded for a check that failed"},
		{"a glob without a product", passed(ok[0]), `no product matches its produces glob "pkg/app.tgz"`},
		{"no products at all", passed(), `no product matches its produces glob "dist/*"`},
		{"a path no glob matches", passed(append([]Product{{Path: "etc/passwd", Digest: d('e')}}, ok...)...), "etc/passwd is matched by none"},
		{"a nested path * does not match", passed(append(ok[:1:1], Product{Path: "dist/x/y", Digest: d('e')}, ok[1], ok[2])...), "dist/x/y is matched by none"},
		{"escaping path", passed(append([]Product{{Path: "dist/../x", Digest: d('e')}}, ok...)...), "not a clean relative path"},
		{"absolute path", passed(append([]Product{{Path: "/dist/a", Digest: d('e')}}, ok...)...), "not a clean relative path"},
		{"control character", passed(Product{Path: "dist/a\nb", Digest: d('e')}, ok[2]), "not a clean relative path"},
		{"invalid UTF-8", passed(Product{Path: "dist/\xff", Digest: d('e')}, ok[2]), "not a clean relative path"},
		{"repeated", passed(ok[0], ok[0], ok[2]), "out of order or repeated"},
		{"out of order", passed(ok[1], ok[0], ok[2]), "out of order or repeated"},
		{"bad digest", passed(Product{Path: "dist/a", Digest: "sha1:abc"}, ok[2]), "is not sha256:<64 hex>"},
		{"negative size", passed(Product{Path: "dist/a", Digest: d('a'), Size: -1}, ok[2]), "size -1"},
		{"too large in all", passed(Product{Path: "dist/a", Digest: d('a'), Size: MaxProductBytes}, Product{Path: "pkg/app.tgz", Digest: d('c'), Size: 1}), "size 1 is outside"},
		{"too many", passed(big...), "more than 256"},
	} {
		if why := productsInconsistency(chk, c.data); !strings.Contains(why, c.want) {
			t.Errorf("%s: %q, want %q", c.name, why, c.want)
		}
	}
}
