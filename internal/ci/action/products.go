package action

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/run"
)

const (
	// ProductsArtifactPrefix starts the name of the artifact holding a
	// COMPLETE run's products (ADR 0039), "proofgate-products-<head sha>";
	// with input artifact-name set, that name plus "-products".
	ProductsArtifactPrefix = "proofgate-products-"
	// MaxProductsArtifactBytes bounds the products the action uploads: the
	// artifact client holds an artifact in memory. Past it the products
	// stay in products-dir, with a warning, for an upload step of the
	// workflow's own.
	MaxProductsArtifactBytes = 1 << 30
	// productsDir is where, under the state directory, a run's products
	// are written: a directory with a .gitignore of its own, so they leave
	// the work tree clean for a later run.
	productsDir = "products"
)

// writeProducts writes the exported run's products (x.Products) to
// <state>/products/<run id>/<path> and sets the outputs products (JSON) and
// products-dir.
func (j *job) writeProducts(x *bundle.ExportResult) error {
	if len(x.Products) == 0 {
		return nil
	}
	top := filepath.Join(j.stateDir, productsDir)
	if err := app.IgnoredDir(top, "written by the ProofGate action: products are not source"); err != nil {
		return environment("products directory: %w", err)
	}
	dir := filepath.Join(top, j.res.RunID)
	if err := run.WriteProducts(j.r.Dir, dir, bundle.ProductRecords(x.Products), false); err != nil {
		return environment("write the products: %w", err)
	}
	list, err := json.Marshal(x.Products)
	if err != nil {
		return err
	}
	j.res.Products, j.res.ProductsDir = x.Products, j.rel(dir)
	j.f.output("products", string(list))
	j.f.output("products-dir", j.res.ProductsDir)
	for _, p := range x.Products {
		j.f.logf("proofgate: product %s (check %s, %d bytes, sha256 %s)", p.Path, p.Check, p.Size, p.SHA256)
	}
	return nil
}

// uploadProducts uploads the products as the artifact name+"-products"
// (or ProductsArtifactPrefix + head), their paths as the entry names, and
// sets the output products-artifact. Past MaxProductsArtifactBytes it warns
// and uploads nothing.
func (j *job) uploadProducts(ctx context.Context, tok, results, bundleArtifact string) error {
	if len(j.res.Products) == 0 {
		return nil
	}
	name := bundleArtifact + "-products"
	if j.in.artifactName == "" {
		name = ProductsArtifactPrefix + bundleArtifact[len(ArtifactPrefix):]
	}
	var total int64
	for _, p := range j.res.Products {
		total += p.Size
	}
	if total > MaxProductsArtifactBytes {
		j.f.annotate("warning", "ProofGate products not uploaded", fmt.Sprintf("the products hold %d bytes, more than the %d the action uploads: upload %s in a later step (they are attested by digest either way)", total, int64(MaxProductsArtifactBytes), j.res.ProductsDir))
		return nil
	}
	files := map[string][]byte{}
	for _, p := range j.res.Products {
		b, err := os.ReadFile(filepath.Join(j.ws, filepath.FromSlash(j.res.ProductsDir), filepath.FromSlash(p.Path)))
		if err != nil {
			return environment("read product %s: %w", p.Path, err)
		}
		files[p.Path] = b
	}
	id, err := uploadArtifact(ctx, j.f, tok, results, name, files)
	if err != nil {
		return environment("upload artifact %s: %w", name, err)
	}
	j.res.ProductsArtifact = name
	j.f.output("products-artifact", name)
	j.f.output("products-artifact-id", strconv.FormatInt(id, 10))
	return nil
}
