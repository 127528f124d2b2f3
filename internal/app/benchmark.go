package app

import (
	"errors"
	"fmt"
	"os"

	"github.com/proofgate/proofgate/internal/bench"
	"github.com/proofgate/proofgate/kernel/exit"
)

// Default benchmark manifests, relative to the working directory.
const (
	manifestYAML = ".proofgate/benchmark.yaml"
	manifestJSON = ".proofgate/benchmark.json"
)

// ManifestPath is the benchmark manifest: flag when given, else the
// default manifest that exists, else "" (a usage error when required).
// Both defaults existing is ambiguous, a usage error.
func ManifestPath(flag string, required bool) (string, error) {
	if flag != "" {
		return flag, nil
	}
	_, ey := os.Stat(manifestYAML)
	_, ej := os.Stat(manifestJSON)
	switch {
	case ey == nil && ej == nil:
		return "", exit.Wrap(exit.Usage, fmt.Errorf("both %s and %s exist; pass --manifest", manifestYAML, manifestJSON))
	case ey == nil:
		return manifestYAML, nil
	case ej == nil:
		return manifestJSON, nil
	case required:
		return "", exit.Wrap(exit.Usage, fmt.Errorf("no benchmark manifest (%s or %s; or pass --manifest)", manifestYAML, manifestJSON))
	}
	return "", nil
}

// BenchmarkReport reconciles every run of the state directory
// (bench.History) and, with a manifest ("" for none), compares each task
// with its baseline. A history that cannot be read is the environment's;
// a manifest that does not load a usage error. Runs that do not reconcile
// are in the report's Refused.
func BenchmarkReport(state, manifest string) (*bench.Report, error) {
	rep, err := bench.History(state)
	if err != nil {
		return nil, exit.Wrap(exit.Environment, err)
	}
	if manifest != "" {
		m, digest, err := bench.Load(manifest)
		if err != nil {
			return nil, exit.Wrap(exit.Usage, err)
		}
		rep.Manifest, rep.ManifestDigest = manifest, digest
		bench.Compare(rep, m)
	}
	return rep, nil
}

// RecordBaseline records a task's baseline in the manifest, once
// (bench.RecordBaseline). An unreadable or invalid manifest is a usage
// error, a failed write the environment's, a refused record (an unknown
// task, a second baseline) refused.
func RecordBaseline(manifest string, o bench.BaselineOptions) (*bench.Baseline, error) {
	b, err := bench.RecordBaseline(manifest, o)
	if err != nil {
		return nil, benchErr(err)
	}
	return b, nil
}

// benchErr gives a manifest refusal its exit class.
func benchErr(err error) error {
	var be *bench.Error
	if !errors.As(err, &be) {
		return exit.Wrap(exit.Environment, err)
	}
	switch be.Reason {
	case bench.ReasonManifestInvalid, bench.ReasonManifestMissing:
		return exit.Wrap(exit.Usage, err)
	case bench.ReasonManifestIO:
		return exit.Wrap(exit.Environment, err)
	}
	return exit.Wrap(exit.Refused, err)
}
